/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach ps`: every .NET process reachable from where we stand, with its socket's state. */
#ifndef CLRATTACH_PS_H
#define CLRATTACH_PS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"

struct ps_entry {
    pid_t pid;
    pid_t nspid;
    uid_t uid;
    gid_t gid;
    char comm[64]; /* target strings below are rendered (render.h) */
    char command_line[512];
    char tmpdir[256];
    char socket_name[96];
    const char *state; /* ready | paused | unkeyed | stale | no_access | not_a_socket | disabled |
                          refused (its /proc data breaks a rule: detail says which) |
                          no_answer (asked, no reply before the deadline),
                          unreachable (its TMPDIR's filesystem did not answer in time) */
    char runtime_version[64];
    char runtime_rid[64];
    char arch[16];
    char detail[160]; /* why a state is not "ready" */
};

/* Scans `proc_dirfd` (skipping ourselves and kernel threads). With `only` > 0, only that pid is
 * looked at, and it is listed even when it cannot be inspected as us (no_access, with its uid
 * and gid): that is how another user learns whom a process runs as (kubectl-clrattach asks it
 * from an ephemeral container before the attach). With `cgroup`, every process whose
 * /proc/<pid>/cgroup holds that string is looked at and listed the same way, and no other:
 * the processes of one container (its ID) in a PID namespace that several share. With `query`, asks
 * each live runtime for ProcessInfo: all at once (up to PS_QUERIES_IN_FLIGHT_MAX connections in
 * flight), under one deadline timeout_ms from the end of the index scan; a runtime that has not
 * answered by then is `no_answer`. Returns 0 with a malloc'd array (caller frees) sorted by pid, or
 * a negative errno. */
int ps_scan(int proc_dirfd, pid_t only, const char *cgroup, bool query, int64_t timeout_ms,
            struct ps_entry **ret_entries, size_t *ret_n, struct cla_error *e);

#endif
