/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One attempt on one runtime, the core every command that talks to a pinned runtime shares
 * (attach, startup, perfmap, startup-hook): pin it and reach it as its user, deliver, the stages
 * of the seccomp filter, undo a delivery, the ResumeRuntime owed to a paused runtime. The one
 * header a flow includes for it; the outcome and result types come with it (outcome.h).
 */
#ifndef CLRATTACH_ATTEMPT_H
#define CLRATTACH_ATTEMPT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "deliver/deliver.h"
#include "deliver/place.h"
#include "flow/outcome.h"
#include "profset/envwrap.h"
#include "profset/profset.h"
#include "profset/rid.h"
#include "profset/vendors.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "target/diag_socket.h"

struct target;
struct creds_saved;
struct perfmap_opts;
struct otel_opts;

enum attach_stage {
    ATTACH_STAGE_DELIVERED, /* the profiler is in place: no more file creation needed */
    ATTACH_STAGE_REPLIED,   /* the runtime answered: only reporting is left */
};

/*
 * A stop asked for by a signal (SIGTERM, SIGINT, SIGHUP) while an attach runs, shared with the
 * caller's handler. While `defer` is set, something of this run may be in the target and must be
 * removed first: the handler then only records the signal in `signal`. Otherwise nothing of ours
 * is in the target, and the signal may end the process at once. attach_run() sets `defer` right
 * before it writes into the target and clears it when it returns. It honours a recorded stop
 * until AttachProfiler is sent: what this run delivered is removed (--keep or not: no runtime
 * was asked to load it), with any temporary of its nonce, and the outcome is ATTACH_INTERRUPTED.
 * Once the request is out it runs to its end: the runtime may be loading the profiler, or,
 * paused at startup, waits for the ResumeRuntime that must follow StartupProfiler. With
 * --startup on a runtime whose environment asks it to pause, `defer` is set from ProcessInfo
 * on: every way out, a stop included, sends ResumeRuntime first (attempt_resume).
 */
struct attach_stop {
    volatile sig_atomic_t defer;
    volatile sig_atomic_t signal; /* the signal recorded, 0 for none */
};

/* What one attach is asked to do (`attach`, and each attach of `watch`); its startup half reads
 * it too. */
struct attach_opts {
    int proc_dirfd;             /* our /proc */
    const char *profiler_path;  /* on our side: one .so, or a bundle directory laid out by
                                   runtime identifier (linux-x64/, linux-musl-x64/, ...) */
    const char *entry;          /* --entry: the profiler library inside a directory, NULL = the
                                   only one exporting DllGetClassObject */
    const char *rid;            /* --rid: the target's runtime identifier, NULL = detect */
    bool force_rid;             /* --force-rid: --rid wins over the runtime's own answer */
    bool skip_dependency_check; /* --skip-dependency-check: send without resolving DT_NEEDED */
    bool keep;                  /* --keep: leave what was delivered after a failed load */
    bool force;                 /* --force: attach a profiler known to stay inert on attach */
    int64_t settle_ms;          /* --settle: how long the app is watched after the answer */
    struct ipc_guid clsid;
    const uint8_t *client_data; /* with {dir}/{entry} placeholders, expanded before sending */
    size_t client_data_len;
    const char *target_dir;     /* NULL: the target's TMPDIR */
    uint32_t attach_timeout_ms; /* sent to the runtime (concurrent-GC wait) */
    int64_t timeout_ms;         /* our deadline for each IPC exchange */
    bool startup;               /* a runtime suspended at startup gets StartupProfiler and
                                   ResumeRuntime instead of failing with 0x8013135B */
    /* watch --startup: with `startup`, a runtime that already runs gets a plain attach (no
     * --env), or, for a profiler known to stay inert on attach, is refused (ATTACH_INERT);
     * which one it is, the runtime's own answers tell (startup.h) */
    bool startup_or_attach;
    /* --env: "NAME=VALUE" each (ipc_env_check()ed), {dir}/{entry} expanded, sent with
     * SetEnvironmentVariable before StartupProfiler (or, with --force, before AttachProfiler) */
    const char *const *env;
    size_t env_count;
    bool show_env;              /* --show-env: the result shows values, not only names */
    int64_t resume_deadline_ms; /* --resume-deadline: a paused runtime is resumed within this */
    /* Called as the attach passes each stage; the CLI tightens its seccomp filter here. A
     * negative return aborts the attach with that error. */
    int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e);
    void *userdata;
    struct attach_stop *stop; /* NULL: no stop is asked for while the attach runs */
    /* DELIVER_NONCE_LEN lowercase hex (deliver_new_nonce()) naming this run's temporaries, so
     * that whoever ends the run may sweep them (deliver_sweep()); NULL: a fresh one. */
    const char *nonce;
    /* watch --perfmap: the runtime is sent EnablePerfMap (perfmap_run) instead of a profiler;
     * NULL for an attach. */
    const struct perfmap_opts *perfmap;
    /* watch --otel: the OpenTelemetry agent is started (otel_run) instead; NULL otherwise. */
    const struct otel_opts *otel;
};

