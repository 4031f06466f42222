# Fuzz targets (included by the top-level Makefile).
#   make fuzz                 builds every libFuzzer target with clang and runs each for
#                             FUZZ_SECONDS (default 20); fails on any crash or broken property
#   make fuzz FUZZ_TARGETS=ipc FUZZ_SECONDS=3600   one target, longer (see docs/fuzzing.md)
#   make fuzz-build           builds them only (build/fuzz/fuzz_<name>)
#   make fuzz-replay          builds the same harnesses with $(CC) and a plain main, and replays
#                             fuzz/corpus/<name>/ and fuzz/regressions/<name>/ (no clang needed;
#                             with SAN=1 under ASan+UBSan)
# The libFuzzer build always lives in build/fuzz: it is its own configuration (clang, sanitizer
# coverage), shared by every BUILD.

FUZZ_TARGETS ?= ipc advert ipc_environ proc_stat proc_status proc_environ proc_cmdline socket_name mountinfo maps \
                k8s_status k8s_pod k8s_config clientdata elfinfo rid ldsearch tarstream render \
                procindex assembly envload cgroup_id k8s_watch k8s_namespace agent_profiles otel_status \
                direvents
FUZZ_SECONDS ?= 20
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
# -O1 as libFuzzer's docs advise: fast enough, and inlining does not hide frames in reports.
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=gnu11 -O1 -g -D_GNU_SOURCE -DCLRATTACH_VERSION='"$(VERSION)"' $(FUZZ_SAN)
# The library is written against gcc's warnings; clang adds some of its own (-Wformat-nonliteral
# on err.c's vsnprintf wrapper), so lib/ gets them as warnings and only the harnesses -Werror.
FUZZ_LIB_WARN := $(filter-out -Werror,$(WARN))

# Everything under lib/ plus the parsers of profiler/ (the probe's client data, the env loader's
# settings file): the archive lets each target pull in only the objects it uses. Instrumented
# with fuzzer-no-link: coverage without a second main.
FUZZ_PROF_OBJS := profiler/clientdata.o profiler/envload_conf.o
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_DIR)/%.o) $(FUZZ_PROF_OBJS:%=$(FUZZ_DIR)/%)
FUZZ_BINS     := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
REPLAY_DIR    := $(BUILD)/fuzz-replay
REPLAY_BINS   := $(FUZZ_TARGETS:%=$(REPLAY_DIR)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-replay

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -Ilib $(FUZZ_CFLAGS) $(FUZZ_LIB_WARN) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/libfuzzlib.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_DIR)/libfuzzlib.a
	$(FUZZ_CC) -Ilib $(FUZZ_CFLAGS) $(WARN) -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/libfuzzlib.a \
	    $(LDLIBS_TOOL)

fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	FUZZ_DIR=$(FUZZ_DIR) FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)

# The replay build: the harness, fuzz/replay_main.c as main, the normal library archive.
$(REPLAY_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/replay_main.c fuzz/fuzz.h $(BUILD)/libclrattach.a \
                      $(FUZZ_PROF_OBJS:%=$(BUILD)/%)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< fuzz/replay_main.c $(BUILD)/libclrattach.a \
	    $(FUZZ_PROF_OBJS:%=$(BUILD)/%) $(LDLIBS_TOOL)

# Kept: make would otherwise delete them as intermediates and relink every replay binary.
.SECONDARY: $(FUZZ_PROF_OBJS:%=$(BUILD)/%)

fuzz-replay: $(REPLAY_BINS)
	fuzz/replay.sh $(REPLAY_DIR) $(FUZZ_TARGETS)

-include $(shell find $(FUZZ_DIR) -name '*.d' 2>/dev/null)
