# clrattach — plain Makefile. `make help` lists the targets.
CC      ?= gcc
BUILD   ?= build
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
# The commit `clrattach version` names ("-dirty" with uncommitted changes): from git, or in a
# `git archive` copy from the COMMIT file it fills in (scripts/commit.sh); a source copy with
# neither (the image's builder) is given it: make COMMIT=...
COMMIT  ?= $(shell scripts/commit.sh)
# The components a static build links (scripts/build-static.sh writes the file it names); "-"
# for a dynamic build, whose `clrattach version` names the system libraries it runs with.
COMPONENTS ?= -

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wvla
HARDEN  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) $(HARDEN) -D_GNU_SOURCE -DCLRATTACH_VERSION='"$(VERSION)"'
CPPFLAGS += -Ilib
LDLIBS_TOOL := -lcurl -ljansson

# The profiler is loaded into a .NET process that has no sanitizer runtime: it never gets the
# sanitizer flags (SAN_FLAGS), only the base ones.
PROF_CFLAGS := $(CFLAGS)
# Its debug information stays out of the .so: every attach copies the file into the target's
# view (a tmpfs there is the app's memory) and hashes and verifies each byte, and DWARF is 60% of
# it (79 KB against 31 KB). The symbol table stays, for backtraces of a crash in the app.
PROF_LDFLAGS := -Wl,--strip-debug
ifeq ($(SAN),1)
BUILD   := build/san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CFLAGS  += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif

