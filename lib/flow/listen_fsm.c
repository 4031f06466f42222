/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s machine for one runtime instance (listen_fsm.h): the next command, and each
 * reply taken per command; pure, no I/O.
 */
#include "flow/listen_fsm.h"

#include <errno.h>

enum phase {
    P_INFO = 0,
    P_SELECT,
    P_PROBE,
    P_DELIVER,
    P_SETENV,
    P_STARTUP,
    P_ATTACH,
    P_RESUME, /* only the owed ResumeRuntime is left */
    P_VERIFY, /* resumed after StartupProfiler: did the runtime load it? */
    P_DONE,
};

/* Retries of a runtime that is not there yet: StartupProfiler before the runtime reached its
 * pause point (ds-server.c sets _is_paused_for_startup only in
 * ds_server_pause_for_diagnostics_monitor, after the server thread, which connected to us, has
 * started: the first command can arrive before it), AttachProfiler before the runtime has
 * started. 10 ms doubling to 200 ms: the runtime's own reconnect polling starts at 10 ms. */
#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 200
/* How long StartupProfiler's "not paused" (E_INVALIDARG) is taken for "not paused yet": the
 * runtime reaches its pause point milliseconds after its server thread connects. Past it, the
 * runtime runs already although its port says "suspend": it was resumed before, by a
 * clrattach that served it and has since restarted (the runtime reconnects to the new one), or
 * through another port. */
#define PAUSE_POINT_WAIT_MS 1000

static int64_t backoff(const struct listen_fsm *f)
{
    int64_t d = RETRY_MIN_MS;
    for (int i = 0; i < f->retries && d < RETRY_MAX_MS; i++)
        d *= 2;
    return d < RETRY_MAX_MS ? d : RETRY_MAX_MS;
}

void listen_fsm_init(struct listen_fsm *f, const struct listen_fsm_cfg *cfg, int64_t now)
{
    *f = (struct listen_fsm){.cfg = *cfg, .phase = P_INFO, .started = now};
    f->resume_by = now + cfg->resume_deadline_ms;
    f->first_startup = -1;
    /* "suspend" is the default tag of a diagnostic port: until the runtime says otherwise it
     * may be paused, waiting for us, and owed a resume. */
    f->paused = true;
}

static void finish(struct listen_fsm *f, enum listen_end end)
{
    f->end = end;
    f->phase = P_DONE;
}

/* Leaves the path: through the owed resume if the runtime may be paused, else at once. */
static void leave(struct listen_fsm *f, enum listen_end end)
{
    if (f->paused && !f->resume_sent) {
        f->end_after_resume = end;
        f->phase = P_RESUME;
    } else {
        finish(f, end);
    }
}

static void fail(struct listen_fsm *f, enum listen_cmd cmd, int err, uint32_t hr)
{
    f->failed_cmd = cmd;
    f->err = err;
    f->hr = hr;
    leave(f, LISTEN_END_FAILED);
}

static enum listen_action send(struct listen_fsm *f, struct listen_step *ret, enum listen_cmd c,
                               int arg)
{
    ret->cmd = c;
    ret->arg = arg;
    f->inflight = c;
    return LISTEN_SEND;
}