/* A pinned target's runtime, reached (attach_reach). */
struct attach_conn {
    int sockfd;           /* the socket's O_PATH fd (diag_socket_open); -1 before */
    struct ipc_peer peer; /* who must listen on it: the pinned process */
    struct diag_socket s;
};

/* What the steps of one attach (attach.c, and its startup half startup.c) share, and what the
 * core's steps on it read. Everything here is released when attach.c's run() returns, before
 * attach_run() gives our own credentials back. */
struct attempt {
    const struct attach_opts *o;
    struct attach_result *res;
    struct target *t;
    struct attach_conn c; /* the runtime, reached (attach_reach) */
    struct rid rid;
    const struct profset_build *build;
    char nonce[DELIVER_NONCE_LEN + 1]; /* names this run's temporaries */
    struct place_opts po;
    struct placed p;
    uint8_t *req; /* the AttachProfiler frame */
    size_t req_len;
    uint32_t hr;
    int64_t sent_at;
    int64_t start_ms;  /* when run() began: the result's resumed_after_ms counts from here */
    int64_t resume_by; /* res->resume_owed: ResumeRuntime goes out by then (--resume-deadline) */
    bool resume_sent;
    bool env_done;     /* every --env variable answered with success */
    bool env_refused;  /* a variable could not be sent: the outcome is set already */
    bool env_rejected; /* the runtime refused a variable: a->hr is its answer */
    bool startup_sent; /* StartupProfiler went out: a->hr is its answer, not AttachProfiler's */
    /* the profiler's row in the table of those inert on attach (profset/vendors.h), or NULL */
    const struct vendor_noop *inert;
    /* A startup load of a known vendor's profiler: the options again, with the vendor's startup
     * settings added to --env (a->o points here then; attempt_vendor_env) */
    struct attach_opts eo;
    const char *env_all[ENV_VARS_MAX];
    /* --env (or the vendor's settings), or {dir} asked of a single file: the directory of our
     * own delivered instead of a->build (attempt_wrap) */
    struct envwrap wrap;
    bool wrapped;
    /* With the env loader: its path in the target, what the runtime is given; a->p.path is then
     * the real profiler's ({entry}, and what the maps are searched for) */
    char load_path[TARGET_PATH_MAX];
};

/* Pins `pid` (target_open under o->proc_dirfd): the process an attach, and the Event about it,
 * will be about. Returns 0 with *ret_target to pass to attach_run and then target_close(). On
 * failure fills *ret as attach_run does (target_not_found, permission_denied, ...) and returns
 * the negative error; *ret_target is untouched then. */
int attach_pin(const struct attach_opts *o, pid_t pid, struct target *ret_target,
               struct attach_result *ret);

/*
 * The first steps of every command that talks to a pinned target's runtime (attach, perfmap,
 * startup-hook), in attach's order: what the target is (*res: nspid, uid, TMPDIR, ...), then
 * acting as its user (creds_become: `cs` to give back with creds_restore, its root opened as
 * that user), then its socket found and ProcessInfo asked (res->runtime_*; a runtime too old for
 * ProcessInfo leaves have_runtime false). Returns 0 with c->sockfd for each later connection;
 * else fills *res as attach_run does and returns the negative error. The caller closes
 * c->sockfd (start it at -1) and restores `cs`, on every way out.
 */
int attach_reach(struct target *t, int64_t timeout_ms, struct creds_saved *cs,
                 struct attach_conn *c, struct attach_result *res);

/* From here the runtime may be paused at startup waiting for us: ResumeRuntime is owed on every
 * way out, by --resume-deadline, and a stop signal must wait for it (attach_stop). */