LIB_SRCS  := $(sort $(wildcard lib/*/*.c))
# The build-time half of the seccomp filters (libseccomp, below): the generator and the unit
# tests link it, clrattach never calls it, so neither it nor libseccomp is in clrattach.
LIB_BUILD_TIME := $(BUILD)/lib/sandbox/sandbox_compile.o
LIB_OBJS  := $(filter-out $(LIB_BUILD_TIME),$(LIB_SRCS:%.c=$(BUILD)/%.o))

# The seccomp programs are compiled from the rule table at build time (lib/sandbox/sandbox_bpf.h): by a
# generator built with the HOST compiler and libseccomp, for the architecture clrattach is built
# for (x86_64 or aarch64; a cross build sets SECCOMP_ARCH). The output is a C file compiled like
# the rest of lib/.
HOSTCC       ?= gcc
SECCOMP_ARCH ?= $(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))
SANDBOX_GEN  := $(BUILD)/gen/sandbox_gen
SANDBOX_GEN_SRCS := tools/sandbox_gen.c lib/sandbox/sandbox_compile.c lib/sandbox/sandbox_delta.c \
                    lib/sandbox/sandbox_policy.c lib/base/err.c lib/base/util.c
SANDBOX_BPF  := $(BUILD)/gen/sandbox_bpf_$(SECCOMP_ARCH)
LIB_OBJS     += $(SANDBOX_BPF).o
# The env loaders built into clrattach (below): glibc's built with GLIBC_CC, musl's with MUSL_CC
# (profiler/musl.mk), both for clrattach's CPU.
GLIBC_CC     ?= $(CC)
ENVLOAD_BLOB := $(BUILD)/gen/envload_blob
LIB_OBJS     += $(ENVLOAD_BLOB).o
CMD_SRCS  := $(sort $(wildcard cmd/clrattach/*.c))
CMD_OBJS  := $(CMD_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
# The env loader (profiler/envload.c) shares the folder, not the library.
ENVLOAD_SRCS := profiler/envload.c profiler/envload_conf.c
PROF_SRCS := $(filter-out $(ENVLOAD_SRCS),$(sort $(wildcard profiler/*.c)))

.PHONY: all test unit e2e target clean lint format-check deps help demo static test-containers
all: $(BUILD)/clrattach $(BUILD)/libclrprobe.so $(BUILD)/libclrenvload.so

help:
	@echo "make [all]        build $(BUILD)/clrattach, $(BUILD)/libclrprobe.so and $(BUILD)/libclrenvload.so"
	@echo "make deps         install the Debian packages the build and tests need"
	@echo "make test         unit tests, then end-to-end tests against a real .NET runtime"
	@echo "make SAN=1 test   the same under ASan+UBSan"
	@echo "make test-containers  the image, deploy/ and the seccomp profile under Docker (runc, crun)"
	@echo "make test-apiserver  Events against a real kube-apiserver (built once, ~12 min)"
	@echo "make krew         the kubectl plugin's krew archive and manifest in build/krew"
	@echo "make test-cluster deploy/ in a real single-node Kubernetes 1.20 (kubelet on dockershim, then on containerd)"
	@echo "make arm64        cross-build clrattach, the profilers and the unit tests for arm64"
	@echo "make static ARCH=arm64  the static clrattach for arm64 (build/static-arm64)"
	@echo "make test-arm64   arm64 builds under qemu-user against an arm64 .NET runtime"
	@echo "make image        the linux/amd64 + linux/arm64 image index (build/image/*.oci.tar)"
	@echo "make otel-agent   the OpenTelemetry agent (a startup hook) in $(BUILD)/otel-agent"
	@echo "make demo         attach the sample profiler to a sample app in its own namespaces"
	@echo "make lint         the layer rules of lib/, banned calls and static checks"
	@echo "make test-lint    the layer rules hold and a planted breach fails them"
	@echo "make fuzz         run every libFuzzer target for FUZZ_SECONDS (docs/fuzzing.md)"
	@echo "make fuzz-replay  replay the fuzz corpora and regressions without clang"
	@echo "make bench        attach latency, memory, size and ps scaling (docs/benchmarks.md)"

deps:
	scripts/install-deps.sh

include tests/k8s/k8s.mk
include static.mk
include fuzz/fuzz.mk
include bench/bench.mk
include tests/vendorprof/vendorprof.mk
include profiler/otel-agent/otel-agent.mk

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# What `clrattach version` prints (scripts/build_info.py), rewritten only when it changes.
BUILD_INFO := $(BUILD)/gen/build_info.h
# The agent's packages (make otel-agent), listed when it was built: what the image ships.
OTEL_AGENT_PACKAGES ?= $(wildcard build/otel-agent/packages.tsv)
$(BUILD_INFO): FORCE
	@mkdir -p $(dir $@)
	@OTEL_AGENT_PACKAGES=$(OTEL_AGENT_PACKAGES) \
	    python3 scripts/build_info.py header $(COMPONENTS) $(VERSION) $(COMMIT) >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/cmd/clrattach/cmd_version.o: cmd/clrattach/cmd_version.c $(BUILD_INFO)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(BUILD)/gen $(CFLAGS) -MMD -MP -c -o $@ $<

$(SANDBOX_GEN): $(SANDBOX_GEN_SRCS) $(wildcard lib/*/*.h)
	@mkdir -p $(dir $@)
	$(HOSTCC) -std=gnu11 -O2 $(WARN) -D_GNU_SOURCE -Ilib -o $@ $(SANDBOX_GEN_SRCS) \
	    -lseccomp -ljansson

$(SANDBOX_BPF).c: $(SANDBOX_GEN)
	$(SANDBOX_GEN) $(SECCOMP_ARCH) >$@.tmp && mv $@.tmp $@

$(SANDBOX_BPF).o: $(SANDBOX_BPF).c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libclrattach.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/clrattach: $(CMD_OBJS) $(BUILD)/libclrattach.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_TOOL)

# The sample profiler is its own product: hidden visibility, only its entry points exported.
$(BUILD)/libclrprobe.so: $(PROF_SRCS) $(wildcard profiler/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PROF_CFLAGS) $(PROF_LDFLAGS) -fPIC -shared -fvisibility=hidden -Wl,-z,defs -Wl,-z,now \
	    -Wl,-z,relro -o $@ $(PROF_SRCS) -lpthread

# The env loader, a product of its own too (docs/profiler.md): a setenv() of its settings file's
# variables, then the real profiler. Its one export is checked as the musl builds' are. Built
# with the glibc compiler for clrattach's CPU (GLIBC_CC: a static build's CC is musl's).
$(BUILD)/libclrenvload.so: $(ENVLOAD_SRCS) profiler/envload_conf.h profiler/corprof.h \
                           profiler/exports.map
	@mkdir -p $(dir $@)
	$(GLIBC_CC) $(PROF_CFLAGS) $(PROF_LDFLAGS) -fPIC -shared -fvisibility=hidden \
	    -Wl,--version-script=profiler/exports.map -Wl,-z,defs -Wl,-z,now -Wl,-z,relro \
	    -o $@ $(ENVLOAD_SRCS) -ldl -lpthread
	$(call only_dllgetclassobject,$@)

