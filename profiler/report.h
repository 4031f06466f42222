/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRPROBE_REPORT_H
#define CLRPROBE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One snapshot of what the probe knows, turned into the JSON report by report_format(). */
struct report_counters {
    uint64_t gc_started, gc_finished, exceptions_thrown, jit_compilations;
    uint64_t threads_created, threads_destroyed, class_loads, module_loads, assembly_loads;
};

struct report {
    int pid;
    int64_t attach_unix_ms, updated_unix_ms;
    int runtime_type; /* COR_PRF_RUNTIME_TYPE, 0 when unknown */
    unsigned major, minor, build, qfe;
    const char *runtime_version; /* NUL-terminated, escaped on output */
    uint32_t event_mask;
    const void *client_data; /* raw bytes as received, escaped on output */
    size_t client_data_len;
    struct report_counters counters;
    bool attach_complete, detached;
    bool startup; /* loaded at startup (CORECLR_PROFILER): "load":"startup", else "attach" */
};

/* Writes the report as one JSON object plus '\n' into buf. Returns its length (without a NUL,
 * which is written too), or -E2BIG when `cap` is too small. */
int report_format(const struct report *r, char *buf, size_t cap);

/* Appends the JSON string body of `len` bytes of `s` (no quotes) at buf[*pos], escaping quotes,
 * backslashes and control bytes and replacing invalid UTF-8 with U+FFFD. Returns 0 or -E2BIG. */
int report_escape(const void *s, size_t len, char *buf, size_t cap, size_t *pos);

/* Replaces `path` atomically with `len` bytes of `buf`: a mode-0600 temporary next to it, then
 * rename(2), so a reader never sees a half-written report. Returns 0 or -errno. */
int report_write_atomic(const char *path, const char *buf, size_t len);

#endif
