/* SPDX-License-Identifier: Apache-2.0 */
/* One attempt on its way out: the ResumeRuntime owed to a runtime that may be paused at startup,
 * the undo of a refused delivery, and the reply stage of the seccomp filter. */
#include "flow/attempt.h"

#include <errno.h>

#include "base/util.h"
#include "flow/attach_explain.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "target/diag_socket.h"
#include "target/target.h"

/* How long the ResumeRuntime owed to a paused runtime may take, at most (--timeout if less). */
#define RESUME_WAIT_MS 5000

void attempt_owe_resume(struct attempt *a)
{
    if (a->res->resume_owed)
        return;
    a->res->resume_owed = true;
    a->resume_by = util_now_ms() + a->o->resume_deadline_ms;
    if (a->o->stop)
        a->o->stop->defer = 1;
}

/* ResumeRuntime on the socket `sockfd` of `peer`, answered by `deadline_ms`: true when the
 * runtime answered it with success. */
static bool send_resume(int sockfd, const struct ipc_peer *peer, int64_t deadline_ms)
{
    uint8_t req[IPC_HEADER_SIZE];
    struct cla_error re = {0};
    uint32_t hr = 0;
    int n = ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_RESUME, req, sizeof(req), &re);
    return n >= 0 &&
           ipc_conn_status_command(sockfd, peer, req, (size_t)n, deadline_ms, &hr, &re) == 0 &&
           hr == 0;
}

/*
 * ResumeRuntime, owed to a runtime that may be paused at startup (attempt_owe_resume) and sent
 * once, on every way out of the attach: after StartupProfiler, on a refusal, a failed step, a stop,
 * our own deadline. A runtime that already runs takes it as a no-op (the server sets its resume
 * event again), so owing it on the word of the app's environment alone is safe. It goes out
 * before the reply stage of the seccomp filter, which forbids new AF_UNIX sockets. A SIGKILL
 * cannot be handled: then nothing is sent, and the app stays paused (docs/profiler.md), unless
 * a watcher ran this attach: it resumes the app after its child (attempt_resume_pinned).
 */
void attempt_resume(struct attempt *a)
{
    struct attach_result *res = a->res;
    if (!res->resume_owed || a->resume_sent || a->c.sockfd < 0)
        return;
    a->resume_sent = true;
    int64_t wait = a->o->timeout_ms < RESUME_WAIT_MS ? a->o->timeout_ms : RESUME_WAIT_MS;
    res->resumed = send_resume(a->c.sockfd, &a->c.peer, util_now_ms() + wait);
    res->resumed_after_ms = util_now_ms() - a->start_ms;
}

int attempt_resume_pinned(struct target *t, int64_t deadline_ms)
{
    if (!attach_explain_suspend_configured(t))
        return 0;
    struct diag_socket s;
    if (diag_socket_find(t, NULL, &s, NULL) < 0 ||
        (s.state != SOCKET_FOUND && s.state != SOCKET_FOUND_UNKEYED))
        return -ENOENT;
    _cleanup_close_ int fd = diag_socket_open(t, &s, NULL);
    if (fd < 0)
        return fd;
    struct ipc_peer peer = {.pid = t->pid, .uid = t->status.uid[1]};
    return send_resume(fd, &peer, deadline_ms) ? 1 : -EREMOTEIO;
}

int64_t attempt_exchange_deadline(const struct attempt *a)
{
    int64_t d = util_now_ms() + a->o->timeout_ms;
    return a->res->resume_owed && a->resume_by < d ? a->resume_by : d;
}

void attempt_undo_delivery(struct attempt *a)
{
    if (!a->o->keep)
        a->res->removed = place_undo(a->t, &a->p);
}

/* The reply stage of the seccomp filter: after this nothing more is written into the target, and
 * no new connection to it is made, so an owed ResumeRuntime goes out first. `r` is the attach's
 * result so far: a failure to tighten only becomes the outcome when the attach itself
 * succeeded. */
int attempt_tighten_replied(struct attempt *a, int r)
{
    const struct attach_opts *o = a->o;
    attempt_resume(a);
    if (!o->on_stage)
        return 0;
    struct cla_error se = {0};
    int sr = o->on_stage(ATTACH_STAGE_REPLIED, o->userdata, &se);
    if (sr < 0 && r >= 0) {
        a->res->error = se;
        return attach_fail(a->res, ATTACH_INTERNAL, sr);
    }
    return 0;
}
