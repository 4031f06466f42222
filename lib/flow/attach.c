/* SPDX-License-Identifier: Apache-2.0 */
/* The attach flow, step by step: the inputs checked, the runtime reached, the profiler delivered,
 * AttachProfiler (or the startup load) sent, and the answer settled with evidence from outside. */
#include "flow/attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/util.h"
#include "flow/attach_check.h"
#include "flow/attach_explain.h"
#include "flow/attach_holder.h"
#include "flow/startup.h"
#include "profset/target_rid.h"
#include "runtime/hresult.h"
#include "target/creds.h"
#include "target/procindex.h"
#include "target/target.h"

#define HR_NOT_YET_AVAILABLE ATTACH_HR_NOT_YET_AVAILABLE

/* After the runtime was reached: a runtime that may be paused is owed its resume, and --env
 * for one that runs is refused before anything is delivered. */
static int ask_runtime(struct attempt *a)
{
    struct target *t = a->t;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    /* --startup on a runtime whose environment asks it to pause at startup: it may be waiting
     * for us now, and is resumed on every way out from here. */
    if (a->o->startup && attach_explain_suspend_configured(t)) {
        attempt_owe_resume(a);
    } else if (a->o->startup_or_attach && a->inert && !a->o->force) {
        /* watch --startup: an app whose environment does not pause it runs; the variables are
         * for a paused one only (and are not sent here). */
        return attach_check_refuse_inert(res, a->inert,
                                         " (its environment does not pause it at startup)");
    } else if (a->o->env_count && !a->o->force && !a->o->startup_or_attach) {
        err_set(e, -EALREADY,
                "--env: pid %d's environment does not ask its runtime to pause at startup "
                "(DOTNET_DefaultDiagnosticPortSuspend=1): it runs, and its profiler would never "
                "read variables set now; nothing was sent",
                (int)t->pid);
        err_hint(e, "restart the app with DOTNET_DefaultDiagnosticPortSuspend=1 and attach "
                    "--startup --env, or --force to set them in the running app anyway");
        return attach_fail(res, ATTACH_NOT_READY, -EALREADY);
    }
    return 0;
}

