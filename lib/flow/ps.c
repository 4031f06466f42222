/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `clrattach ps`: every .NET process reachable from here with its socket's state, each row
 * decided as an attach would see it, and the runtimes asked for their version all at once.
 */
#include "flow/ps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/creds.h"
#include "target/diag_socket.h"
#include "runtime/ipc_conn.h"
#include "runtime/ipc_environ.h"
#include "target/proc_environ.h"
#include "target/procindex.h"
#include "base/render.h"
#include "runtime/runtime_info.h"
#include "target/target.h"
#include "base/util.h"

static int cmp_pid(const void *a, const void *b)
{
    const struct ps_entry *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static const char *diagnostics_off(const struct target *t)
{
    return proc_environ_diagnostics_off(t->environ, t->environ_len);
}

/* One of the target's variables, DOTNET_NAME else COMPlus_NAME as the runtime looks them up,
 * copied into buf; NULL when neither is set. */
static const char *clr_var(const struct target *t, const char *name, char *buf, size_t size)
{
    const char *prefixes[] = {"DOTNET_", "COMPlus_"};
    for (size_t i = 0; i < 2; i++) {
        char full[64];
        const char *v;
        size_t n;
        snprintf(full, sizeof(full), "%s%s", prefixes[i], name);
        if (target_getenv(t, full, &v, &n) == 1) {
            snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), v);
            return buf;
        }
    }
    return NULL;
}

/* Is this runtime paused at startup, waiting for a ResumeRuntime? Its environment asks for a
 * pause (a suspending diagnostic port) and System.Private.CoreLib.dll is not mapped yet: the
 * runtime pauses before it loads any managed code, and a runtime that ran has it mapped for
 * good. Without a readable environment the maps alone decide. */
static bool paused_at_startup(const struct target *t)
{
    if (t->environ) {
        char ports[4097], susp[64];
        if (!ipc_environ_pauses_vars(
                clr_var(t, "DiagnosticPorts", ports, sizeof(ports)),
                clr_var(t, "DefaultDiagnosticPortSuspend", susp, sizeof(susp))))
            return false;
    }
    return target_maps_has(t, "System.Private.CoreLib.dll") == 0;
}

/* The ProcessInfo exchanges in flight: one poll loop waits on all of them, under ONE deadline
 * for the whole listing, so runtimes that never answer cost one --timeout together, not one
 * each. A connection is made (and its peer checked) as the process's user; the wait needs no
 * credentials. */
struct ps_pending {
    size_t idx; /* into the entry list (which may move as it grows) */
    int fd;     /* connected, request sent */
    int sfd;    /* the socket's O_PATH fd, for the next attempt on an older runtime */
    int attempt;
    struct creds_target ct;
    struct ipc_peer want;
    struct ipc_conn_rx rx;
};

struct ps_query {
    struct ps_pending slot[PS_QUERIES_IN_FLIGHT_MAX];
    size_t n;
    int64_t deadline_ms;
    int64_t timeout_ms;
};

/* Records the runtime's answer (and frees it). */
static void query_answered(struct ps_entry *en, struct ipc_process_info *pi)
{
    struct runtime_info ri;
    _Static_assert(sizeof(en->runtime_version) == sizeof(ri.version) &&
                       sizeof(en->runtime_rid) == sizeof(ri.rid) &&
                       sizeof(en->arch) == sizeof(ri.arch),
                   "ps_entry keeps the runtime's strings as runtime_info renders them");
    runtime_info_from(pi, &ri);
    memcpy(en->runtime_version, ri.version, sizeof(en->runtime_version));
    memcpy(en->runtime_rid, ri.rid, sizeof(en->runtime_rid));
    memcpy(en->arch, ri.arch, sizeof(en->arch));
    ipc_process_info_free(pi);
}

