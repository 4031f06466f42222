/* SPDX-License-Identifier: Apache-2.0 */
/* The steps of one attempt every flow shares once the runtime is reached: the nonce and the
 * delivery, the stages of the seccomp filter, a refused delivery undone, an app that died without
 * an answer, and the ResumeRuntime owed to a runtime that may be paused at startup. */
#include "flow/attempt.h"

#include <errno.h>
#include <string.h>

#include "base/render.h"
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

int attempt_stage(int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e),
                  void *userdata, enum attach_stage s, struct attach_result *res, int r)
{
    struct cla_error se = {0};
    int sr = on_stage ? on_stage(s, userdata, &se) : 0;
    if (sr < 0 && r >= 0) {
        res->error = se;
        return attach_fail(res, ATTACH_INTERNAL, sr);
    }
    return r;
}

/* The reply stage of the seccomp filter: after this nothing more is written into the target, and
 * no new connection to it is made, so an owed ResumeRuntime goes out first. `r` is the attach's
 * result so far: a failure to tighten only becomes the outcome when the attach itself
 * succeeded. */
int attempt_tighten_replied(struct attempt *a, int r)
{
    const struct attach_opts *o = a->o;
    attempt_resume(a);
    int sr = attempt_stage(o->on_stage, o->userdata, ATTACH_STAGE_REPLIED, a->res, r);
    return r >= 0 ? sr : 0;
}

int attempt_nonce(const char *given, char *ret, struct attach_result *res)
{
    int r;
    if (given && !deliver_nonce_valid(given))
        return attach_fail(res, ATTACH_INTERNAL, err_set(&res->error, -EINVAL, "malformed nonce"));
    if (given)
        memcpy(ret, given, DELIVER_NONCE_LEN + 1);
    else if ((r = deliver_new_nonce(ret)) < 0)
        return attach_fail(res, ATTACH_INTERNAL, err_setsys(&res->error, r, "getrandom"));
    return 0;
}

int attempt_place(struct target *t, const struct place_opts *po, struct attach_stop *stop,
                  struct placed *ret, struct attach_result *res)
{
    /* From here a stop must wait until what this run writes is removed (attach_stop). */
    if (stop)
        stop->defer = 1;
    int r = place_profiler(t, po, ret, res->placement, sizeof(res->placement), &res->error);
    if (r < 0) {
        if (stop && stop->signal)
            (void)place_sweep(t, po);
        return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DELIVERY, r);
    }
    render_text(ret->path, strlen(ret->path), res->delivered_path, sizeof(res->delivered_path));
    if (ret->is_dir)
        render_text(ret->top, strlen(ret->top), res->delivered_dir, sizeof(res->delivered_dir));
    memcpy(res->sha256, ret->sha256, sizeof(res->sha256));
    res->reused = ret->reused;
    return 0;
}

bool attempt_died_unanswered(struct target *t, int r, int64_t wait_ms, int64_t sent_at,
                             struct attach_result *res)
{
    int64_t unused;
    if (r >= 0 || r == -ETIMEDOUT || r == -EACCES ||
        (target_check_alive(t, NULL) >= 0 && target_settle(t, wait_ms, &unused) != 1))
        return false;
    res->died = true;
    res->died_after_ms = util_now_ms() - sent_at;
    return true;
}