/* Has a signal asked the attach to stop (attach_stop)? */
static bool stop_asked(const struct attempt *a)
{
    return a->o->stop && a->o->stop->signal;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

/* Before AttachProfiler goes out, a stop takes back what this run put in the target: the
 * profiler it delivered (not one it reused) and any temporary named with its nonce, left by a
 * delivery cut short. Then the attach ends as interrupted. Returns 0 when no stop was asked. */
static int check_stop(struct attempt *a)
{
    if (!stop_asked(a))
        return 0;
    struct attach_result *res = a->res;
    res->removed = place_undo(a->t, &a->p);
    (void)place_sweep(a->t, &a->po);
    err_set(&res->error, -EINTR, "stopped by %s before %s was sent",
            signal_name(a->o->stop->signal),
            res->resume_owed ? "StartupProfiler" : "AttachProfiler");
    err_hint(&res->error, "%s; the runtime was not asked to load the profiler%s",
             res->removed ? "what this run delivered was removed" : "nothing of this run is left",
             res->resume_owed ? ", and is resumed without it" : "");
    return attach_fail(res, ATTACH_INTERRUPTED, -EINTR);
}

/* The build for the target's runtime identifier, placed in the first directory of its view that
 * takes it. */
static int choose_and_deliver(struct attempt *a, const struct profset *ps)
{
    struct attach_result *res = a->res;
    struct target_rid_input in = {
        .option = a->o->rid, .force = a->o->force_rid, .runtime_rid = res->runtime_rid};
    enum target_rid_source source;
    int r;
    if ((r = target_rid_detect(a->t, &in, &a->rid, &source, &res->error)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    res->rid_source = attach_rid_sources[source];
    snprintf(res->target_rid, sizeof(res->target_rid), "%s", a->rid.portable);
    if ((r = profset_choose(ps, &a->rid, &a->build, &res->error)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    memcpy(res->variant, a->build->variant, sizeof(res->variant));
    if ((r = attempt_wrap(a)) < 0)
        return r;

    if ((r = attempt_nonce(a->o->nonce, a->nonce, res)) < 0)
        return r;
    a->po = (struct place_opts){
        .build = a->build, .user_dir = a->o->target_dir, .uid = res->uid, .nonce = a->nonce};
    if ((r = attempt_place(a->t, &a->po, a->o->stop, &a->p, res)) < 0 ||
        (r = attempt_wrapped_placed(a)) < 0)
        return r;
    return check_stop(a);
}

/* The AttachProfiler frame, encoded while unlink is still allowed: a frame that cannot be built
 * undoes the delivery. */
static int encode_request(struct attempt *a)
{
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    _cleanup_free_ uint8_t *cd = NULL;
    int n = attach_check_client_data(a->o, &a->p, &cd, e);
    if (n >= 0) {
        const char *load = attempt_load_path(a);
        size_t cd_len = (size_t)n, room = ipc_attach_frame_room(load, cd_len);
        a->req = malloc(room);
        n = a->req ? ipc_encode_attach(a->o->attach_timeout_ms, &a->o->clsid, load, cd, cd_len,
                                       a->req, room, e)
                   : -ENOMEM;
    }
    if (n < 0) {
        attempt_undo_delivery(a);
        attempt_resume(a);
        if (n == -ENOMEM)
            return attach_fail(res, ATTACH_INTERNAL, err_set(e, n, "out of memory"));
        err_hint(e, "client data and the profiler's path share one frame of %d bytes",
                 IPC_MAX_MESSAGE);
        return attach_fail(res, ATTACH_USAGE, n);
    }
    a->req_len = (size_t)n;
    return 0;
}

/* AttachProfiler answered "not yet available" by a runtime that is only starting (young, its
 * environment not pausing it, no --startup): asked again every ATTACH_NOT_YET_STEP_MS within
 * ATTACH_NOT_YET_RETRY_MS of the first send (bounds.h), the pid checked to be the same process
 * before each, a stop honoured. Returns 0 with a->hr, the last answer, or a failure. */
static int retry_not_yet(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct cla_error *e = &a->res->error;
    if (o->startup || attach_explain_suspend_configured(a->t) ||
        procindex_age_ms(a->t->stat.starttime) >= ATTACH_NOT_YET_YOUNG_MS)
        return 0;
    int64_t until = a->sent_at + ATTACH_NOT_YET_RETRY_MS;
    int r = 0;
    while (r == 0 && a->hr == HR_NOT_YET_AVAILABLE &&
           util_now_ms() + ATTACH_NOT_YET_STEP_MS <= until) {
        struct timespec ts = {.tv_nsec = ATTACH_NOT_YET_STEP_MS * 1000000L};
        (void)nanosleep(&ts, NULL);
        if ((r = check_stop(a)) < 0)
            return r;
        if ((r = target_check_alive(a->t, e)) < 0)
            return attach_fail(a->res, ATTACH_NOT_FOUND, r);
        r = ipc_conn_status_command(a->c.sockfd, &a->c.peer, a->req, a->req_len,
                                    util_now_ms() + o->timeout_ms, &a->hr, e);
    }
    return r;
}

/* Sends AttachProfiler (StartupProfiler and ResumeRuntime for a runtime paused at startup).
 * Returns 0 with a->hr, the runtime's answer. */
static int send_request(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    int r;
    /* The last moment a stop is honoured: the next stage forbids unlink. */
    if ((r = check_stop(a)) < 0)
        return r;
    if (o->on_stage && (r = o->on_stage(ATTACH_STAGE_DELIVERED, o->userdata, e)) < 0)
        return attach_fail(res, ATTACH_INTERNAL, r);
    /* The pid must still be the process we inspected: never attach to its successor. */
    if ((r = target_check_alive(a->t, e)) < 0)
        return attach_fail(res, ATTACH_NOT_FOUND, r);
    /* clrattach's own deadline for a runtime that may be paused: past it, nothing more is sent
     * but ResumeRuntime (run()). */
    if (res->resume_owed && util_now_ms() >= a->resume_by) {
        err_set(e, -ETIMEDOUT,
                "--resume-deadline (%lld ms) passed before StartupProfiler could be sent; the "
                "runtime is resumed without the profiler",
                (long long)o->resume_deadline_ms);
        err_hint(e, "raise --resume-deadline, or look at what made the delivery slow");
        attempt_undo_delivery(a);
        return attach_fail(res, ATTACH_PROTOCOL, -ETIMEDOUT);
    }
    a->sent_at = util_now_ms();
    if (res->resume_owed && !startup_probe_first(a)) {
        r = startup_load(a);
    } else {
        /* --force: the variables go before AttachProfiler, for a profiler that reads them; a
         * watcher sends them only to a paused runtime (startup_load, below). */
        a->hr = 0;
        r = o->startup_or_attach ? 0 : attempt_send_env(a);
        if (r == 0 && a->hr == 0)
            r = ipc_conn_status_command(a->c.sockfd, &a->c.peer, a->req, a->req_len,
                                        a->sent_at + o->timeout_ms, &a->hr, e);
        if (r == 0 && a->hr == HR_NOT_YET_AVAILABLE)
            r = retry_not_yet(a);
        /* Paused although its environment did not say so (a suspend set another way). */
        if (r == 0 && a->hr == HR_NOT_YET_AVAILABLE && o->startup) {
            attempt_owe_resume(a);
            r = startup_load(a);
        }
    }
    if (r == 0)
        res->answer_ms = util_now_ms() - a->sent_at;
    if (a->env_refused)
        return r;
    /* watch --startup, an inert profiler: StartupProfiler refused, as the runtime runs. */
    if (r == 0 && startup_found_running(a)) {
        attempt_undo_delivery(a);
        attempt_tighten_replied(a, 0);
        attach_record_hresult(res, a->hr);
        res->expected_inert = false;
        return attach_check_refuse_inert(res, a->inert,
                                         o->env_count
                                             ? " (it runs: StartupProfiler was refused with "
                                               "E_INVALIDARG; the --env variables reached the "
                                               "running app, where nothing reads them)"
                                             : " (it runs: StartupProfiler was refused with "
                                               "E_INVALIDARG)");
    }
    /* (With watch --startup, a runtime owed the resume may have taken AttachProfiler: it ran.) */
    if (r == 0 && a->hr == 0 && a->startup_sent) {
        res->startup_load = true;
        res->expected_inert = false; /* Initialize runs, not InitializeForAttach */
        attempt_resume(a);
    }
    /* A connection that ends without an answer: the app may have died under the profiler (a
     * crash in InitializeForAttach, or a thread it started). Looked at briefly before it is
     * called a protocol error. */
    if (attempt_died_unanswered(a->t, r, o->settle_ms < 1000 ? o->settle_ms : 1000, a->sent_at,
                                res)) {
        attach_explain_died(res->died_after_ms, e);
        attempt_undo_delivery(a);
        attempt_tighten_replied(a, r);
        return attach_fail(res, ATTACH_TARGET_DIED, -ESRCH);
    }
    if (r < 0) {
        if (r == -ETIMEDOUT && res->resume_owed)
            err_hint(e,
                     "the runtime did not answer within --timeout or --resume-deadline (%lld ms); "
                     "it was sent ResumeRuntime without waiting longer",
                     (long long)o->resume_deadline_ms);
        else if (r == -ETIMEDOUT)
            err_hint(e,
                     "the runtime did not answer within %lld ms; the profiler's "
                     "InitializeForAttach may still be running (raise --timeout)",
                     (long long)o->timeout_ms);
        attempt_tighten_replied(a, r);
        return attach_fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r);
    }
    return 0;
}

/* The answer decoded, then checked from outside: the evidence (maps, holder) is gathered and a
 * refused delivery removed before the reply stage forbids reading and unlinking in the target. */
static int settle_answer(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct target *t = a->t;
    int r;
    attach_record_hresult(res, a->hr);
    if (res->startup_load && a->hr == 0)
        return startup_settle(a);
    res->outcome = attach_outcome_of_hresult(a->hr);
    /* A variable the runtime refused: the profiler was never handed over. */
    if (a->env_rejected) {
        attempt_undo_delivery(a);
        if ((r = attempt_tighten_replied(a, 0)) < 0)
            return r;
        err_hint(&res->error, "%s; nothing more was sent%s", hresult_lookup(a->hr)->next_step,
                 res->resume_owed ? ", and the runtime is resumed without the profiler" : "");
        return attach_fail(res, res->outcome, -EREMOTEIO);
    }
    /* The answer is not the whole truth: a profiler that failed can leave threads behind that
     * kill the app moments later. Watch the pinned process for the settle time. */
    int64_t waited_from = util_now_ms();
    if (o->settle_ms > 0 && target_settle(t, o->settle_ms, &res->died_after_ms) == 1)
        res->died = true;
    if (res->outcome == ATTACH_OK && !res->died) {
        /* Evidence from outside that the runtime really mapped our file, read after the settle
         * time: a profiler that asked to detach in the meantime (RequestProfilerDetach) has
         * been unloaded by then, if its threads have left it, and shows as not mapped. */
        res->mapped = target_maps_has(t, strrchr(a->p.path, '/') + 1) == 1;
    }
    res->settle_wait_ms = util_now_ms() - waited_from;
    if (res->outcome == ATTACH_ALREADY_ACTIVE && !res->died)
        attach_holder_find(o, t, &a->p, res);
    /* Every refusal, not only a failed load: a runtime not ready, a profiler already active, an
     * answer the protocol did not expect. What this run delivered is not loaded as this run's
     * profiler (--keep's promise), and a later run must find no leftover of it. */
    if (res->outcome != ATTACH_OK || res->died)
        attempt_undo_delivery(a);
    if ((r = attempt_tighten_replied(a, 0)) < 0)
        return r;
    if (!res->died && res->outcome == ATTACH_OK)
        return 0;
    /* An answer other than success, or an app that died after answering. */
    attach_explain_answer(t, a->hr, o->startup_or_attach ? a->startup_sent : o->startup, res,
                          &res->error);
    if (!res->died)
        return -EREMOTEIO;
    res->outcome = ATTACH_TARGET_DIED;
    return -ESRCH;
}

/*
 * The attach, step by step. The order is the safety argument: the operator's inputs before the
 * target is touched; the target read while we are still ourselves, its files and socket only
 * as its user; ProcessInfo before anything is written (a stale socket stops us there); the
 * dependency check before the runtime is asked to dlopen(); the pid re-checked just before the
 * request goes out. A runtime that may be paused at startup is resumed on every way out (run()).
 */
static int run_steps(struct attempt *a, struct creds_saved *cs, struct profset *ps)
{
    const struct attach_opts *o = a->o;
    int r;
    if ((r = attach_check_inputs(o, ps, a->res, &a->inert)) < 0)
        return r;
    if ((r = attach_reach(a->t, o->timeout_ms, cs, &a->c, a->res)) < 0)
        return r;
    if ((r = ask_runtime(a)) < 0)
        return r;
    /* A startup load of a known vendor's profiler: its own startup settings join --env. */
    if (a->res->resume_owed && (r = attempt_vendor_env(a)) < 0)
        return r;
    if ((r = choose_and_deliver(a, ps)) < 0)
        return r;
    r = attach_check_dependencies(a);
    target_maps_drop(a->t); /* its last reader */
    if (r < 0)
        return r;
    if ((r = encode_request(a)) < 0)
        return r;
    if ((r = send_request(a)) < 0)
        return r;
    return settle_answer(a);
}

static void attempt_free(struct attempt *a)
{
    target_maps_drop(a->t);
    envwrap_free(&a->wrap);
    free(a->req);
    if (a->c.sockfd >= 0)
        close(a->c.sockfd);
}

static int run(const struct attach_opts *o, struct attach_result *res, struct target *t,
               struct creds_saved *cs, struct profset *ps)
{
    _cleanup_(attempt_free) struct attempt a = {
        .o = o, .res = res, .t = t, .c.sockfd = -1, .start_ms = util_now_ms()};
    int r = run_steps(&a, cs, ps);
    /* Every way out of a run that may have left a runtime paused: ResumeRuntime (a no-op when
     * it went out already, or is not owed). */
    attempt_resume(&a);
    return r;
}

int attach_run(const struct attach_opts *o, struct target *t, struct attach_result *ret)
{
    struct attach_result *res = ret;
    memset(res, 0, sizeof(*res));
    res->pid = t->pid;
    struct creds_saved cs = {0};
    int64_t start = util_now_ms();

    struct profset ps = {0};
    int r = run(o, res, t, &cs, &ps);
    profset_free(&ps);
    if (o->stop)
        o->stop->defer = 0;

    creds_restore(&cs);
    res->duration_ms = util_now_ms() - start;
    if (r >= 0)
        err_clear(&res->error);
    return r;
}