void attempt_owe_resume(struct attempt *a);

/* Sends the owed ResumeRuntime, once (a no-op when not owed or sent already); fills the
 * result's resumed and resumed_after_ms. */
void attempt_resume(struct attempt *a);

/* For a run that was cut short (its process killed by a watcher, past its deadline or at a
 * stop): ResumeRuntime to the pinned process `t` whose environment asks it to pause at startup,
 * with its root open and as its user (creds.h), answered by `deadline_ms`. A runtime that runs
 * takes it as a no-op. Returns 1 when resumed, 0 when not owed, else a negative errno. */
int attempt_resume_pinned(struct target *t, int64_t deadline_ms);

/* The deadline of an exchange before the resume: --timeout, and never past --resume-deadline. */
int64_t attempt_exchange_deadline(const struct attempt *a);

/* Removes what this run delivered (nothing reused), unless --keep: the runtime refused it, so
 * nothing maps it. Done before the reply stage of the seccomp filter, which forbids unlink. */
void attempt_undo_delivery(struct attempt *a);

/* Calls `on_stage` (NULL: none) as the run passes stage `s`. `r` is the run's result so far: a
 * failure to tighten becomes the outcome (internal_error, with its error) only when the run
 * itself succeeded. Returns `r`, or that failure. */
int attempt_stage(int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e),
                  void *userdata, enum attach_stage s, struct attach_result *res, int r);

/* The nonce naming this run's temporaries into `ret` (DELIVER_NONCE_LEN + 1 bytes): `given` (a
 * watcher's, checked) or a fresh one. Fails the result as internal_error. */
int attempt_nonce(const char *given, char *ret, struct attach_result *res);

/* Places po->build in the first directory of the target's view that takes it (place_profiler),
 * `stop` (NULL: none) told to defer from here (attach_stop). Fills res: placement, the delivered
 * path and directory (rendered), sha256, reused. On failure the temporaries of a stopped run are
 * swept, and the outcome is delivery_failed (internal_error without memory). */
int attempt_place(struct target *t, const struct place_opts *po, struct attach_stop *stop,
                  struct placed *ret, struct attach_result *res);

/* A connection that ended without an answer (`r`, not a timeout or a refusal): did the app die
 * under the command sent at `sent_at`? Looked at for `wait_ms` at most. When it did, sets
 * res->died and died_after_ms and returns true. */
bool attempt_died_unanswered(struct target *t, int r, int64_t wait_ms, int64_t sent_at,
                             struct attach_result *res);

/* Sends each --env variable (o->env) with SetEnvironmentVariable, each on its own connection,
 * {dir} and {entry} expanded to a->p (attempt_env.c). Returns 0 with a->hr: 0 when every one was
 * taken (a->env_done), else the runtime's refusal of the first that was not (a->env_rejected);
 * a variable too long once expanded fails the result as usage_error (a->env_refused). */
int attempt_send_env(struct attempt *a);

/* A startup load of a profiler in the table of those inert on attach whose vendor's code needs
 * variables of its own (vendors.h: startup_env): from here a->o is a copy whose --env holds
 * them after the operator's (whose names win), and res->vendor_env names them. Called once the
 * load is known to be a startup one. Fails the result as usage_error past ENV_VARS_MAX. */
int attempt_vendor_env(struct attempt *a);

/* After the build was chosen: with --env (a profiler, not a perf map) the build becomes a
 * directory of our own holding it, the env loader for the target's libc and its settings; a
 * single file whose client data or --env names {dir} goes in a directory of our own too
 * (profset/envwrap.h). A no-op otherwise. Fails the result as usage_error. */
int attempt_wrap(struct attempt *a);

/* After a wrapped delivery: a->load_path and res->loader_path name the loader, a->p.path and
 * res->delivered_path the real profiler in the delivered directory. */
int attempt_wrapped_placed(struct attempt *a);

/* The path the runtime is given to load: the env loader's, or the profiler's. */
const char *attempt_load_path(const struct attempt *a);

/* The reply stage of the seccomp filter, an owed ResumeRuntime sent first. `r` is the run's
 * result so far: a failure to tighten only becomes the outcome when the run itself succeeded. */
int attempt_tighten_replied(struct attempt *a, int r);

#endif