/* Records why the exchange with a runtime ended without an answer: r, with its message in e. */
static void query_failed(struct ps_entry *en, int r, int sfd, const struct cla_error *e)
{
    if (r == -ETIMEDOUT) {
        /* It accepted (or its backlog is full) and said nothing before ps's deadline: a runtime
         * that is stopped, hung, or not a runtime at all; never shown as ready. */
        en->state = "no_answer";
        snprintf(en->detail, sizeof(en->detail), "%.159s", e->msg);
    } else if (r == -EADDRINUSE) {
        /* Served by another process than the one listed: nothing was asked. */
        en->state = "no_access";
        snprintf(en->detail, sizeof(en->detail), "%.159s", e->msg);
    } else if (r == -ECONNREFUSED) {
        en->state = "stale";
        snprintf(en->detail, sizeof(en->detail), "nothing listens on the socket");
    } else if (r == -EACCES) {
        /* The socket's real owner, from its inode: a socket bind-mounted over the name by the
         * target belongs to someone else, and the target's user cannot connect either. */
        struct stat st;
        en->state = "no_access";
        if (fstat(sfd, &st) == 0)
            snprintf(en->detail, sizeof(en->detail),
                     "permission denied: the socket belongs to uid %u (mode 0%o), the process "
                     "runs as uid %u",
                     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)en->uid);
        else
            snprintf(en->detail, sizeof(en->detail), "permission denied on the socket");
    } else {
        snprintf(en->detail, sizeof(en->detail), "%.159s", e->msg);
    }
}

static void pending_close(struct ps_query *q, size_t i)
{
    struct ps_pending *p = &q->slot[i];
    ipc_conn_rx_free(&p->rx);
    close(p->fd);
    close(p->sfd);
    q->slot[i] = q->slot[--q->n];
}

/* Connects for attempt p->attempt as the process's user. Returns 0 or the error (in e). */
static int pending_connect(struct ps_pending *p, bool become, struct cla_error *e)
{
    struct creds_saved cs = {0};
    if (become && creds_become(&p->ct, &cs, e) < 0)
        return e->code;
    /* A deadline of now: one try at connect() and send(). A runtime whose listen backlog is
     * full is not waited for here, one after another (it did not answer); a fresh
     * connection's buffer always takes the 20-byte request. */
    int fd = ipc_conn_process_info_start(p->sfd, &p->want, p->attempt, util_now_ms(), e);
    if (become)
        creds_restore(&cs);
    if (fd < 0)
        return fd;
    p->fd = fd;
    p->rx = (struct ipc_conn_rx){0};
    return 0;
}

/* Reads what arrived on slot i. Returns true when its exchange ended (the slot is freed). */
static bool pending_step(struct ps_query *q, size_t i, struct ps_entry *list)
{
    struct ps_pending *p = &q->slot[i];
    struct ps_entry *en = &list[p->idx];
    struct cla_error e = {0};
    struct ipc_process_info pi = {0};
    uint32_t hr = 0;
    int r = ipc_conn_rx_step(p->fd, &p->rx, &e);
    if (r == 0)
        return false;
    if (r > 0)
        r = ipc_conn_process_info_finish(p->attempt, &p->rx, &pi, &hr, &e);
    if (r == -EAGAIN) {
        /* An older runtime: the next command, on a new connection. */
        ipc_conn_rx_free(&p->rx);
        close(p->fd);
        p->fd = -1;
        p->attempt++;
        if ((r = pending_connect(p, true, &e)) == 0)
            return false;
    }
    if (r == 0)
        query_answered(en, &pi);
    else
        query_failed(en, r, p->sfd, &e);
    pending_close(q, i);
    return true;
}

/* Waits on the exchanges in flight until fewer than `below` remain or the deadline passes; at
 * the deadline every one still in flight is a runtime that did not answer. */
