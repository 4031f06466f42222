/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the listening loop (listen.c), its delivery step (listen_deliver.c) and its outcome
 * mapping (listen_outcome.c) share: one runtime instance's state and the loop's; not the API.
 */
#ifndef CLRATTACH_LISTEN_INTERNAL_H
#define CLRATTACH_LISTEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "flow/attach.h"
#include "flow/listen.h"
#include "flow/listen_fsm.h"
#include "profset/profset.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"

/* A done instance's cookie is remembered this many times over (a ring): its runtime, still
 * connected and reconnecting only if its parked connection drops, is never served twice. */
#define DONE_COOKIES 1024

/* One runtime instance: the cookie it advertised, what its connections are doing. */
struct inst {
    struct ipc_guid cookie;
    uint64_t nspid;
    pid_t peer_pid;
    uid_t peer_uid;
    struct listen_fsm fsm;
    /* The runtime keeps one connection to us at a time: advertised and waiting for a command
     * (idle), or carrying one (busy). A done instance keeps its idle connection open: closing
     * it would make the runtime reconnect at once, over and over (ds-ipc.c resets its poll
     * timeout to the 10 ms minimum after a hang-up). */
    int idle_fd;
    int busy_fd;
    enum listen_cmd busy_cmd;
    int busy_arg;
    int64_t busy_deadline;
    struct ipc_conn_rx rx;
    uint8_t *env_block; /* ProcessEnvironment's block, read after its reply */
    uint32_t env_len, env_got;
    int64_t quiet_since; /* waiting for a connection since then */
    struct ipc_process_info pi;
    bool have_pi;
    /* What this run delivered, as we see it (below the deliver-dir fd) and as the app does. */
    char ours[TARGET_PATH_MAX];
    char app_path[TARGET_PATH_MAX];
    char app_dir[TARGET_PATH_MAX];
    /* With --env: the env loader beside the profiler, as the app sees it: what the runtime is
     * given (app_path is the real profiler's, {entry}); "" without */
    char load_path[TARGET_PATH_MAX];
    bool delivered, reused;
    uint64_t dev, ino;
    bool reported;
    struct attach_result res;
};

struct loop {
    const struct listen_opts *o;
    struct listen_sock *ls;
    int dirfd; /* --deliver-dir */
    struct profset ps;
    bool inert; /* the profiler is known to do nothing on attach (vendors.h) */
    /* --env, and after it the variables the vendor's code needs at startup (vendors.h) whose
     * names the operator did not give; vendor_env names those */
    const char *env[ENV_VARS_MAX];
    size_t env_count;
    char vendor_env[160];
    struct inst *inst[LISTEN_INSTANCES_MAX];
    struct ipc_guid done[DONE_COOKIES];
    size_t ndone;
    bool served; /* --once: one instance was reported */
    bool chosen; /* --once: one instance was selected; the others are resumed and left */
    uint64_t refused_conns;
    bool name_lost; /* the socket's name was found removed or replaced */
};

/* The build for the runtime's identifier (ProcessInfo3, or --rid), delivered into the shared
 * directory (listen_deliver.c). Returns 0 or a negative error, e says why. */
int listen_deliver(struct loop *l, struct inst *in, struct cla_error *e);

/* What this run delivered for `in` is removed, unless --keep or reused (nothing maps it). */
void listen_undo(struct loop *l, struct inst *in);

/* The machine's end in the terms of an attach result (listen_outcome.c, docs/exit-codes.md). */
void listen_fill_outcome(struct loop *l, struct inst *in);

/* The next step of an instance that failed after its owed ResumeRuntime went out: the failed
 * step's own next step (`next_step`, "" when it has none: then that nothing more was sent),
 * followed by the resume's state in `f` (resumed, refused, or no answer). The state is kept
 * whole: a next step too long for `size` is cut instead. Pure: writes `out` (always terminated,
 * size > 0) and nothing else. */
void listen_resume_hint(const char *next_step, const struct listen_fsm *f, char *out, size_t size);

/* A runtime the selectors left alone, said once on the warning channel (listen_outcome.c). */
void listen_not_selected(struct loop *l, const struct inst *in);

#endif
