/* SPDX-License-Identifier: Apache-2.0 */
/* The index and its scan: the records of the processes, /proc listed again (or the known ones
 * refreshed in place), each process flagged from its group's listing. The probe of one process is
 * procindex_probe.c, the groups procindex_group.c, the full look procindex_socket.c. */
#include "target/procindex_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

int procindex_parse_loadavg(const char *buf, size_t len, pid_t *ret_last_pid)
{
    /* Five fields separated by single spaces; the last is the pid, then a newline or the end. */
    if (len > 0 && buf[len - 1] == '\n')
        len--;
    size_t fields = 1, last = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == ' ') {
            fields++;
            last = i + 1;
        } else if (buf[i] == '\0' || buf[i] == '\n') {
            return -EPROTO;
        }
    }
    uint64_t v;
    if (fields != 5 || util_parse_u64(buf + last, len - last, INT32_MAX, &v) < 0)
        return -EPROTO;
    *ret_last_pid = (pid_t)v;
    return 0;
}

struct procindex *procindex_new(int proc_dirfd, bool stat)
{
    struct procindex *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->envbuf = malloc(PROC_ENVIRON_MAX + 1);
    if (!x->envbuf) {
        free(x);
        return NULL;
    }
    x->hctx.proc_dirfd = proc_dirfd;
    x->w = fsworker_new(procindex_helper_handle, procindex_helper_done, &x->hctx);
    if (!x->w) {
        free(x->envbuf);
        free(x);
        return NULL;
    }
    pthread_mutex_init(&x->groups_lock, NULL);
    x->proc_dirfd = proc_dirfd;
    x->with_stat = stat;
    x->last_pid = -1;
    x->ev_fd = -1;
    x->hint_fd = -1;
    x->loadavg_fd = openat(proc_dirfd, "loadavg", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    x->alloc_after = -1;
    if (procindex_ns_ino(proc_dirfd, 1, "ns/pid", &x->pidns) < 0)
        x->pidns = 0;
    x->self = getpid();
    /* /proc/loadavg's last pid is of our own PID namespace: the pids it names are looked up in
     * /proc only when /proc is of that namespace too (its "self" is our pid). */
    char link[32];
    ssize_t ll = readlinkat(proc_dirfd, "self", link, sizeof(link) - 1);
    uint64_t own;
    x->peek_ok =
        ll > 0 && util_parse_u64(link, (size_t)ll, INT_MAX, &own) == 0 && own == (uint64_t)x->self;
    x->peek_pid = -1;
    return x;
}

void procindex_free(struct procindex *x)
{
    if (!x)
        return;
    /* The helper lets go of every directory it holds as it leaves. */
    fsworker_free(x->w);
    util_closep(&x->ev_fd);
    util_closep(&x->hint_fd);
    util_closep(&x->loadavg_fd);
    for (size_t i = 0; i < x->ngroups; i++)
        procindex_group_free(x->groups[i]);
    free(x->groups);
    free(x->v);
    free(x->envbuf);
    pthread_mutex_destroy(&x->groups_lock);
    free(x);
}

size_t procindex_count(const struct procindex *x)
{
    return x->n;
}

const struct procindex_proc *procindex_at(const struct procindex *x, size_t i)
{
    return i < x->n ? &x->v[i].pub : NULL;
}

size_t procindex_groups(const struct procindex *x)
{
    return x->ngroups;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* The pids of /proc, sorted, without ours. */
static int list_proc(const struct procindex *x, pid_t **ret, size_t *ret_n, struct cla_error *e)
{
    int fd = openat(x->proc_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, -errno, "open /proc");
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int r = -errno;
        close(fd);
        return err_setsys(e, r, "fdopendir /proc");
    }
    pid_t *v = NULL;
    size_t n = 0, alloc = 0;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        uint64_t pid;
        if (util_parse_u64(de->d_name, strlen(de->d_name), INT32_MAX, &pid) < 0 || pid == 0 ||
            (pid_t)pid == x->self)
            continue;
        if (n == alloc) {
            size_t na = alloc ? alloc * 2 : 256;
            pid_t *nv = realloc(v, na * sizeof(*nv));
            if (!nv) {
                r = err_set(e, -ENOMEM, "out of memory");
                break;
            }
            v = nv;
            alloc = na;
        }
        v[n++] = (pid_t)pid;
    }
    closedir(dir);
    if (r < 0) {
        free(v);
        return r;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_pid);
    *ret = v;
    *ret_n = n;
    return 0;
}

/* The last pid allocated in our namespace, from /proc/loadavg; false when unknown. The file is
 * held open from procindex_new and read with one pread at offset 0 (the kernel formats it
 * afresh at every read from the start): the pid tick of watch pays one syscall, not three.
 * Where it could not be held open, it is opened for each read. */