static void query_wait(struct ps_query *q, struct ps_entry *list, size_t below)
{
    struct cla_error e = {0};
    while (q->n >= below && q->n > 0) {
        int64_t left = q->deadline_ms - util_now_ms();
        if (left <= 0) {
            err_set(&e, -ETIMEDOUT,
                    "no reply to ProcessInfo within ps's deadline (--timeout: %lld ms for the "
                    "whole listing)",
                    (long long)q->timeout_ms);
            while (q->n > 0) {
                query_failed(&list[q->slot[0].idx], -ETIMEDOUT, q->slot[0].sfd, &e);
                pending_close(q, 0);
            }
            return;
        }
        struct pollfd pfd[PS_QUERIES_IN_FLIGHT_MAX];
        for (size_t i = 0; i < q->n; i++)
            pfd[i] = (struct pollfd){.fd = q->slot[i].fd, .events = POLLIN};
        size_t polled = q->n;
        /* Capped so the int argument cannot overflow for a far deadline; the loop re-polls.
         * Any revent (POLLHUP, POLLERR too) is read: the receive reports it. */
        int k = poll(pfd, polled, left > 60000 ? 60000 : (int)left);
        if (k < 0 && errno != EINTR)
            q->deadline_ms = util_now_ms(); /* cannot wait: what is in flight did not answer */
        if (k <= 0)
            continue;
        /* From the end: a finished slot is replaced by the last one, already looked at. */
        for (size_t i = polled; i-- > 0;)
            if (pfd[i].revents)
                pending_step(q, i, list);
    }
}

/* Starts asking a live runtime who it is (we act as its user here); the answer is read by
 * query_wait. A refused connection marks the socket stale at once. The next attempt on an older
 * runtime connects again later, through the same socket inode and with the same peer check:
 * a process that took the pid meanwhile cannot be listening on that inode. */
static void query_start(struct ps_query *q, struct procindex *x, struct target *t,
                        const struct diag_socket *s, const struct creds_target *ct,
                        struct ps_entry *list, size_t idx)
{
    struct ps_entry *en = &list[idx];
    struct cla_error e = {0};
    /* Past the deadline (slots held by silent runtimes until then) nothing more is asked: a
     * reply could not be waited for, and the row says why it has none. */
    if (util_now_ms() >= q->deadline_ms) {
        en->state = "no_answer";
        snprintf(en->detail, sizeof(en->detail),
                 "not asked: ps's deadline (--timeout) passed before its turn, every connection "
                 "slot (%d) waiting on a runtime that did not answer",
                 PS_QUERIES_IN_FLIGHT_MAX);
        return;
    }
    /* A socket of another user is refused here (-EPERM), named in the detail. The lookup is
     * the index helper's (stall isolation, procindex.h). */
    int sfd = procindex_socket_open(x, t, s, &e);
    if (sfd < 0) {
        en->state = "no_access";
        snprintf(en->detail, sizeof(en->detail), "%.159s", e.msg);
        return;
    }
    struct ps_pending *p = &q->slot[q->n];
    /* The process that listens must be the one listed: its pid here and its effective uid. */
    *p = (struct ps_pending){.idx = idx,
                             .fd = -1,
                             .sfd = sfd,
                             .ct = *ct,
                             .want = {.pid = t->pid, .uid = t->status.uid[1]}};
    int r = pending_connect(p, false, &e);
    if (r < 0) {
        query_failed(en, r, sfd, &e);
        close(sfd);
        return;
    }
    q->n++;
}

/* The row's state from what was found at its socket's name. Returns 0 when the process is not
 * to be listed (no socket, diagnostics not turned off: not .NET, or not yet), else 1. */
