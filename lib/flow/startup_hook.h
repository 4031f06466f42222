/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `clrattach startup-hook`: a managed assembly (or a directory with it and what it needs)
 * delivered into a running app's filesystem view exactly as a profiler is (deliver/: the same
 * placement, content-addressed names, owner, every check), then ApplyStartupHook (.NET 8+) with
 * its path there: the runtime loads it and runs its StartupHook.Initialize() at once, on the
 * diagnostics server thread; --env variables go before it (SetEnvironmentVariable). The target
 * is reached as attach reaches it (attach_reach). What was delivered is removed when the runtime
 * refuses it, unless keep. Nothing here prints.
 */
#ifndef CLRATTACH_STARTUP_HOOK_H
#define CLRATTACH_STARTUP_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "flow/attempt.h"

struct target;

struct startup_hook_opts {
    int proc_dirfd;         /* our /proc */
    const char *assembly;   /* on our side: the hook's .dll, or a directory holding it */
    const char *entry;      /* in a directory: the hook's file (a path relative to it or a
                               unique name); NULL: the only .NET assembly there */
    const char *target_dir; /* NULL: the target's TMPDIR, then the usual candidates */
    bool keep;              /* leave what was delivered after a refusal */
    bool force;             /* send a hook known to be for process start only (profset/hooks.h) */
    bool again;             /* send a hook already loaded in the app: its Initialize runs again */
    /* --env: "NAME=VALUE" each (ipc_env_check()ed), {dir}/{entry} expanded to the delivery as
     * the app sees it, sent with SetEnvironmentVariable before ApplyStartupHook; the result
     * shows the names only */
    const char *const *env;
    size_t env_count;
    int64_t timeout_ms; /* our deadline for each IPC exchange */
    /* Called as the run passes each stage (delivered, replied): the CLI tightens its seccomp
     * filter there. A negative return ends the run with that error. */
    int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e);
    void *userdata;
    /* A stop asked for by a signal (struct attach_stop, attach.h): honoured until
     * ApplyStartupHook is sent, what this run delivered removed first; NULL: none. */
    struct attach_stop *stop;
    /* A command built on this run (otel, the one way flows call each other) adds its checks and
     * its reading of what the hook did, each called as the target's user with its root open;
     * NULL: none. `before_deliver` runs after ProcessInfo and the hook's checks, `before_send`
     * after delivery (p: where, as the app sees it) and before anything is sent: a negative
     * return (the outcome set) ends the run, what was delivered taken back. `after_answer` runs
     * once the runtime answered S_OK and may set the outcome; its return is the run's. */
    /* A hook that needs a newer runtime than ApplyStartupHook does: its .NET major version,
     * its name and the next step on an older one (0, NULL: .NET 8, ApplyStartupHook's) */
    int min_major;
    const char *needs_what, *too_old_hint;
    int (*before_deliver)(void *ctx, struct target *t, struct attach_result *res);
    int (*before_send)(void *ctx, struct target *t, const struct placed *p,
                       struct attach_result *res);
    int (*after_answer)(void *ctx, struct target *t, struct attach_result *res);
    void *ctx;
};

/* Loads the operator's assembly, reaches the pinned process `t`, checks the hook (not one for
 * process start only, unless force: start_only_hook; every referenced assembly delivered with it
 * or where the app resolves it: dependency_missing; not already loaded there, unless again:
 * already_active), delivers, sends the --env variables and ApplyStartupHook and decodes the
 * answer. Always fills *ret (kind ATTACH_KIND_STARTUP_HOOK,
 * outcome, delivered path, on failure error with message and next step). Returns 0 when the
 * runtime ran the hook, else the negative error. `t` stays the caller's. */
int startup_hook_run(const struct startup_hook_opts *o, struct target *t,
                     struct attach_result *ret);

#endif
