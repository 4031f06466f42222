/* SPDX-License-Identifier: Apache-2.0 */
/* The full look's filesystem part (diag_socket_find, diag_socket_open) for a pinned target,
 * asked of the index's helper: an answer that does not come marks the process unreachable. */
#include "target/procindex_internal.h"

#include <errno.h>
#include <string.h>

#include "base/util.h"

/* The record of `pid` in the last scan (sorted by pid), or NULL. */
static struct procindex_rec *find_rec(struct procindex *x, pid_t pid)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->v[mid].pub.pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->n && x->v[lo].pub.pid == pid ? &x->v[lo] : NULL;
}

/* One full-look request for the pinned `t`, through the helper. A request not answered marks
 * the process (its group, when it has one) unreachable, as a directory that did not answer. */
static int socket_call(struct procindex *x, uint32_t op, const struct target *t,
                       const struct diag_socket *s, struct px_socket_reply **ret, int *ret_fd,
                       struct cla_error *e)
{
    struct px_socket_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    q.pid = t->pid;
    q.starttime = t->stat.starttime;
    q.scan = x->scans;
    if (s)
        memcpy(q.name, s->name, sizeof(q.name));
    _cleanup_free_ struct px_socket_reply *a = NULL;
    size_t len = 0;
    pid_t stuck = 0;
    *ret_fd = -1;
    /* One that did not answer before (its directory, or its own look: ps looks at every member
     * of a group the scan flagged) is not asked again until its back-off ends. */
    struct procindex_rec *rc = find_rec(x, t->pid);
    struct procindex_stall *st = rc ? (rc->g ? &rc->g->stall : &rc->stall) : NULL;
    int r = st && procindex_stall_active(x, st, x->now_ms) ? -ETIMEDOUT : 0;
    if (r == 0) {
        r = fsworker_call(x->w, &q, sizeof(q), -1, PROCINDEX_ANSWER_MS, (void **)&a, &len, ret_fd,
                          &stuck);
        if (r == 0 && len != sizeof(*a))
            r = -EPROTO;
        if (st && procindex_is_stall(r))
            procindex_stall_mark(x, rc->g, st, t->pid, t->tmpdir, t->status.uid[1], r, stuck);
    }
    if (r < 0) {
        util_closep(ret_fd);
        if (r == -ETIMEDOUT)
            return err_set(e, -ETIMEDOUT,
                           "its TMPDIR did not answer within %d ms: the filesystem there has "
                           "stopped answering (a hung mount?)",
                           PROCINDEX_ANSWER_MS);
        if (r == -EAGAIN)
            return err_set(e, -ETIMEDOUT,
                           "its TMPDIR could not be looked at: %d helpers are stuck in "
                           "filesystems that stopped answering",
                           FSWORKER_STUCK_MAX);
        return err_setsys(e, r, "the helper for pid %d's files", (int)t->pid);
    }
    if (a->r < 0) { /* the helper's own answer: its error, as the look in place gave it */
        util_closep(ret_fd);
        if (e) {
            a->msg[sizeof(a->msg) - 1] = '\0';
            a->hint[sizeof(a->hint) - 1] = '\0';
            e->code = a->code < 0 ? a->code : a->r;
            memcpy(e->msg, a->msg, sizeof(e->msg));
            memcpy(e->hint, a->hint, sizeof(e->hint));
        }
        return a->r;
    }
    *ret = util_take_ptr(&a);
    return 0;
}

int procindex_socket_find(struct procindex *x, const struct target *t, struct diag_socket *ret,
                          struct cla_error *e)
{
    _cleanup_free_ struct px_socket_reply *a = NULL;
    int fd;
    int r = socket_call(x, PX_SOCKET_FIND, t, NULL, &a, &fd, e);
    util_closep(&fd);
    if (r < 0)
        return r;
    struct diag_socket s = {.state = (enum socket_state)a->state};
    if (a->state > SOCKET_DIR_ERROR)
        return err_set(e, -EPROTO, "the helper for pid %d: a socket state out of range",
                       (int)t->pid);
    memcpy(s.name, a->s.name, sizeof(s.name));
    s.name[sizeof(s.name) - 1] = '\0';
    s.key = a->s.key;
    s.candidates = a->s.candidates;
    s.stale = a->s.stale;
    s.dir_errno = a->s.dir_errno;
    s.file_type = a->s.file_type;
    s.owner = (uid_t)a->s.owner;
    *ret = s;
    return 0;
}

int procindex_hint_runtime(struct procindex *x, const struct target *t, struct cla_error *e)
{
    if (x->ev_fd < 0)
        return 0; /* ps, or watch without events: nothing reads the hints */
    _cleanup_free_ struct px_socket_reply *a = NULL;
    int fd;
    int r = socket_call(x, PX_HINT_PLACE, t, NULL, &a, &fd, e);
    util_closep(&fd);
    return r < 0 ? r : (int)a->r;
}

int procindex_socket_open(struct procindex *x, const struct target *t, const struct diag_socket *s,
                          struct cla_error *e)
{
    _cleanup_free_ struct px_socket_reply *a = NULL;
    int fd;
    int r = socket_call(x, PX_SOCKET_OPEN, t, s, &a, &fd, e);
    if (r < 0)
        return r;
    if (fd < 0)
        return err_set(e, -EPROTO, "the helper for pid %d: no socket came back", (int)t->pid);
    return fd;
}