enum listen_action listen_fsm_next(struct listen_fsm *f, int64_t now, struct listen_step *ret)
{
    *ret = (struct listen_step){.cmd = LISTEN_CMD_NONE, .wake = INT64_MAX};
    if (f->phase == P_DONE)
        return LISTEN_DONE;
    if (f->inflight != LISTEN_CMD_NONE)
        return LISTEN_WAIT;
    /* The guarantee: past --resume-deadline a paused runtime gets its resume next, whatever
     * step was due (a slow delivery, retries of StartupProfiler). */
    if (f->paused && !f->resume_sent && f->phase != P_RESUME && now >= f->resume_by) {
        f->deadline_hit = true;
        f->failed_cmd = f->phase == P_STARTUP ? LISTEN_CMD_STARTUP : LISTEN_CMD_NONE;
        f->err = -ETIMEDOUT;
        f->end_after_resume = LISTEN_END_FAILED;
        f->phase = P_RESUME;
    }
    switch ((enum phase)f->phase) {
    case P_INFO: return send(f, ret, LISTEN_CMD_PROCESS_INFO, f->info_attempt);
    case P_SELECT: return LISTEN_SELECT;
    case P_PROBE: return send(f, ret, LISTEN_CMD_ENVIRONMENT, 0);
    case P_DELIVER: return LISTEN_DELIVER;
    case P_SETENV: return send(f, ret, LISTEN_CMD_SETENV, (int)f->env_next);
    case P_STARTUP:
    case P_ATTACH:
        if (now < f->retry_at) {
            ret->wake = f->retry_at;
            if (f->paused && f->resume_by < ret->wake)
                ret->wake = f->resume_by;
            return LISTEN_WAIT;
        }
        return send(f, ret, f->phase == P_STARTUP ? LISTEN_CMD_STARTUP : LISTEN_CMD_ATTACH, 0);
    case P_RESUME: return send(f, ret, LISTEN_CMD_RESUME, 0);
    case P_VERIFY:
        if (now >= f->verify_by || f->stopped) {
            finish(f, LISTEN_END_UNVERIFIED);
            return LISTEN_DONE;
        }
        if (now < f->retry_at) {
            ret->wake = f->retry_at < f->verify_by ? f->retry_at : f->verify_by;
            return LISTEN_WAIT;
        }
        return send(f, ret, LISTEN_CMD_VERIFY, 0);
    case P_DONE: break;
    }
    return LISTEN_DONE;
}

/* The step after the environment is set (or when there is none). */
static void after_env(struct listen_fsm *f)
{
    f->retries = 0;
    f->retry_at = 0;
    f->phase = f->paused ? P_STARTUP : P_ATTACH;
}

/* ProcessInfo: an older runtime is asked the older command; decoded, the selectors are next. */
static void replied_info(struct listen_fsm *f, const struct listen_reply *r)
{
    bool ok = r->err == 0 && r->hr == 0;
    if (r->err == 0 && r->hr == LISTEN_HR_UNKNOWN_COMMAND && f->info_attempt < 2)
        f->info_attempt++;
    else if (!ok)
        fail(f, LISTEN_CMD_PROCESS_INFO, r->err, r->hr);
    else
        f->phase = P_SELECT;
}

/* ProcessEnvironment: does the runtime pause at startup? */
static void replied_env(struct listen_fsm *f, const struct listen_reply *r)
{
    /* A runtime that does not answer it (older than .NET 6: UNKNOWN_COMMAND), or whose
     * answer could not be read, is taken to pause: the default. */
    if (r->err != 0 || r->hr != 0 || r->pauses != 0) {
        f->phase = P_DELIVER;
        return;
    }
    f->paused = false;
    if (!f->cfg.attach_allowed)
        finish(f, LISTEN_END_STARTUP_ONLY);
    else if (f->cfg.env_count && !f->cfg.env_running)
        finish(f, LISTEN_END_ENV_RUNNING);
    else
        f->phase = P_DELIVER;
}

/* SetEnvironmentVariable: the next one, or the profiler once all are set. */
static void replied_setenv(struct listen_fsm *f, const struct listen_reply *r)
{
    if (r->err != 0 || r->hr != 0) {
        fail(f, LISTEN_CMD_SETENV, r->err, r->hr);
        return;
    }
    f->env_sent++;
    if (++f->env_next >= f->cfg.env_count)
        after_env(f);
}

/* StartupProfiler: taken (the resume, then the verification), not paused yet (asked again),
 * running already, or refused. */
static void replied_startup(struct listen_fsm *f, int64_t now, const struct listen_reply *r)
{
    bool not_paused = r->err == 0 && r->hr == LISTEN_HR_INVALIDARG;
    if (f->first_startup < 0)
        f->first_startup = now;
    if (not_paused && now >= f->first_startup + PAUSE_POINT_WAIT_MS) {
        /* Running, we take it; but the resume goes out all the same (a no-op for a runtime
         * that runs, and the guarantee if we are wrong). Then a profiler that loads on
         * attach gets AttachProfiler (a runtime served before answers that one is loaded
         * already); another ends here. */
        f->was_running = true;
        f->end_after_resume = LISTEN_END_STARTUP_ONLY;
        f->phase = P_RESUME;
    } else if (not_paused && now + backoff(f) < f->resume_by) {
        f->retry_at = now + backoff(f);
        f->retries++;
    } else if (r->err != 0 || r->hr != 0) {
        fail(f, LISTEN_CMD_STARTUP, r->err, r->hr);
    } else {
        f->startup_taken = true;
        f->end_after_resume = LISTEN_END_STARTUP_LOADED;
        f->phase = P_RESUME;
    }
}

