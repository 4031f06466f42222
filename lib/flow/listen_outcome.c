/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s outcome mapping: how one runtime instance's machine ended, in the terms of an
 * attach result (outcome, message, next step; docs/exit-codes.md), and the word said of a
 * runtime the selectors left alone.
 */
#include "flow/listen_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/render.h"
#include "base/util.h"
#include "runtime/hresult.h"

/* Said once per instance, on the warning channel: a selector that never matches (a paused
 * runtime reports only the host's path as its command line) otherwise looks like a sidecar that
 * does nothing. The entry assembly and command line are the app's bytes: rendered. */
void listen_not_selected(struct loop *l, const struct inst *in)
{
    if (!l->o->on_warning || (l->o->once && l->chosen))
        return;
    char entry[128] = "?";
    const char *ea = in->pi.entrypoint_assembly;
    if (in->have_pi && ea)
        render_text(ea, strlen(ea), entry, sizeof(entry));
    struct cla_error w = {0};
    err_set(&w, -ESRCH,
            "runtime namespace pid %d (entry assembly %s, command line %s) does not match the "
            "selectors: left without a profiler (resumed if it was paused)",
            (int)in->res.nspid, entry, in->res.command_line[0] ? in->res.command_line : "?");
    err_hint(&w, "check --match-entry/--match-cmdline against 'clrattach ps' or this line");
    l->o->on_warning(&w, l->o->userdata);
}

void listen_resume_hint(const char *next_step, const struct listen_fsm *f, char *out, size_t size)
{
    const char *step = next_step && next_step[0] ? next_step : "nothing more was sent";
    const char *state = f->resumed ? "; the runtime was resumed"
                        : f->resume_answered
                            ? "; the runtime refused ResumeRuntime: the app may still be paused"
                            : "; ResumeRuntime got no answer: the app may still be paused, or "
                              "resumed without saying so";
    size_t sl = strlen(state), n = strlen(step);
    if (size <= sl) {
        snprintf(out, size, "%s", state + 2);
        return;
    }
    if (n > size - 1 - sl)
        n = size - 1 - sl;
    snprintf(out, size, "%.*s%s", (int)n, step, state);
}

/* Resumed, and the verification says the startup load failed: verify_hr tells how. */
static void startup_failed(struct loop *l, struct inst *in)
{
    const struct listen_fsm *f = &in->fsm;
    struct cla_error *e = &in->res.error;
    char vhr[16];
    hresult_format(f->verify_hr, vhr, sizeof(vhr));
    in->res.outcome = ATTACH_STARTUP_FAILED;
    /* The answer that tells: the verification's, not StartupProfiler's S_OK. */
    in->res.have_hresult = true;
    in->res.hresult = f->verify_hr;
    if (f->verify_hr == 0) {
        /* Loaded now, on attach: what was delivered stays (it is mapped). */
        err_set(e, -EREMOTEIO,
                "the runtime took StartupProfiler and was resumed, but did not load the "
                "profiler as it started: AttachProfiler with the same path and CLSID, sent to "
                "verify the load, was accepted, so it now runs as an attached profiler");
        err_hint(e, "the profiler refused its startup Initialize: its own log may say why "
                    "(the runtime writes nothing of it on the app's console)");
        return;
    }
    listen_undo(l, in);
    err_set(e, -EREMOTEIO,
            "the runtime took StartupProfiler and was resumed, but did not load the profiler "
            "as it started: AttachProfiler with the same path and CLSID, sent to verify the "
            "load, was answered %s (%s). Likely causes: a wrong --clsid "
            "(CLASS_E_CLASSNOTAVAILABLE), the library or one it needs missing in the app's "
            "view, a build for another architecture or libc (ERROR_MOD_NOT_FOUND)",
            hresult_lookup(f->verify_hr)->name, vhr);
    err_hint(e, "the app runs on without it. %s", hresult_lookup(f->verify_hr)->next_step);
}

