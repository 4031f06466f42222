/* SPDX-License-Identifier: Apache-2.0 */
/* The startup load of an attach (--startup): the --env variables, StartupProfiler, and the
 * profiler looked for in the maps once the runtime was resumed. */
#include "flow/startup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "flow/attach_explain.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "target/proc_maps.h"
#include "target/target.h"

/* --startup: how long the profiler is looked for in the maps after the resume, at least: the
 * runtime loads it as it starts up, a moment after it answered ResumeRuntime. */
#define STARTUP_MAP_WAIT_MIN_MS 1000
#define STARTUP_MAP_POLL_MS     50
/* StartupProfiler's answer from a runtime that is not paused at startup. */
#define HR_E_INVALIDARG 0x80070057u

/*
 * A runtime paused at startup (DOTNET_DefaultDiagnosticPortSuspend=1) refuses AttachProfiler;
 * it accepts StartupProfiler and then loads the profiler as a startup profiler when it resumes.
 * The --env variables go first: a refused one stops the load before the runtime holds the
 * profiler, which would otherwise start without its settings. The runtime serves one command per
 * connection, so each goes on its own (runtime PR #52175). ResumeRuntime follows
 * (attempt_resume). Returns 0 with a->hr, the first refusal or 0.
 */
bool startup_probe_first(const struct attempt *a)
{
    return a->o->startup_or_attach && (!a->inert || a->o->force);
}

bool startup_found_running(const struct attempt *a)
{
    return a->o->startup_or_attach && a->inert && !a->o->force && a->res->resume_owed &&
           a->env_done && a->hr == HR_E_INVALIDARG;
}

int startup_load(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct cla_error *e = &a->res->error;
    int r = attempt_send_env(a);
    if (r < 0 || a->hr != 0)
        return r;
    const char *load = attempt_load_path(a); /* the env loader's, when --env is given */
    size_t room = ipc_startup_frame_room(load);
    _cleanup_free_ uint8_t *req = malloc(room);
    if (!req)
        return err_set(e, -ENOMEM, "out of memory");
    int n = ipc_encode_startup(&o->clsid, load, req, room, e);
    if (n < 0)
        return n;
    a->startup_sent = true;
    return ipc_conn_status_command(a->c.sockfd, &a->c.peer, req, (size_t)n,
                                   attempt_exchange_deadline(a), &a->hr, e);
}

/*
 * StartupProfiler was taken and ResumeRuntime sent: the runtime's S_OK only says it stored the
 * profiler. Whether it loaded it shows when the library appears in the app's maps as the runtime
 * starts up: looked for through the pinned process for the settle time (at least
 * STARTUP_MAP_WAIT_MIN_MS), then the app is watched for the rest of it.
 */
int startup_settle(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct target *t = a->t;
    struct cla_error *e = &res->error;
    int r;
    if (!res->resumed) {
        attempt_undo_delivery(a);
        attempt_tighten_replied(a, -EPROTO);
        err_set(e, -EPROTO,
                "the runtime took the profiler (StartupProfiler) but did not answer "
                "ResumeRuntime with success: the app may still be paused at startup");
        err_hint(e, "run 'clrattach attach --startup' on it again, or restart the app");
        return attach_fail(res, ATTACH_PROTOCOL, -EPROTO);
    }
    int64_t wait = o->settle_ms > STARTUP_MAP_WAIT_MIN_MS ? o->settle_ms : STARTUP_MAP_WAIT_MIN_MS;
    int64_t start = util_now_ms(), left;
    const char *name = strrchr(a->p.path, '/') + 1;
    while (!(res->mapped = target_maps_has(t, name) == 1) &&
           (left = start + wait - util_now_ms()) > 0)
        if (target_settle(t, left < STARTUP_MAP_POLL_MS ? left : STARTUP_MAP_POLL_MS,
                          &res->died_after_ms) == 1) {
            res->died = true;
            break;
        }
    left = start + o->settle_ms - util_now_ms();
    if (res->mapped && left > 0 && target_settle(t, left, &res->died_after_ms) == 1)
        res->died = true;
    res->settle_wait_ms = util_now_ms() - start;
    if (res->died)
        res->died_after_ms = util_now_ms() - a->sent_at;
    if (!res->mapped)
        attempt_undo_delivery(a);
    if ((r = attempt_tighten_replied(a, 0)) < 0)
        return r;
    if (res->died) {
        attach_explain_answer(t, a->hr, true, res, e);
        return attach_fail(res, ATTACH_TARGET_DIED, -ESRCH);
    }
    if (!res->mapped) {
        attach_explain_startup_unmapped(res->delivered_path, wait, e);
        return attach_fail(res, ATTACH_STARTUP_FAILED, -EREMOTEIO);
    }
    res->outcome = ATTACH_STARTUP_LOADED;
    return 0;
}
