/* SPDX-License-Identifier: Apache-2.0 */
#include "flow/ps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/creds.h"
#include "target/diag_socket.h"
#include "runtime/ipc_conn.h"
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

/* Asks a live runtime who it is; a refused connection marks the socket stale. */
static void query_runtime(struct procindex *x, struct target *t, const struct diag_socket *s,
                          int64_t timeout_ms, struct ps_entry *en)
{
    struct cla_error e = {0};
    /* stall isolation: the socket is looked up by the index's helper (procindex.h) */
    _cleanup_close_ int sfd = procindex_socket_open(x, t, s, &e);
    if (sfd < 0) {
        en->state = "no_access";
        snprintf(en->detail, sizeof(en->detail), "%.159s", e.msg);
        return;
    }
    struct ipc_process_info pi = {0};
    uint32_t hr = 0;
    int r = ipc_conn_process_info(sfd, util_now_ms() + timeout_ms, &pi, &hr, &e);
    if (r == 0) {
        struct runtime_info ri;
        _Static_assert(sizeof(en->runtime_version) == sizeof(ri.version) &&
                           sizeof(en->runtime_rid) == sizeof(ri.rid) &&
                           sizeof(en->arch) == sizeof(ri.arch),
                       "ps_entry keeps the runtime's strings as runtime_info renders them");
        runtime_info_from(&pi, &ri);
        memcpy(en->runtime_version, ri.version, sizeof(en->runtime_version));
        memcpy(en->runtime_rid, ri.rid, sizeof(en->runtime_rid));
        memcpy(en->arch, ri.arch, sizeof(en->arch));
        ipc_process_info_free(&pi);
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
        snprintf(en->detail, sizeof(en->detail), "%.159s", e.msg);
    }
}

/* Fills one entry; returns 1 when the process is .NET-like and listed, 0 to skip it. */
static int inspect(int proc_dirfd, pid_t pid, struct procindex *x, unsigned flags, bool query,
                   int64_t timeout_ms, struct ps_entry *en)
{
    struct target t;
    struct cla_error e = {0};
    int r = target_open(proc_dirfd, pid, &t, &e);
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
        listed = e.code == -ETIMEDOUT || diagnostics_off(&t) ? 1 : 0;
        goto out;
    }
    switch (s.state) {
    case SOCKET_ABSENT:
    case SOCKET_DIR_ERROR: {
        const char *off = diagnostics_off(&t);
        if (off) {
            en->state = "disabled";
            snprintf(en->detail, sizeof(en->detail), "%s=0", off);
        } else {
            listed = 0;
        }
        goto out;
    }
    case SOCKET_NOT_SOCKET: en->state = "not_a_socket"; break;
    case SOCKET_FOUND: en->state = "ready"; break;
    case SOCKET_FOUND_UNKEYED:
        en->state = "unkeyed";
        diag_socket_unkeyed_detail(s.key, t.stat.starttime, en->detail, sizeof(en->detail));
        break;
    }
    render_text(s.name, strlen(s.name), en->socket_name, sizeof(en->socket_name));
    if (s.state == SOCKET_NOT_SOCKET || !query)
        goto out;
    query_runtime(x, &t, &s, timeout_ms, en);
out:
    creds_restore(&cs);
    target_close(&t);
    return listed;
}

int ps_scan(int proc_dirfd, bool query, int64_t timeout_ms, struct ps_entry **ret_entries,
            size_t *ret_n, struct cla_error *e)
{
    /* The index points at every process that can give a row: a socket name for its namespace
     * pid in its TMPDIR, diagnostics turned off, a TMPDIR refused, or nothing known (no access
     * to its files); only those get the full look below, which decides the row exactly as for
     * an attach. The others (nearly all) cost their probe: status, environ, ns/mnt, root. One
     * whose TMPDIR did not answer (UNREACHABLE) is a row of that state, not left out. */
    struct procindex *x = procindex_new(proc_dirfd, false);
    struct ps_entry *list = NULL;
    size_t n = 0, alloc = 0;
    int r = 0;
    if (!x) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if ((r = procindex_scan(x, util_now_ms(), e)) < 0)
        goto out;
    for (size_t i = 0; i < procindex_count(x); i++) {
        const struct procindex_proc *p = procindex_at(x, i);
        if (!(p->flags & (PROCINDEX_SOCKET | PROCINDEX_DISABLED | PROCINDEX_REFUSED |
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
        if (inspect(proc_dirfd, p->pid, x, p->flags, query, timeout_ms, &list[n]))
            n++;
    }
    if (n)
        qsort(list, n, sizeof(*list), cmp_pid); /* list is NULL when nothing was seen */
out:
    procindex_free(x);
    if (r < 0) {
        free(list);
        return r;
    }
    *ret_entries = list;
    *ret_n = n;
    return 0;
}
