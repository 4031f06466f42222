/* SPDX-License-Identifier: Apache-2.0 */
/* What a watcher is asked to do: which processes it selects and the options of its loop, read by
 * the loop (watch.c) and handed to each attach by the pool (watch_pool.c). */
#ifndef CLRATTACH_WATCH_OPTS_H
#define CLRATTACH_WATCH_OPTS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flow/attempt.h"

struct pollfd;
struct target;

struct watch_selector {
    const char *comm;    /* exact /proc comm (15 bytes max), NULL = any */
    const char *cmdline; /* substring of the command line, NULL = any */
    bool have_uid;
    uid_t uid;          /* effective uid of the process */
    const char *cgroup; /* substring of /proc/<pid>/cgroup (a container ID), NULL = any */
    bool other_mntns;   /* only processes outside our own mount namespace (container) */
};

struct watch_opts {
    int proc_dirfd;
    struct watch_selector sel;
    struct attach_opts attach; /* for each attach; on_stage runs in the attach's child */
    int64_t interval_ms;       /* time between scans */
    /* The longest wait between two looks for a new process (the last pid, watch_discover.h):
     * 0 for DISCOVER_TICK_MAX_MS, -1 for none (runtime-file hints and the scans only). */
    int64_t pid_poll_ms;
    const char *ready_file; /* created after the first complete scan, NULL = none */
    int64_t max_scans;      /* 0 = until *stop (tests and benchmarks use a bound) */
    /* Called in the watcher once per new outcome of an instance (print, report an Event), and
     * once with ATTACH_INTERRUPTED for each attach abandoned at a stop. */
    void (*on_result)(const struct attach_result *r, bool retry_scheduled, void *userdata);
    /* Called with a sentence (rendered) when a process's TMPDIR stops answering (procindex.h);
     * NULL: not said. */
    void (*on_warning)(const char *msg, void *userdata);
    void *userdata;
    volatile sig_atomic_t *stop; /* set by the SIGTERM handler */
    size_t *ret_tracked;         /* if set: instances still tracked when the loop ended */
    size_t *ret_known;           /* if set: table entries (idle processes too) at the end */
    /* The agent's hooks (report/agent.c); NULL in watch. choose: after the selectors, on the
     * pinned process, the options its attach runs with (they must live until the loop ends),
     * or NULL when it is not to be attached (looked at again as an idle one). poll_fds: up to
     * `max` more fds for the loop's wait, and *until_ms lowered to when it must wake up at the
     * latest; after_poll: those fds with their revents, after every wait, true when what
     * choose answers may have changed (a pod's judgement, its containers): every process only
     * looked at so far is then looked at again at once, not at its next idle look. */
    const struct watch_opts *(*choose)(const struct target *tg, void *userdata);
    size_t (*poll_fds)(struct pollfd *fds, size_t max, int64_t *until_ms, void *userdata);
    bool (*after_poll)(const struct pollfd *fds, size_t n, void *userdata);
};

/* The most fds poll_fds may add. */
#define WATCH_EXTRA_FDS_MAX 16

#endif