static bool read_last_pid(const struct procindex *x, pid_t *ret)
{
    char buf[128];
    ssize_t n;
    if (x->loadavg_fd >= 0) {
        do
            n = pread(x->loadavg_fd, buf, sizeof(buf), 0);
        while (n < 0 && errno == EINTR);
    } else {
        _cleanup_close_ int fd =
            openat(x->proc_dirfd, "loadavg", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    }
    size_t len = n > 0 ? (size_t)n : 0;
    return n > 0 && len < sizeof(buf) && procindex_parse_loadavg(buf, len, ret) == 0;
}

/* Has a pid been allocated in our namespace since the last listing? True when unknown. */
static bool pids_allocated(struct procindex *x)
{
    pid_t last;
    if (!read_last_pid(x, &last)) {
        x->last_pid = x->alloc_after = -1;
        return true;
    }
    bool changed = last != x->last_pid || x->last_pid < 0;
    x->alloc_after = x->last_pid;
    x->alloc_upto = last;
    x->last_pid = x->peek_pid = last;
    return changed;
}

/* Is `pid` (of our namespace) a process, not a thread of one? 1 yes or unknown, 0 a thread or
 * gone (a process that has already ended leaves nothing to serve). */
static int is_process(const struct procindex *x, pid_t pid)
{
    char path[32], buf[PROC_STATUS_MAX];
    snprintf(path, sizeof(path), "%d/status", (int)pid);
    _cleanup_close_ int fd = openat(x->proc_dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : 1;
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf));
    while (n < 0 && errno == EINTR);
    struct proc_status st;
    if (n <= 0 || (size_t)n == sizeof(buf) || proc_parse_status(buf, (size_t)n, &st, NULL) < 0 ||
        !st.have_tgid)
        return n < 0 && errno == ESRCH ? 0 : 1;
    return st.tgid == pid;
}

bool procindex_new_process(struct procindex *x)
{
    pid_t last;
    if (!read_last_pid(x, &last) || x->last_pid < 0 || !x->peek_ok || x->peek_pid < 0)
        return true;
    /* Wrapped around pid_max, or more pids than are worth looking at one by one: a scan. */
    if (last < x->peek_pid || last - x->peek_pid > PROCINDEX_PEEK_MAX)
        return true;
    for (pid_t pid = x->peek_pid + 1; pid <= last; pid++) {
        if (is_process(x, pid))
            return true;
        x->peek_pid = pid;
    }
    return false;
}

/* Was `pid` allocated since the scan before (so a process known by it before has ended and
 * this is another one)? A range written into ns_last_pid makes this answer yes too often,
 * never too seldom. */
static bool newly_allocated(const struct procindex *x, pid_t pid)
{
    if (x->alloc_after < 0 || x->alloc_after == x->alloc_upto)
        return false;
    if (x->alloc_after < x->alloc_upto)
        return pid > x->alloc_after && pid <= x->alloc_upto;
    return pid > x->alloc_after || pid <= x->alloc_upto; /* wrapped around pid_max */
}

/* Watch with no pid allocated since the last scan and the relisting not due: the processes
 * known are all there is to look at, each refreshed where it stands (no new array, no copy of
 * the index at every scan: on a node of idle processes this loop is the scan). */
static void refresh_known(struct procindex *x, int64_t now_ms)
{
    size_t m = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (!procindex_refresh(x, &x->v[i], now_ms))
            continue; /* ended */
        if (m != i)
            x->v[m] = x->v[i];
        m++;
    }
    x->n = m;
}