# Both env loaders travel inside clrattach (lib/profset/envwrap.c delivers the one for the
# target's libc): a static binary in an empty image, or copied into an ephemeral container, has
# nothing beside it. The .S names them by absolute path; CC assembles it for clrattach's CPU.
$(ENVLOAD_BLOB).S:
	@mkdir -p $(dir $@)
	@printf '%s\n' '/* generated by the Makefile: the env loaders embedded */' \
	    '.section .rodata' '.balign 16' '.globl clrattach_envload_glibc' \
	    'clrattach_envload_glibc:' '.incbin "$(abspath $(BUILD)/libclrenvload.so)"' \
	    '.globl clrattach_envload_glibc_end' 'clrattach_envload_glibc_end:' '.balign 16' \
	    '.globl clrattach_envload_musl' 'clrattach_envload_musl:' \
	    '.incbin "$(abspath $(BUILD)/musl/libclrenvload.so)"' \
	    '.globl clrattach_envload_musl_end' 'clrattach_envload_musl_end:' \
	    '.section .note.GNU-stack,"",%progbits' >$@

$(ENVLOAD_BLOB).o: $(ENVLOAD_BLOB).S $(BUILD)/libclrenvload.so $(BUILD)/musl/libclrenvload.so
	$(CC) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libclrattach.a $(LIB_BUILD_TIME)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_BUILD_TIME) \
	    $(BUILD)/libclrattach.a -lcmocka $(LDLIBS_TOOL) -lseccomp

# Tests of profiler/ include its sources (profiler/ is not in libclrattach.a).
$(BUILD)/tests/test_envload: profiler/envload_conf.c profiler/envload_conf.h

# The e2e harness that hides openat2 (ENOSYS) from what it runs: tests/e2e/test_no_openat2.sh.
NO_OPENAT2 := $(BUILD)/tests/no_openat2
$(NO_OPENAT2): tests/tools/no_openat2.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lseccomp

# The C# target app used by the end-to-end tests (no NuGet package needed), and the startup
# hooks the startup-hook tests load into it (one with a StartupHook type, one without).
# The two more are a hook with an assembly of its own (tests/refhook, tests/hooklib) and one
# shaped like OpenTelemetry's process-start-only hook (tests/otelhook).
OTELHOOK := $(BUILD)/otelhook/OpenTelemetry.AutoInstrumentation.StartupHook.dll
target: $(BUILD)/target/ClrTarget.dll $(BUILD)/hook/StartupHookTest.dll $(BUILD)/nohook/NoStartupHook.dll \
	$(BUILD)/refhook/RefHook.dll $(OTELHOOK)