static int socket_state(const struct target *t, const struct diag_socket *s, struct ps_entry *en)
{
    switch (s->state) {
    case SOCKET_ABSENT:
    case SOCKET_DIR_ERROR: {
        const char *off = diagnostics_off(t);
        if (off) {
            en->state = "disabled";
            snprintf(en->detail, sizeof(en->detail), "%s=0", off);
            return 1;
        }
        return 0;
    }
    case SOCKET_NOT_SOCKET: en->state = "not_a_socket"; break;
    case SOCKET_FOREIGN:
        /* Another user's socket under its name: never connected to, never shown as a runtime. */
        en->state = "no_access";
        snprintf(en->detail, sizeof(en->detail),
                 "no permission to use it: the socket belongs to uid %u, the process runs as uid "
                 "%u (another user bound its name)",
                 (unsigned)s->owner, (unsigned)en->uid);
        break;
    case SOCKET_FOUND:
        en->state = "ready";
        if (paused_at_startup(t)) {
            en->state = "paused";
            snprintf(en->detail, sizeof(en->detail),
                     "paused at startup, waiting for ResumeRuntime: attach --startup (or watch "
                     "--startup) loads a profiler now; a plain attach is refused until it runs");
        }
        break;
    case SOCKET_FOUND_UNKEYED:
        en->state = "unkeyed";
        diag_socket_unkeyed_detail(s->key, t->stat.starttime, en->detail, sizeof(en->detail));
        break;
    }
    return 1;
}

/* Fills one entry; returns 1 when the process is .NET-like and listed, 0 to skip it. */
static int inspect(int proc_dirfd, pid_t pid, bool asked, const char *cgroup, struct procindex *x,
                   unsigned flags, struct ps_query *q, struct ps_entry *list, size_t idx)
{
    struct ps_entry *en = &list[idx];
    struct target t;
    struct cla_error e = {0};
    int r = target_open(proc_dirfd, pid, &t, &e);
    if (r >= 0 && cgroup) {
        /* Only the processes of that cgroup, each listed as if asked for by pid. */
        if (!target_cgroup_contains(&t, cgroup)) {
            target_close(&t);
            return 0;
        }
        asked = true;
    }
    if (r == -EPROTO) {
        /* Its /proc data breaks a rule (a TMPDIR clrattach refuses): listed, with the reason,
         * since an attach would be refused too; whether it runs .NET cannot be told. */
        memset(en, 0, sizeof(*en));
        en->pid = pid;
        en->state = "refused";
        render_message(e.msg, strlen(e.msg), en->detail, sizeof(en->detail));
        return 1;
    }
    if (r < 0)
        return 0; /* exited, or not ours to inspect */
    memset(en, 0, sizeof(*en));
    en->pid = pid;
    en->nspid = t.status.nspid;
    en->uid = t.status.uid[1];
    en->gid = t.status.gid[1];
    memcpy(en->comm, t.comm, sizeof(en->comm));
    memcpy(en->command_line, t.cmdline, sizeof(en->command_line));
    render_text(t.tmpdir, strlen(t.tmpdir), en->tmpdir, sizeof(en->tmpdir));

    /* As for attach: the listing and the connection are made as the process's user, with its
     * groups and only its own filesystem capabilities, never with ours (creds.h). */
    struct creds_target ct;
    struct creds_saved cs = {0};
    struct diag_socket s;
    int listed = 1;
    /* stall isolation: a process whose TMPDIR did not answer (its group's, or its own look)
     * is listed as such, and nothing below its root is asked for again now. */
    if (flags & PROCINDEX_UNREACHABLE) {
        en->state = "unreachable";
        snprintf(en->detail, sizeof(en->detail),
                 "its TMPDIR did not answer within %d ms: the filesystem there has stopped "
                 "answering (a hung mount?)",
                 PROCINDEX_ANSWER_MS);
        goto out;
    }
    creds_target_of(t.procfd, &t.status, &ct);
    if (creds_check(&ct, &e) < 0 || creds_become(&ct, &cs, &e) < 0 ||
        procindex_socket_find(x, &t, &s, &e) < 0) {
        en->state = e.code == -ETIMEDOUT ? "unreachable" : "no_access";
        snprintf(en->detail, sizeof(en->detail), "%.159s", e.msg);
        /* Asked for by pid, it is listed even so: its uid and gid are the answer. */
        listed = asked || e.code == -ETIMEDOUT || diagnostics_off(&t) ? 1 : 0;
        /* Our uid and another gid: nothing can be read of it, so it is listed with the group
         * to set, and said once on stderr in full. */
        if (!t.environ && creds_explain_gid_mismatch(pid, &t.status, &e)) {
            snprintf(en->detail, sizeof(en->detail), "%.159s", e.hint);
            dprintf(STDERR_FILENO, "clrattach: ps: %s; %s\n", e.msg, e.hint);
            listed = 1;
        }
        goto out;
    }
    if (!socket_state(&t, &s, en)) {
        listed = 0;
        goto out;
    }
    if (s.state == SOCKET_ABSENT || s.state == SOCKET_DIR_ERROR)
        goto out;
    render_text(s.name, strlen(s.name), en->socket_name, sizeof(en->socket_name));
    if (s.state == SOCKET_NOT_SOCKET || s.state == SOCKET_FOREIGN || !q)
        goto out;
    query_start(q, x, &t, &s, &ct, list, idx);
out:
    creds_restore(&cs);
    target_close(&t);
    return listed;
}