/* Resumed after StartupProfiler, neither loaded nor failed: what was delivered stays, it may be
 * mapped. That the app runs on is said only of a runtime that connected again after the resume:
 * one that exited as it resumed never does. */
static void unverified(struct inst *in)
{
    const struct listen_fsm *f = &in->fsm;
    struct cla_error *e = &in->res.error;
    in->res.outcome = ATTACH_PROTOCOL;
    err_set(e, -ETIMEDOUT,
            "the runtime took StartupProfiler and was resumed, but %s: whether it loaded the "
            "profiler is not known",
            f->stopped ? "clrattach was stopped before the load could be verified"
            : f->seen_after_resume
                ? "did not answer the verification (AttachProfiler) within --timeout"
                : "did not connect again within --timeout to be asked (it may have exited as it "
                  "resumed)");
    if (f->seen_after_resume)
        err_hint(e, "the app runs on; the profiler's own log tells whether it started (the "
                    "runtime writes nothing of a failed load on the app's console)");
    else
        err_hint(e, "the runtime was not seen after the resume: the app's own state (a restart, an "
                    "exit) tells whether it is running, the profiler's log whether it started");
}

/* An end the machine names (loaded, attached, not sent and why, gone): the result for it.
 * Returns false for LISTEN_END_FAILED, which failed() maps. */
static bool named_end(struct loop *l, struct inst *in)
{
    struct attach_result *res = &in->res;
    const struct listen_fsm *f = &in->fsm;
    struct cla_error *e = &res->error;
    switch (listen_fsm_end(f)) {
    case LISTEN_END_STARTUP_LOADED:
        res->outcome = ATTACH_STARTUP_LOADED;
        snprintf(res->verify_note, sizeof(res->verify_note),
                 "after the resume, AttachProfiler with the same path and CLSID was answered "
                 "CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A): the runtime has a profiler "
                 "loaded");
        err_clear(e);
        return true;
    case LISTEN_END_STARTUP_FAILED: startup_failed(l, in); return true;
    case LISTEN_END_UNVERIFIED: unverified(in); return true;
    case LISTEN_END_ATTACHED:
        res->outcome = ATTACH_OK;
        err_clear(e);
        return true;
    case LISTEN_END_STARTUP_ONLY:
        res->outcome = ATTACH_INERT;
        err_set(e, -EOPNOTSUPP,
                "the runtime does not pause at startup (a nosuspend port) and the profiler does "
                "nothing when attached to a running runtime: not sent");
        err_hint(e, "start the app with the default 'suspend' tag in DOTNET_DiagnosticPorts, or "
                    "--force to attach it anyway");
        return true;
    case LISTEN_END_ENV_RUNNING:
        res->outcome = ATTACH_NOT_READY;
        err_set(e, -EBUSY,
                "the runtime does not pause at startup: --env would change a running app; "
                "nothing was sent");
        err_hint(e, "drop 'nosuspend' from DOTNET_DiagnosticPorts, or --force to set them");
        return true;
    case LISTEN_END_GONE:
        res->outcome = in->delivered ? ATTACH_TARGET_DIED : ATTACH_NOT_FOUND;
        err_set(e, -ESRCH, "the runtime stopped connecting (the app exited?)");
        listen_undo(l, in);
        return true;
    default: return false;
    }
}

/* A failure after StartupProfiler took the path: the runtime loads what was delivered once it
 * resumes, whatever happens here, so it is kept (removing it would turn a late load into a
 * failed one), and the message says why. */
static void say_kept(struct cla_error *e, const struct listen_fsm *f)
{
    /* Room for all: err_set cuts what does not fit its message. */
    char msg[sizeof(e->msg) + 128], hint[sizeof(e->hint)];
    snprintf(hint, sizeof(hint), "%s", e->hint);
    snprintf(msg, sizeof(msg),
             "%s; what was delivered is kept: the runtime took StartupProfiler with its path and "
             "%s",
             e->msg,
             f->resumed ? "was resumed, so it may be loading it" : "may still resume and load it");
    err_set(e, e->code, "%s", msg);
    if (hint[0])
        err_hint(e, "%s", hint);
}