/* /proc listed again: merged with what is known (both sorted by pid), new pids probed. */
static int relist(struct procindex *x, int64_t now_ms, struct cla_error *e)
{
    pid_t *pids = NULL;
    size_t npids = 0;
    x->relist_ms = now_ms + PROCINDEX_RELIST_MS;
    int r = list_proc(x, &pids, &npids, e);
    if (r < 0)
        return r;
    struct procindex_rec *nv = NULL;
    bool *keep = NULL;
    size_t *fresh = NULL; /* the slots of nv that hold new pids */
    if (npids && (!(nv = malloc(npids * sizeof(*nv))) || !(keep = malloc(npids * sizeof(*keep))) ||
                  !(fresh = malloc(npids * sizeof(*fresh))))) {
        free(pids);
        free(nv);
        free(keep);
        return err_set(e, -ENOMEM, "out of memory");
    }
    /* The old list and /proc are both sorted by pid: one merge. A process known is refreshed
     * in place; the new ones are probed together afterwards. */
    size_t j = 0, nfresh = 0;
    for (size_t i = 0; i < npids; i++) {
        while (j < x->n && x->v[j].pub.pid < pids[i])
            j++;
        if (j < x->n && x->v[j].pub.pid == pids[i] && !newly_allocated(x, pids[i])) {
            nv[i] = x->v[j];
            keep[i] = procindex_refresh(x, &nv[i], now_ms);
        } else {
            nv[i].pub.pid = pids[i];
            fresh[nfresh++] = i;
        }
    }
    free(pids);
    /* Gathered into one run for probe_all, then put back in their places (pid order). */
    struct procindex_rec *batch = nfresh ? malloc(nfresh * sizeof(*batch)) : NULL;
    bool *bkeep = nfresh ? malloc(nfresh * sizeof(*bkeep)) : NULL;
    if (nfresh && (!batch || !bkeep)) {
        for (size_t k = 0; k < nfresh; k++) /* one by one, without the extra arrays */
            keep[fresh[k]] = procindex_probe_one(x, nv[fresh[k]].pub.pid, &nv[fresh[k]], now_ms);
    } else if (nfresh) {
        for (size_t k = 0; k < nfresh; k++)
            batch[k].pub.pid = nv[fresh[k]].pub.pid;
        procindex_probe_all(x, batch, bkeep, nfresh, now_ms);
        for (size_t k = 0; k < nfresh; k++) {
            nv[fresh[k]] = batch[k];
            keep[fresh[k]] = bkeep[k];
        }
    }
    free(batch);
    free(bkeep);
    free(fresh);
    size_t m = 0;
    for (size_t i = 0; i < npids; i++)
        if (keep[i])
            nv[m++] = nv[i];
    free(keep);
    free(x->v);
    x->v = nv;
    x->n = m;
    return 0;
}

/* Each process's flags from its group's listing: a socket name for its namespace pid, and
 * whether that changed since the last scan. */
static void flag_processes(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->n; i++) {
        struct procindex_rec *rc = &x->v[i];
        rc->pub.flags |= rc->base;
        struct procindex_group *g = rc->g;
        /* Its directory, or its own full look, did not come back: nobody looks at it until the
         * back-off ends (its flags would send the scan into the same silent filesystem). */
        if (procindex_stall_active(x, g ? &g->stall : &rc->stall, now_ms)) {
            rc->pub.flags &= ~(PROCINDEX_SOCKET | PROCINDEX_UNKNOWN);
            rc->pub.flags |= PROCINDEX_UNREACHABLE;
            continue;
        }
        if (!g)
            continue;
        if (!g->valid) {
            /* Another member's credentials (its groups, its capabilities) may reach what the
             * representative's could not: each one's own full look decides. So does a group
             * past the bound of directories held open. */
            if (g->dir_errno == EACCES || g->dir_errno == EPERM || g->dir_errno == EMFILE)
                rc->pub.flags |= PROCINDEX_UNKNOWN;
            continue;
        }
        if (g->n && !rc->nspid && !procindex_read_nspid(x, rc)) {
            rc->pub.flags |= PROCINDEX_UNKNOWN; /* its status unreadable: the full look decides */
            continue;
        }
        uint64_t fp = g->n ? procindex_entries_fp(g->entries, g->n, rc->nspid) : 0;
        if (fp)
            rc->pub.flags |= PROCINDEX_SOCKET;
        if (fp != rc->sock_fp) {
            rc->pub.flags |= PROCINDEX_CHANGED;
            rc->sock_fp = fp;
            /* A new socket may come from a new program on this pid (a shell that execs
             * dotnet, a runtime that execs another): its image marks are read now. */
            if (x->with_stat && rc->stat_ms != now_ms) {
                struct procindex_rec cur = *rc;
                if (procindex_read_stat(x, &cur, now_ms)) {
                    rc->pub.stat = cur.pub.stat;
                    rc->stat_ms = now_ms;
                }
            }
        }
    }
}

int procindex_scan(struct procindex *x, int64_t now_ms, struct cla_error *e)
{
    x->scans++;
    x->now_ms = now_ms;
    x->stalls_in_scan = 0;
    bool fresh = pids_allocated(x); /* read BEFORE the listing: what comes after is seen next */
    if (x->with_stat && !fresh && now_ms < x->relist_ms) {
        refresh_known(x, now_ms);
    } else {
        int r = relist(x, now_ms, e);
        if (r < 0)
            return r;
    }
    if (procindex_scan_groups(x, now_ms) < 0)
        return err_set(e, -EINTR, "interrupted by a stop");
    flag_processes(x, now_ms);
    return 0;
}

void procindex_set_interrupt(struct procindex *x, const sigset_t *mask, volatile sig_atomic_t *stop)
{
    fsworker_set_interrupt(x->w, mask, stop);
}

void procindex_on_unreachable(struct procindex *x, void (*fn)(const char *msg, void *userdata),
                              void *userdata)
{
    x->on_unreachable = fn;
    x->userdata = userdata;
}
