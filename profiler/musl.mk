# The sample profiler linked against musl, for Alpine and other musl targets (RID
# linux-musl-<arch>). A glibc-linked profiler does not load there, and the runtime's only answer
# is 0x8007007E, so both builds ship; docs/bundles.md says where each goes.
#
# Include from the top-level Makefile after PROF_SRCS and PROF_CFLAGS are set:
#     include profiler/musl.mk
# then `make profiler-musl` builds $(BUILD)/musl/libclrprobe.so and the env loader
# $(BUILD)/musl/libclrenvload.so, and `make profiler-musl-check` loads both builds of the probe
# under both loaders (profiler/musl-check.sh).
#
# musl-gcc drives the host gcc with musl's headers and start files; the result's DT_NEEDED is
# "libc.so", which musl's dynamic linker maps to itself on any musl system (Alpine names its
# libc libc.musl-<arch>.so.1). _FORTIFY_SOURCE is dropped: musl's headers have no fortified
# variants, and with glibc's gone it only adds a warning on some toolchains.

MUSL_CC         ?= musl-gcc
# For aarch64 (MUSL_CC=aarch64-linux-musl-gcc, from musl-dev:arm64): gcc's default outline
# atomics call libgcc helpers whose initialiser needs glibc's __getauxval, which musl lacks
# (-Wl,-z,defs would refuse the link).
MUSL_PROF_CFLAGS := $(filter-out -D_FORTIFY_SOURCE=%,$(PROF_CFLAGS)) \
    $(if $(filter aarch64-%,$(shell $(MUSL_CC) -dumpmachine 2>/dev/null)),-mno-outline-atomics)

# $(call only_dllgetclassobject,SO): exactly one exported function, or the version script did
# not apply; the file is removed so that a rerun does not take it as built.
only_dllgetclassobject = @test "$$(nm -D --defined-only $(1) | awk '{print $$3}')" = \
    DllGetClassObject || { echo "$(1): unexpected dynamic exports" >&2; \
    nm -D --defined-only $(1) >&2; rm -f $(1); exit 1; }

.PHONY: profiler-musl
profiler-musl: $(BUILD)/musl/libclrprobe.so $(BUILD)/musl/libclrenvload.so

$(BUILD)/musl/libclrprobe.so: $(PROF_SRCS) $(wildcard profiler/*.h) profiler/exports.map \
                              profiler/musl.mk
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_PROF_CFLAGS) $(PROF_LDFLAGS) -fPIC -shared -fvisibility=hidden \
	    -Wl,--version-script=profiler/exports.map -Wl,-z,defs -Wl,-z,now -Wl,-z,relro \
	    -o $@ $(PROF_SRCS) -lpthread
	$(call only_dllgetclassobject,$@)

# The env loader (docs/profiler.md) for the same targets: musl's libc holds dlopen and setenv.
$(BUILD)/musl/libclrenvload.so: $(ENVLOAD_SRCS) profiler/envload_conf.h profiler/corprof.h \
                                profiler/exports.map profiler/musl.mk
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_PROF_CFLAGS) $(PROF_LDFLAGS) -fPIC -shared -fvisibility=hidden \
	    -Wl,--version-script=profiler/exports.map -Wl,-z,defs -Wl,-z,now -Wl,-z,relro \
	    -o $@ $(ENVLOAD_SRCS) -lpthread
	$(call only_dllgetclassobject,$@)

# Each build loads under its own libc's dynamic linker and is refused by the other one.
.PHONY: profiler-musl-check
profiler-musl-check: $(BUILD)/libclrprobe.so $(BUILD)/musl/libclrprobe.so
	profiler/musl-check.sh $^

# The env loader under each C library's dynamic linker, loading the probe built for the same
# one through its settings file (profiler/envload-check.sh; tests/e2e/test_envload.sh runs it).
.PHONY: envload-check
envload-check: $(BUILD)/libclrenvload.so $(BUILD)/libclrprobe.so $(BUILD)/musl/libclrenvload.so \
               $(BUILD)/musl/libclrprobe.so
	profiler/envload-check.sh $(BUILD)/libclrenvload.so $(BUILD)/libclrprobe.so glibc
	HOST_CC=$(MUSL_CC) profiler/envload-check.sh $(BUILD)/musl/libclrenvload.so \
	    $(BUILD)/musl/libclrprobe.so musl