/* AttachProfiler, to a runtime that runs: asked again while it is not yet available. */
static void replied_attach(struct listen_fsm *f, int64_t now, const struct listen_reply *r)
{
    if (r->err == 0 && r->hr == LISTEN_HR_NOT_YET_AVAILABLE &&
        now + backoff(f) < f->started + f->cfg.timeout_ms) {
        f->retry_at = now + backoff(f);
        f->retries++;
    } else if (r->err != 0 || r->hr != 0) {
        fail(f, LISTEN_CMD_ATTACH, r->err, r->hr);
    } else {
        finish(f, LISTEN_END_ATTACHED);
    }
}

/* ResumeRuntime: the end owed since the path was left, the verification of a startup load, or
 * AttachProfiler for a runtime that ran already. */
static void replied_resume(struct listen_fsm *f, int64_t now, const struct listen_reply *r)
{
    bool ok = r->err == 0 && r->hr == 0;
    f->resume_sent = true;
    f->resumed = ok;
    f->resume_answered = r->err == 0;
    if (f->was_running && !f->stopped && f->end_after_resume == LISTEN_END_STARTUP_ONLY &&
        f->cfg.attach_allowed) {
        f->paused = false;
        after_env(f);
        return;
    }
    if (!ok && f->end_after_resume != LISTEN_END_FAILED) {
        f->failed_cmd = LISTEN_CMD_RESUME;
        f->err = r->err;
        f->hr = r->hr;
        f->end_after_resume = LISTEN_END_FAILED;
    }
    if (ok && f->end_after_resume == LISTEN_END_STARTUP_LOADED && !f->stopped) {
        /* Taken and resumed: the load itself happens now, and is asked of the runtime
         * (listen_fsm.h, the verification). */
        f->retries = 0;
        f->retry_at = 0;
        f->verify_by = now + f->cfg.timeout_ms;
        f->verify_err = -ETIMEDOUT;
        f->phase = P_VERIFY;
        return;
    }
    if (f->stopped && f->end_after_resume == LISTEN_END_STARTUP_LOADED)
        f->end_after_resume = LISTEN_END_UNVERIFIED;
    finish(f, f->end_after_resume);
}

/* The verification: ALREADY_ACTIVE is the startup load, a load error its failure. */
static void replied_verify(struct listen_fsm *f, int64_t now, const struct listen_reply *r)
{
    f->verify_err = r->err;
    f->verify_hr = r->hr;
    if (r->err == 0 && r->hr == LISTEN_HR_ALREADY_ACTIVE) {
        finish(f, LISTEN_END_STARTUP_LOADED);
    } else if (r->err == 0 && r->hr != LISTEN_HR_NOT_YET_AVAILABLE) {
        /* A load error: the runtime had no profiler and could not load this one. S_OK: it
         * had none and has just loaded this one on attach; the startup load failed all
         * the same, and the profiler now runs as an attached one. */
        finish(f, LISTEN_END_STARTUP_FAILED);
    } else if (!f->stopped && now + backoff(f) < f->verify_by) {
        /* Still starting (the runtime answers the profiler commands once it runs: its
         * startup load is over by then), or this connection failed: asked again. */
        f->retry_at = now + backoff(f);
        f->retries++;
    } else {
        finish(f, LISTEN_END_UNVERIFIED);
    }
}

void listen_fsm_replied(struct listen_fsm *f, int64_t now, const struct listen_reply *r)
{
    enum listen_cmd cmd = f->inflight;
    f->inflight = LISTEN_CMD_NONE;
    if (f->phase == P_DONE || cmd == LISTEN_CMD_NONE)
        return;
    bool ok = r->err == 0 && r->hr == 0;
    if (f->stopped && cmd != LISTEN_CMD_RESUME && cmd != LISTEN_CMD_VERIFY) {
        if (!(f->paused && !f->resume_sent))
            finish(f, cmd == LISTEN_CMD_ATTACH && ok ? LISTEN_END_ATTACHED : LISTEN_END_FAILED);
        return;
    }
    switch (cmd) {
    case LISTEN_CMD_PROCESS_INFO: replied_info(f, r); return;
    case LISTEN_CMD_ENVIRONMENT: replied_env(f, r); return;
    case LISTEN_CMD_SETENV: replied_setenv(f, r); return;
    case LISTEN_CMD_STARTUP: replied_startup(f, now, r); return;
    case LISTEN_CMD_ATTACH: replied_attach(f, now, r); return;
    case LISTEN_CMD_RESUME: replied_resume(f, now, r); return;
    case LISTEN_CMD_VERIFY: replied_verify(f, now, r); return;
    case LISTEN_CMD_NONE: return;
    }
}

