/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `clrattach perfmap enable|disable`: asks a running runtime (.NET 8+) to start or stop writing
 * the perf map (/tmp/perf-<pid>.map) and the jitdump (/tmp/jit-<pid>.dump) that perf, bpftrace
 * and eBPF profilers read to name JIT-compiled frames. The target is reached as attach reaches
 * it (attach_reach: pinned, as its user, its socket checked, ProcessInfo first); nothing is
 * written into its view by us, the runtime writes the files itself. Nothing here prints.
 */
#ifndef CLRATTACH_PERFMAP_H
#define CLRATTACH_PERFMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "flow/attempt.h"

struct target;

struct perfmap_opts {
    int proc_dirfd;        /* our /proc */
    const char *proc_path; /* its path, for the node-side paths in the result ("/proc") */
    bool enable;           /* EnablePerfMap, else DisablePerfMap */
    uint32_t type;         /* enable: enum ipc_perfmap_type */
    int64_t timeout_ms;    /* our deadline for each IPC exchange */
    /* Called once the runtime answered (ATTACH_STAGE_REPLIED): the CLI tightens its seccomp
     * filter to the reporting stage there. A negative return ends the run with that error. */
    int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e);
    void *userdata;
};

/* Where a runtime writes its perf map and jitdump, as it sees its own filesystem: the value of
 * DOTNET_PerfMapJitDumpPath (or COMPlus_) in its environment, else /tmp (dotnet/runtime
 * src/coreclr/vm/perfmap.cpp, PerfMap::InternalConstructPath: TMPDIR plays no part). `env` is
 * the target's NUL-separated environment block. Writes the directory (rendered when it is not
 * plain text) into `out`. */
void perfmap_dir_of(const char *env, size_t env_len, char *out, size_t size);

/* Sends EnablePerfMap or DisablePerfMap to the pinned process `t` and decodes the answer. Always
 * fills *ret (kind, outcome, paths, on failure error with message and next step). Returns 0
 * when the runtime took the command, else the negative error. `t` stays the caller's. */
int perfmap_run(const struct perfmap_opts *o, struct target *t, struct attach_result *ret);

#endif