int ps_scan(int proc_dirfd, pid_t only, const char *cgroup, bool query, int64_t timeout_ms,
            struct ps_entry **ret_entries, size_t *ret_n, struct cla_error *e)
{
    /* The index points at every process that can give a row: a socket name for its namespace
     * pid in its TMPDIR, diagnostics turned off, a TMPDIR refused, or nothing known (no access
     * to its files); only those get the full look below, which decides the row exactly as for
     * an attach. The others (nearly all) cost their probe: status, environ, ns/mnt, root. One
     * whose TMPDIR did not answer (UNREACHABLE) is a row of that state, not left out. */
    struct procindex *x = procindex_new(proc_dirfd, false);
    /* One deadline for every answer (ps_query): a slot frees when a runtime answers, and at
     * the deadline all of them do. */
    struct ps_query *q = query ? calloc(1, sizeof(*q)) : NULL;
    struct ps_entry *list = NULL;
    size_t n = 0, alloc = 0;
    int r = 0;
    if (q)
        q->timeout_ms = timeout_ms;
    if (!x || (query && !q)) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if ((r = procindex_scan(x, util_now_ms(), e)) < 0)
        goto out;
    /* The deadline counts from here: the scan itself is bounded apart (a filesystem that does
     * not answer costs it PROCINDEX_ANSWER_MS, and its processes are UNREACHABLE rows), and
     * must not use up the time the runtimes have to answer. */
    if (q)
        q->deadline_ms = util_now_ms() + timeout_ms;
    for (size_t i = 0; i < procindex_count(x); i++) {
        const struct procindex_proc *p = procindex_at(x, i);
        if (only > 0 ? p->pid != only
                     : !cgroup &&
                           !(p->flags & (PROCINDEX_SOCKET | PROCINDEX_DISABLED | PROCINDEX_REFUSED |
                                         PROCINDEX_UNKNOWN | PROCINDEX_UNREACHABLE)))
            continue;
        if (n == alloc) {
            size_t na = alloc ? alloc * 2 : 16;
            struct ps_entry *nl = realloc(list, na * sizeof(*nl));
            if (!nl) {
                r = err_set(e, -ENOMEM, "out of memory");
                goto out;
            }
            list = nl;
            alloc = na;
        }
        if (q)
            query_wait(q, list, PS_QUERIES_IN_FLIGHT_MAX); /* a free slot */
        if (inspect(proc_dirfd, p->pid, only > 0, cgroup, x, p->flags, q, list, n))
            n++;
    }
    if (q)
        query_wait(q, list, 1); /* every answer, or the deadline */
    if (n)
        qsort(list, n, sizeof(*list), cmp_pid); /* list is NULL when nothing was seen */
out:
    if (q) {
        while (q->n > 0)
            pending_close(q, 0);
        free(q);
    }
    procindex_free(x);
    if (r < 0) {
        free(list);
        return r;
    }
    *ret_entries = list;
    *ret_n = n;
    return 0;
}