void listen_fsm_unsent(struct listen_fsm *f)
{
    f->inflight = LISTEN_CMD_NONE;
}

void listen_fsm_selected(struct listen_fsm *f, bool match)
{
    if (f->phase != P_SELECT)
        return;
    if (match)
        f->phase = P_PROBE;
    else
        leave(f, LISTEN_END_NOT_SELECTED);
}

void listen_fsm_delivered(struct listen_fsm *f, int err)
{
    if (f->phase != P_DELIVER)
        return;
    if (err < 0)
        fail(f, LISTEN_CMD_NONE, err, 0);
    else if (f->cfg.env_count)
        f->phase = P_SETENV;
    else
        after_env(f);
}

void listen_fsm_gone(struct listen_fsm *f)
{
    if (f->phase == P_DONE)
        return;
    f->inflight = LISTEN_CMD_NONE;
    finish(f, LISTEN_END_GONE);
}

void listen_fsm_connected(struct listen_fsm *f)
{
    /* The runtime holds one connection at a time: one that comes while the resume is in flight
     * follows the resume's answer, read or not yet. */
    if (f->resume_sent || f->inflight == LISTEN_CMD_RESUME)
        f->seen_after_resume = true;
}

void listen_fsm_stop(struct listen_fsm *f, int64_t now)
{
    if (f->phase == P_DONE || f->stopped)
        return;
    f->stopped = true;
    f->failed_cmd = f->inflight;
    f->err = -EINTR;
    if (f->phase == P_VERIFY) {
        /* Resumed already: what is in flight may still tell; else it ends unverified. */
        if (f->inflight == LISTEN_CMD_NONE)
            finish(f, LISTEN_END_UNVERIFIED);
    } else if (f->paused && !f->resume_sent) {
        f->end_after_resume = LISTEN_END_FAILED;
        if (f->phase != P_RESUME)
            f->phase = P_RESUME;
        (void)now;
    } else if (f->inflight == LISTEN_CMD_NONE) {
        finish(f, LISTEN_END_FAILED);
    }
}

enum listen_end listen_fsm_end(const struct listen_fsm *f)
{
    return f->phase == P_DONE ? f->end : LISTEN_END_NONE;
}

const char *listen_cmd_name(enum listen_cmd c)
{
    static const char *const names[] = {
        [LISTEN_CMD_NONE] = "delivery",
        [LISTEN_CMD_PROCESS_INFO] = "ProcessInfo",
        [LISTEN_CMD_ENVIRONMENT] = "ProcessEnvironment",
        [LISTEN_CMD_SETENV] = "SetEnvironmentVariable",
        [LISTEN_CMD_STARTUP] = "StartupProfiler",
        [LISTEN_CMD_ATTACH] = "AttachProfiler",
        [LISTEN_CMD_RESUME] = "ResumeRuntime",
        [LISTEN_CMD_VERIFY] = "AttachProfiler (verification)",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

const char *listen_end_name(enum listen_end e)
{
    static const char *const names[] = {
        [LISTEN_END_NONE] = "running",
        [LISTEN_END_STARTUP_LOADED] = "loaded_at_startup",
        [LISTEN_END_ATTACHED] = "attached",
        [LISTEN_END_NOT_SELECTED] = "not_selected",
        [LISTEN_END_STARTUP_ONLY] = "startup_only_profiler",
        [LISTEN_END_ENV_RUNNING] = "env_needs_pause",
        [LISTEN_END_FAILED] = "failed",
        [LISTEN_END_GONE] = "gone",
        [LISTEN_END_STARTUP_FAILED] = "startup_load_failed",
        [LISTEN_END_UNVERIFIED] = "unverified",
    };
    return (unsigned)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}