$(BUILD)/target/ClrTarget.dll: $(wildcard tests/target/*.cs tests/target/*.csproj)
	dotnet build tests/target/ClrTarget.csproj -c Release -o $(BUILD)/target --nologo -v q
$(BUILD)/hook/StartupHookTest.dll: $(wildcard tests/hook/*.cs tests/hook/*.csproj)
	dotnet build tests/hook/StartupHookTest.csproj -c Release -o $(BUILD)/hook --nologo -v q
$(BUILD)/nohook/NoStartupHook.dll: $(wildcard tests/nohook/*.cs tests/nohook/*.csproj)
	dotnet build tests/nohook/NoStartupHook.csproj -c Release -o $(BUILD)/nohook --nologo -v q
$(BUILD)/refhook/RefHook.dll: $(wildcard tests/refhook/*.cs tests/refhook/*.csproj tests/hooklib/*.cs tests/hooklib/*.csproj)
	dotnet build tests/refhook/RefHook.csproj -c Release -o $(BUILD)/refhook --nologo -v q
$(OTELHOOK): $(wildcard tests/otelhook/*.cs tests/otelhook/*.csproj)
	dotnet build tests/otelhook/OpenTelemetry.AutoInstrumentation.StartupHook.csproj -c Release \
	    -o $(BUILD)/otelhook --nologo -v q

# linux/arm64, cross-compiled here (docs/deploy.md): $(ARM64_BUILD) holds the dynamic clrattach,
# the glibc and musl sample profilers and env loaders, and the unit tests, built by this Makefile
# run again with the aarch64 compilers; `make static ARCH=arm64` gives build/static-arm64/clrattach.
# `make test-arm64` runs them under qemu-user against an arm64 CoreCLR (tests/arm64/run.sh).
ARM64_BUILD := $(BUILD)/arm64
ARM64_MAKE  := $(MAKE) --no-print-directory BUILD=$(ARM64_BUILD) SAN= SECCOMP_ARCH=aarch64 \
               CC=aarch64-linux-gnu-gcc MUSL_CC=aarch64-linux-musl-gcc
ARM64_UNIT_BINS := $(UNIT_BINS:$(BUILD)/%=$(ARM64_BUILD)/%)
.PHONY: arm64 arm64-unit test-arm64 FORCE
ARM64_PROFILERS := $(ARM64_BUILD)/libclrprobe.so $(ARM64_BUILD)/musl/libclrprobe.so \
                   $(ARM64_BUILD)/libclrenvload.so $(ARM64_BUILD)/musl/libclrenvload.so
arm64: $(ARM64_BUILD)/clrattach $(ARM64_PROFILERS)
# The sub-make knows the sources each of these depends on. These share no intermediate file,
# so a parallel make may build them side by side; the unit tests share libclrattach.a with
# clrattach, hence one sub-make for all of them, after it.
$(ARM64_BUILD)/clrattach $(ARM64_PROFILERS): FORCE
	+$(ARM64_MAKE) $@
FORCE:
arm64-unit: $(ARM64_BUILD)/clrattach
	+$(ARM64_MAKE) $(ARM64_UNIT_BINS)

# The test app published self-contained for linux-arm64 (the SDK fetches the arm64 runtime pack
# from NuGet), from a copy of its sources: the x64 build's obj/ is left alone.
ARM64_TARGET := $(ARM64_BUILD)/target/ClrTarget
$(ARM64_TARGET): $(wildcard tests/target/*.cs tests/target/*.csproj)
	rm -rf $(ARM64_BUILD)/target-src && mkdir -p $(ARM64_BUILD)/target-src
	cp $^ $(ARM64_BUILD)/target-src/
	dotnet publish $(ARM64_BUILD)/target-src/ClrTarget.csproj -c Release -r linux-arm64 \
	    --self-contained -p:UseAppHost=true -o $(ARM64_BUILD)/target --nologo -v q

# Real runtimes older than .NET 10 (clrattach otel refuses them: tests/e2e/test_otel.sh): the
# test app published self-contained for .NET 8 and .NET 9 from a copy of its sources with the
# framework changed (the SDK fetches those runtime packs from NuGet; x64 build's obj/ untouched).
OLDRT_TARGETS := $(BUILD)/oldrt/net8/ClrTarget $(BUILD)/oldrt/net9/ClrTarget
$(BUILD)/oldrt/net%/ClrTarget: $(wildcard tests/target/*.cs tests/target/*.csproj)
	rm -rf $(BUILD)/oldrt/src$* && mkdir -p $(BUILD)/oldrt/src$*
	cp $^ $(BUILD)/oldrt/src$*/
	sed -i 's|<TargetFramework>net10.0</TargetFramework>|<TargetFramework>net$*.0</TargetFramework>|' \
	    $(BUILD)/oldrt/src$*/ClrTarget.csproj
	grep -q '<TargetFramework>net$*.0</TargetFramework>' $(BUILD)/oldrt/src$*/ClrTarget.csproj
	dotnet publish $(BUILD)/oldrt/src$*/ClrTarget.csproj -c Release -r linux-x64 \
	    --self-contained -p:UseAppHost=true -o $(BUILD)/oldrt/net$* --nologo -v q

# Which syscalls the emulator lacks, asked from inside it (tests/arm64/run.sh).
$(ARM64_BUILD)/tests/syscall_probe: tests/arm64/syscall_probe.c
	@mkdir -p $(dir $@)
	aarch64-linux-gnu-gcc -std=gnu11 -O2 $(WARN) -D_GNU_SOURCE -o $@ $<

ARM64_TEST_DEPS := arm64 arm64-unit $(ARM64_TARGET) $(ARM64_BUILD)/tests/syscall_probe
test-arm64: $(ARM64_TEST_DEPS) all target static-arm64
	BUILD=$(BUILD) timeout -k 30 1200 tests/arm64/run.sh $(ARM64_UNIT_BINS)

# The image for linux/amd64 and linux/arm64 from the one Dockerfile, as an OCI image index in
# build/image/clrattach-$(VERSION).oci.tar (buildah; docs/deploy.md), and its check.
.PHONY: image test-image
image:
	scripts/build-image.sh
test-image: image
	tests/arm64/test_image.sh

unit: $(UNIT_BINS) all
	tests/run-unit.sh $(UNIT_BINS)

e2e: all target profiler-musl vendorprof otel-agent otel-apps $(OLDRT_TARGETS) $(NO_OPENAT2)
	BUILD=$(BUILD) tests/e2e/run.sh

# otel-agent before static: the static build's `clrattach version` and SBOM list the agent's
# packages (build/otel-agent/packages.tsv), read when it is built.
test: $(UNIT_BINS) all target $(K8S_DRIVER) otel-agent otel-apps $(OLDRT_TARGETS) static \
      profiler-musl vendorprof \
      $(REPLAY_BINS) $(FUZZ_BINS) $(NO_OPENAT2) $(ARM64_TEST_DEPS) static-arm64 image
	BUILD=$(BUILD) K8S_DRIVER=$(K8S_DRIVER) REPLAY_DIR=$(REPLAY_DIR) FUZZ_DIR=$(FUZZ_DIR) \
	    FUZZ_TARGETS="$(FUZZ_TARGETS)" BENCH_SMOKE=1 ARM64_UNIT_BINS="$(ARM64_UNIT_BINS)" \
	    tests/run-all.sh $(UNIT_BINS)

# The image, the deploy/ manifests and the exported seccomp profile under a real engine
# (docs/deploy.md): its own dockerd, images made locally, runc and crun.
test-containers: all target vendorprof
	BUILD=$(BUILD) tests/containers/run.sh

# The kubectl plugin as a krew release: build/krew/kubectl-clrattach-v$(VERSION).tar.gz and its
# manifest build/krew/clrattach.yaml (deploy/krew/clrattach.yaml.in, the sha256 filled in);
# KREW_BASE_URL and KREW_HOMEPAGE say where it is published. tests/deploy/check_krew.py checks it.
.PHONY: krew
krew:
	deploy/krew/build.sh $(BUILD)/krew

# Events against a real kube-apiserver + etcd (built once from Debian's source into
# build/apiserver; a test dependency, never shipped): tests/apiserver/run.sh.
.PHONY: test-apiserver
test-apiserver: all target static
	BUILD=$(BUILD) tests/apiserver/run.sh

# deploy/ as shipped in a real single-node Kubernetes 1.20 (kubelet with its dockershim, a
# private dockerd, controller-manager, scheduler; built once from Debian's source with the
# apiserver's Go cache into build/cluster), then on a second node whose kubelet talks CRI to a
# private containerd: tests/cluster/run.sh.
.PHONY: test-cluster
test-cluster: all target otel-agent otel-apps
	BUILD=$(BUILD) tests/cluster/run.sh

demo: all target
	BUILD=$(BUILD) scripts/demo.sh

lint:
	scripts/lint.sh

# The layer rules hold, and a planted breach of each kind fails them (tests/lint/run.sh).
.PHONY: test-lint
test-lint:
	tests/lint/run.sh

format-check:
	clang-format --dry-run --Werror $(LIB_SRCS) $(CMD_SRCS) $(PROF_SRCS) $(ENVLOAD_SRCS) \
	    profiler/envload_conf.h lib/*/*.h \
	    $(wildcard cmd/clrattach/*.h tools/*.c)

clean:
	rm -rf build

# build/containers holds the container suite's engine state and image roots (etc/*.d dirs),
# build/cluster the cluster suite's engine and kubelet state, build/image buildah's storage
# (make image): none has a make dependency file.
-include $(shell find $(BUILD) \( -path '$(BUILD)/containers' -o -path '$(BUILD)/image' \
    -o -path '$(BUILD)/cluster' \) -prune \
    -o -type f -name '*.d' -print 2>/dev/null)