/* Failed: which step, and how; and whether the runtime was resumed. */
static void failed(struct loop *l, struct inst *in)
{
    struct attach_result *res = &in->res;
    const struct listen_fsm *f = &in->fsm;
    struct cla_error *e = &res->error;
    char hr[16];
    hresult_format(f->hr, hr, sizeof(hr));
    if (!f->startup_taken)
        listen_undo(l, in);
    if (f->err == -EINTR) {
        res->outcome = ATTACH_INTERRUPTED;
        err_set(e, -EINTR, "stopped by a signal before the profiler was loaded%s",
                f->resumed ? "; the runtime was resumed" : "");
    } else if (f->deadline_hit) {
        res->outcome = ATTACH_PROTOCOL;
        err_set(e, -ETIMEDOUT,
                "--resume-deadline (%lld ms) passed before the profiler could be handed over; "
                "the runtime was resumed without it",
                (long long)l->o->resume_deadline_ms);
    } else if (f->failed_cmd == LISTEN_CMD_NONE) {
        res->outcome = ATTACH_DELIVERY;
        err_prefix(e, "delivery into --deliver-dir");
    } else if (f->err < 0) {
        res->outcome = ATTACH_PROTOCOL;
        if (!e->msg[0])
            err_set(e, f->err, "%s: no answer", listen_cmd_name(f->failed_cmd));
        else
            err_prefix(e, "%s", listen_cmd_name(f->failed_cmd));
    } else if (f->failed_cmd == LISTEN_CMD_PROCESS_INFO) {
        /* The first question refused: no profiler was delivered or sent, nothing was loaded. */
        res->outcome = ATTACH_PROTOCOL;
        res->have_hresult = true;
        res->hresult = f->hr;
        err_set(e, -EREMOTEIO,
                "the runtime refused ProcessInfo, the first command: %s (%s); nothing was "
                "delivered and no profiler was sent",
                hresult_lookup(f->hr)->name, hr);
        err_hint(e,
                 "a .NET runtime answers ProcessInfo: check that what connects to the socket "
                 "is the app's runtime (the one DOTNET_DiagnosticPorts points here), not another "
                 "process");
    } else {
        res->outcome = attach_outcome_of_hresult(f->hr);
        if (res->outcome == ATTACH_OK)
            res->outcome = ATTACH_LOAD_FAILED;
        res->have_hresult = true;
        res->hresult = f->hr;
        err_set(e, -EREMOTEIO, "the runtime refused %s: %s (%s)", listen_cmd_name(f->failed_cmd),
                hresult_lookup(f->hr)->name, hr);
        err_hint(e, "%s", hresult_lookup(f->hr)->next_step);
    }
    if (f->startup_taken)
        say_kept(e, f);
    if (f->resume_sent) {
        /* Composed apart: the hint is an argument of its own rewrite. */
        char hint[sizeof(e->hint)];
        listen_resume_hint(e->hint, f, hint, sizeof(hint));
        err_hint(e, "%s", hint);
    }
}

void listen_fill_outcome(struct loop *l, struct inst *in)
{
    struct attach_result *res = &in->res;
    const struct listen_fsm *f = &in->fsm;
    res->resume_owed = res->resume_owed || f->resume_sent;
    res->startup_load = f->startup_taken || listen_fsm_end(f) == LISTEN_END_STARTUP_LOADED ||
                        listen_fsm_end(f) == LISTEN_END_STARTUP_FAILED ||
                        listen_fsm_end(f) == LISTEN_END_UNVERIFIED;
    res->duration_ms = util_now_ms() - f->started;
    if (!named_end(l, in))
        failed(l, in);
}
