/* SPDX-License-Identifier: Apache-2.0 */
#include "target/procindex_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "target/proc_environ.h"

void procindex_probe_parse(const char *environ, size_t environ_len, struct procindex_probe *ret)
{
    struct procindex_probe p = {0};
    if (!environ) {
        snprintf(p.tmpdir, sizeof(p.tmpdir), "/tmp/");
    } else if (environ_len > PROC_ENVIRON_MAX) {
        p.flags |= PROCINDEX_REFUSED; /* target_open refuses an environment this large */
    } else {
        if (proc_tmpdir_from_environ(environ, environ_len, p.tmpdir, sizeof(p.tmpdir), NULL) < 0) {
            p.flags |= PROCINDEX_REFUSED;
            p.tmpdir[0] = '\0';
        }
        if (proc_environ_diagnostics_off(environ, environ_len))
            p.flags |= PROCINDEX_DISABLED;
    }
    *ret = p;
}

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

struct rec {
    struct procindex_proc pub;
    pid_t nspid;   /* from its status, read once its group holds socket names; 0 until then */
    unsigned base; /* DISABLED, REFUSED, UNKNOWN from the probe */
    struct procindex_group *g;
    uint64_t sock_fp;
    int64_t next_look_ms; /* stat read again (with stat on), or an UNKNOWN probed again */
    int64_t young_until_ms;
    int64_t stat_ms;              /* when its stat was read last */
    struct procindex_stall stall; /* its full look did not come back (one without a group) */
};

struct procindex {
    int proc_dirfd;
    bool with_stat;
    pid_t self;
    struct rec *v;
    size_t n;
    struct procindex_group **groups;
    size_t ngroups, galloc;
    char *envbuf;                /* PROC_ENVIRON_MAX + 1 bytes, reused by every probe */
    pthread_mutex_t groups_lock; /* find_group() while a helper thread probes (relist) */
    pid_t last_pid;              /* from /proc/loadavg at the last listing; -1 = unknown */
    uint64_t pidns;              /* the PID namespace of /proc (its pid 1's); 0 = unknown */
    /* the pids allocated since the scan before: (alloc_after, alloc_upto], cyclic; unknown
     * when alloc_after < 0 */
    pid_t alloc_after, alloc_upto;
    int64_t relist_ms; /* list /proc again by then at the latest */
    /* Everything below other processes' roots goes through the helper (procindex_helper.c). */
    struct fsworker *w;
    struct procindex_hctx hctx;
    uint64_t next_group_id;
    uint64_t scans;          /* counts the scans: the helper keeps its listings for one */
    int64_t now_ms;          /* the last scan's time, the clock of the back-offs */
    unsigned stalls_in_scan; /* helpers given up in this scan (PROCINDEX_SCAN_STALLS_MAX) */
    void (*on_unreachable)(const char *msg, void *userdata);
    void *userdata;
};

/* "<pid>/<name>" into out (at least PID_PATH_MAX bytes), its digits written by hand rather than
 * by snprintf, whose format parsing costs more than the digits: this runs three times for each
 * process in every scan of thousands. */
#define PID_PATH_MAX 48
static const char *pid_path(char *out, pid_t pid, const char *name)
{
    char digits[12];
    size_t n = 0, at = 0;
    uint32_t v = (uint32_t)pid;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < sizeof(digits));
    while (n)
        out[at++] = digits[--n];
    if (name) {
        size_t len = strnlen(name, PID_PATH_MAX - at - 2);
        out[at++] = '/';
        memcpy(out + at, name, len);
        at += len;
    }
    out[at] = '\0';
    return out;
}

/* The inode of the namespace that `pid` is in, by readlink() of its link `ns` ("ns/mnt",
 * "ns/pid"): the same number stat() gives (namespaces all live on one nsfs device), for a third
 * of the cost. The kernel asks the same ptrace access check of both. Returns 0 or -errno /
 * -EPROTO. */
static int ns_ino(int proc_dirfd, pid_t pid, const char *ns, uint64_t *ret)
{
    char path[PID_PATH_MAX], text[64];
    ssize_t n = readlinkat(proc_dirfd, pid_path(path, pid, ns), text, sizeof(text));
    if (n < 0)
        return -errno;
    if ((size_t)n == sizeof(text))
        return -EPROTO;
    return proc_ns_link_parse(text, (size_t)n, ns + strlen("ns/"), ret);
}

/* statx(2)'s answer as the kernel lays it out (stable ABI, include/uapi/linux/stat.h), up to the
 * device: musl 1.2.3 (the static build) has neither the struct nor a wrapper, and mixing
 * <linux/stat.h> into <sys/stat.h> redefines its S_IF* macros there. */
struct statx_head {
    uint32_t mask, blksize;
    uint64_t attributes;
    uint32_t nlink, uid, gid;
    uint16_t mode, spare0;
    uint64_t ino, size, blocks, attributes_mask;
    struct {
        int64_t sec;
        uint32_t nsec;
        int32_t reserved;
    } atime, btime, ctime, mtime;
    uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
    uint64_t spare[14];
};
_Static_assert(sizeof(struct statx_head) == 256, "struct statx is 256 bytes");
#define STATX_INO_BIT       0x100u  /* STATX_INO */
#define STATX_DONT_SYNC_BIT 0x4000u /* AT_STATX_DONT_SYNC */

/* The device and inode of the directory `pid` sees as "/" ("root" is a magic link of our own
 * procfs: what is stat'ed is that directory, nothing below it), from the attributes the kernel
 * holds (AT_STATX_DONT_SYNC): a root on a filesystem that stopped answering (a process chrooted
 * into a FUSE mount whose daemon never replies) must not hold the scan in a fresh GETATTR. An
 * inode's device and number never change, so cached ones are exact. Returns 0 or -errno. */
static int root_identity(int proc_dirfd, pid_t pid, struct stat *ret)
{
    char path[PID_PATH_MAX];
    struct statx_head sx;
    pid_path(path, pid, "root");
    if (syscall(SYS_statx, proc_dirfd, path, STATX_DONT_SYNC_BIT, STATX_INO_BIT, &sx) == 0) {
        memset(ret, 0, sizeof(*ret));
        ret->st_dev = makedev(sx.dev_major, sx.dev_minor);
        ret->st_ino = sx.ino;
        return 0;
    }
    if (errno != ENOSYS) /* Linux < 4.11 has no statx */
        return -errno;
    return fstatat(proc_dirfd, path, ret, 0) < 0 ? -errno : 0;
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
    x->alloc_after = -1;
    if (ns_ino(proc_dirfd, 1, "ns/pid", &x->pidns) < 0)
        x->pidns = 0;
    x->self = getpid();
    return x;
}

void procindex_free(struct procindex *x)
{
    if (!x)
        return;
    /* The helper lets go of every directory it holds as it leaves. */
    fsworker_free(x->w);
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

/* Reads a /proc file of `pid` with ONE read into `buf` (a /proc file gives all it has in one
 * read when the buffer is large enough: environ loops over the pages inside the call, seq
 * files fill it whole). Returns 0 with the length, or -errno. */
static int read_once(int proc_dirfd, pid_t pid, const char *name, char *buf, size_t size,
                     size_t *ret_len)
{
    char path[PID_PATH_MAX];
    _cleanup_close_ int fd =
        openat(proc_dirfd, pid_path(path, pid, name), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n;
    do
        n = read(fd, buf, size);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    *ret_len = (size_t)n;
    return 0;
}

/* The process's stat; false when it is gone. An unparsable one is left zero. */
static bool read_stat(const struct procindex *x, struct rec *r, int64_t now)
{
    r->stat_ms = now;
    char buf[PROC_STAT_MAX];
    size_t len;
    int rr = read_once(x->proc_dirfd, r->pub.pid, "stat", buf, sizeof(buf), &len);
    if (procindex_gone(rr) || (rr == 0 && len == 0))
        return false;
    if (rr < 0 || len == sizeof(buf) || proc_parse_stat(buf, len, &r->pub.stat, NULL) < 0) {
        memset(&r->pub.stat, 0, sizeof(r->pub.stat));
        r->base |= PROCINDEX_UNKNOWN;
    }
    return true;
}

int64_t procindex_age_ms(uint64_t starttime)
{
    struct timespec ts;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
        return 0;
    int64_t boot_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t start_ms = (int64_t)(starttime / (uint64_t)hz) * 1000 +
                       (int64_t)(starttime % (uint64_t)hz) * 1000 / hz;
    return boot_ms > start_ms ? boot_ms - start_ms : 0;
}

/* When a process's stat is read next: every scan while young, then every RECHECK_MS at a
 * phase of its own, so that the reads of a quiet node spread over the scans. */
static void schedule(struct rec *r, int64_t now)
{
    if (now < r->young_until_ms)
        r->next_look_ms = now;
    else
        r->next_look_ms =
            now + PROCINDEX_RECHECK_MS / 2 +
            (int64_t)(((uint32_t)r->pub.pid * 2654435761u) % (PROCINDEX_RECHECK_MS / 2));
}

static struct procindex_group *find_group(struct procindex *x, uint64_t mnt_ino,
                                          const struct stat *root, const struct stat *owner,
                                          const struct procindex_probe *p, pid_t pid)
{
    for (size_t i = 0; i < x->ngroups; i++) {
        struct procindex_group *g = x->groups[i];
        if (g->mnt_ino == mnt_ino && g->root_dev == root->st_dev && g->root_ino == root->st_ino &&
            g->uid == owner->st_uid && g->gid == owner->st_gid && strcmp(g->tmpdir, p->tmpdir) == 0)
            return g;
    }
    if (x->ngroups == x->galloc) {
        size_t na = x->galloc ? x->galloc * 2 : 8;
        struct procindex_group **ng = realloc(x->groups, na * sizeof(*ng));
        if (!ng)
            return NULL;
        x->groups = ng;
        x->galloc = na;
    }
    struct procindex_group *g =
        procindex_group_new(++x->next_group_id, mnt_ino, root, owner, p->tmpdir, pid);
    if (!g)
        return NULL;
    x->groups[x->ngroups++] = g;
    return g;
}

/* Probes `pid` into *r (flags CHANGED). Returns false when the process is gone. A pid that is
 * reused between two of these reads mixes two processes here: harmless, since the index only
 * points at processes, and what it points at is pinned and read again by the full look. */
static bool probe_into(struct procindex *x, pid_t pid, struct rec *r, int64_t now, char *envbuf)
{
    memset(r, 0, sizeof(*r));
    r->pub.pid = pid;
    r->pub.flags = PROCINDEX_CHANGED;
    if (x->with_stat) {
        if (!read_stat(x, r, now))
            return false;
        int64_t age = procindex_age_ms(r->pub.stat.starttime);
        r->young_until_ms = now + (age < PROCINDEX_YOUNG_MS ? PROCINDEX_YOUNG_MS - age : 0);
    }
    schedule(r, now);

    /* The owner of /proc/<pid> is its effective uid and gid (root's for a process that is not
     * dumpable): the group's key only. Who the directory is listed as comes from the pinned
     * status of a member (procindex_group_scan), and a member that the listing does not point at
     * has no socket name in that directory for anybody. */
    char path[PID_PATH_MAX];
    struct stat owner, root;
    uint64_t mnt;
    size_t elen = 0;
    if (fstatat(x->proc_dirfd, pid_path(path, pid, NULL), &owner, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    int rr = ns_ino(x->proc_dirfd, pid, "ns/mnt", &mnt);
    if (rr < 0) {
        if (procindex_gone(rr))
            return false;
        r->base |= PROCINDEX_UNKNOWN;
        return true;
    }
    if ((rr = root_identity(x->proc_dirfd, pid, &root)) < 0) {
        if (procindex_gone(rr)) /* a zombie has no root: it has no socket either */
            return false;
        r->base |= PROCINDEX_UNKNOWN;
        return true;
    }
    rr = read_once(x->proc_dirfd, pid, "environ", envbuf, PROC_ENVIRON_MAX + 1, &elen);
    if (procindex_gone(rr))
        return false;
    if (rr < 0) {
        /* Not ours to read: target_open then guesses nothing, and neither does the index. */
        r->base |= PROCINDEX_UNKNOWN;
        return true;
    }
    struct procindex_probe p;
    procindex_probe_parse(envbuf, elen, &p);
    r->base |= p.flags;
    if (!(p.flags & PROCINDEX_REFUSED)) {
        pthread_mutex_lock(&x->groups_lock);
        r->g = find_group(x, mnt, &root, &owner, &p, pid);
        pthread_mutex_unlock(&x->groups_lock);
        if (!r->g)
            r->base |= PROCINDEX_UNKNOWN; /* out of memory: the full look decides */
    }
    return true;
}

static bool probe(struct procindex *x, pid_t pid, struct rec *r, int64_t now)
{
    return probe_into(x, pid, r, now, x->envbuf);
}

/* A process seen before: its stat is read again when due, and an execve (new image marks) or a
 * new process on the pid (new start time) makes it probed afresh. Returns false when gone. */
static bool refresh(struct procindex *x, struct rec *r, int64_t now)
{
    r->pub.flags = 0;
    if (now < r->next_look_ms)
        return true;
    if (!x->with_stat)
        return (r->base & PROCINDEX_UNKNOWN) ? probe(x, r->pub.pid, r, now) : true;
    struct rec cur = *r;
    cur.base = 0;
    if (!read_stat(x, &cur, now))
        return false;
    if (cur.pub.stat.starttime != r->pub.stat.starttime ||
        memcmp(cur.pub.stat.exec_marks, r->pub.stat.exec_marks, sizeof(cur.pub.stat.exec_marks)) ||
        (r->base & PROCINDEX_UNKNOWN))
        return probe(x, r->pub.pid, r, now);
    r->pub.stat = cur.pub.stat; /* comm may change without an execve */
    r->stat_ms = now;
    schedule(r, now);
    return true;
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

/* The process's namespace pid: the pid its runtime names its socket for. A process in the
 * PID namespace of our /proc has the pid we list it by (one readlink of its ns/pid); for another,
 * the last NSpid value of its status. False when neither can be read. */
static bool read_nspid(const struct procindex *x, struct rec *r)
{
    uint64_t ns;
    if (x->pidns && ns_ino(x->proc_dirfd, r->pub.pid, "ns/pid", &ns) == 0 && ns == x->pidns) {
        r->nspid = r->pub.pid;
        return true;
    }
    char status[PROC_STATUS_MAX];
    size_t len;
    struct proc_status st;
    if (read_once(x->proc_dirfd, r->pub.pid, "status", status, sizeof(status), &len) < 0 ||
        len == sizeof(status) || proc_parse_status(status, len, &st, NULL) < 0)
        return false;
    r->nspid = st.have_nspid ? st.nspid : r->pub.pid; /* no NSpid (Linux < 4.1): as target_open */
    return true;
}

/* Has a pid been allocated in our namespace since the last listing? True when unknown. */
static bool pids_allocated(struct procindex *x)
{
    char buf[128];
    size_t len;
    pid_t last;
    _cleanup_close_ int fd = openat(x->proc_dirfd, "loadavg", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    len = n > 0 ? (size_t)n : 0;
    if (n <= 0 || len == sizeof(buf) || procindex_parse_loadavg(buf, len, &last) < 0) {
        x->last_pid = x->alloc_after = -1;
        return true;
    }
    bool changed = last != x->last_pid || x->last_pid < 0;
    x->alloc_after = x->last_pid;
    x->alloc_upto = last;
    x->last_pid = last;
    return changed;
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
        if (!refresh(x, &x->v[i], now_ms))
            continue; /* ended */
        if (m != i)
            x->v[m] = x->v[i];
        m++;
    }
    x->n = m;
}

/* New processes are probed by a helper thread as well when there are this many: probing is
 * nearly all kernel time (path walks in /proc, generating environ) and runs as well on another
 * CPU, so `ps` over thousands of processes takes about half the time on two CPUs. Every stage
 * of the seccomp filter allows threads (clone with CLONE_THREAD and no namespace flag). */
#define PARALLEL_MIN 256

struct probe_batch {
    struct procindex *x;
    struct rec *recs; /* each with its pid set */
    bool *keep;       /* false: the process is gone */
    size_t n;
    int64_t now;
    char *envbuf;
};

static void *probe_batch_run(void *arg)
{
    struct probe_batch *b = arg;
    for (size_t i = 0; i < b->n; i++)
        b->keep[i] = probe_into(b->x, b->recs[i].pub.pid, &b->recs[i], b->now, b->envbuf);
    return NULL;
}

/* Probes recs[0..n): half of them on a helper thread when there are enough, all of them here
 * when there are not or it cannot start. The two halves share nothing but the groups, which
 * find_group() takes under groups_lock; a group's representative is chosen in pid order
 * afterwards (procindex_scan), so the result does not depend on which thread came first. */
static void probe_all(struct procindex *x, struct rec *recs, bool *keep, size_t n, int64_t now)
{
    struct probe_batch mine = {x, recs, keep, n, now, x->envbuf};
    if (n >= PARALLEL_MIN) {
        size_t half = n / 2;
        struct probe_batch other = {x, recs + half, keep + half, n - half, now, NULL};
        pthread_attr_t attr;
        pthread_t th;
        bool started = false;
        other.envbuf = malloc(PROC_ENVIRON_MAX + 1);
        if (other.envbuf && pthread_attr_init(&attr) == 0) {
            (void)pthread_attr_setstacksize(&attr, 256 * 1024);
            started = pthread_create(&th, &attr, probe_batch_run, &other) == 0;
            pthread_attr_destroy(&attr);
        }
        if (started) {
            mine.n = half;
            probe_batch_run(&mine);
            pthread_join(th, NULL);
            free(other.envbuf);
            return;
        }
        free(other.envbuf);
    }
    probe_batch_run(&mine);
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
    struct rec *nv = NULL;
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
            keep[i] = refresh(x, &nv[i], now_ms);
        } else {
            nv[i].pub.pid = pids[i];
            fresh[nfresh++] = i;
        }
    }
    free(pids);
    /* Gathered into one run for probe_all, then put back in their places (pid order). */
    struct rec *batch = nfresh ? malloc(nfresh * sizeof(*batch)) : NULL;
    bool *bkeep = nfresh ? malloc(nfresh * sizeof(*bkeep)) : NULL;
    if (nfresh && (!batch || !bkeep)) {
        for (size_t k = 0; k < nfresh; k++) /* one by one, without the extra arrays */
            keep[fresh[k]] = probe(x, nv[fresh[k]].pub.pid, &nv[fresh[k]], now_ms);
    } else if (nfresh) {
        for (size_t k = 0; k < nfresh; k++)
            batch[k].pub.pid = nv[fresh[k]].pub.pid;
        probe_all(x, batch, bkeep, nfresh, now_ms);
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

/* Is what `s` is about left alone now: its back-off running, or the helper that did not come
 * back from it still stuck there (the filesystem has not answered that request yet: a second
 * helper would only join the first)? */
static bool stall_active(struct procindex *x, struct procindex_stall *s, int64_t now_ms)
{
    if (!s->until_ms)
        return false;
    if (s->stuck && !fsworker_stuck(x->w, s->stuck))
        s->stuck = 0;
    return now_ms < s->until_ms || s->stuck;
}

/* Is this answer of fsworker_call one that leaves what it was about unreachable: none in time,
 * the helper ended in its midst or answered nonsense, or no helper could be started (too many
 * stuck)? The others (a stop, out of memory, a fork refused) say nothing about the directory. */
static bool is_stall(int r)
{
    return r == -ETIMEDOUT || r == -EPIPE || r == -EPROTO || r == -EAGAIN;
}

/* A request about group `g` (or about the process `pid` without one: its own `s`) got no usable
 * answer (`r`; the helper given up, `stuck` while not reaped): the group's listing is void, it
 * is left alone for the back-off, and said once, when it stops answering. */
static void stall_mark(struct procindex *x, struct procindex_group *g, struct procindex_stall *s,
                       pid_t pid, const char *tmpdir, uid_t uid, int r, pid_t stuck)
{
    bool first = s->until_ms == 0;
    if (g) {
        g->valid = false;
        g->n = 0;
        g->held = false;
    }
    s->stalls++;
    s->until_ms = x->now_ms + procindex_stall_backoff_ms(s->stalls);
    s->stuck = stuck;
    x->stalls_in_scan++;
    if (!first || !x->on_unreachable)
        return;
    char shown[256], what[96], msg[1024];
    render_text(tmpdir, strlen(tmpdir), shown, sizeof(shown));
    if (r == -EAGAIN)
        snprintf(what, sizeof(what),
                 "could not be looked at (%d helpers are stuck already):", FSWORKER_STUCK_MAX);
    else
        snprintf(what, sizeof(what), "did not answer within %d ms:", PROCINDEX_ANSWER_MS);
    snprintf(msg, sizeof(msg),
             "pid %d: its TMPDIR '%s' (as uid %u) %s the filesystem there has stopped answering "
             "(a hung NFS or CIFS mount, a stuck volume or FUSE daemon?); its processes are "
             "skipped for %lld s at least, and while that request stays unanswered. Next step: "
             "check that mount on the node (/proc/%d/mountinfo names it) or restart the process",
             (int)pid, shown, (unsigned)uid, what,
             (long long)(procindex_stall_backoff_ms(s->stalls) / 1000), (int)pid);
    x->on_unreachable(msg, x->userdata);
}

/* Each group's representative (its first member in pid order), its directory opened or
 * kept, listed when it changed; groups nobody is left in let go. */
static int scan_groups(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->ngroups; i++)
        x->groups[i]->members = 0;
    for (size_t i = 0; i < x->n; i++) {
        struct procindex_group *g = x->v[i].g;
        if (g && g->members++ == 0)
            g->rep = x->v[i].pub.pid;
    }
    size_t kept = 0, held = 0;
    int r = 0;
    for (size_t i = 0; i < x->ngroups; i++) {
        struct procindex_group *g = x->groups[i];
        if (!g->members) { /* nobody left there: its directory is let go */
            if (r == 0)
                procindex_group_forget(g, x->w);
            procindex_group_free(g);
            continue;
        }
        x->groups[kept++] = g;
        /* A stop, a directory left alone, or (watch) enough helpers given up in this scan: the
         * others keep their last listing and are looked at next scan. ps has no next scan: it
         * goes through all, each unanswered one costing a helper, FSWORKER_STUCK_MAX at most. */
        if (r < 0 || stall_active(x, &g->stall, now_ms) ||
            (x->with_stat && x->stalls_in_scan >= PROCINDEX_SCAN_STALLS_MAX))
            continue;
        /* Two fds per directory held: a target that makes thousands of TMPDIRs must not take
         * every fd the helper has. The groups past the bound are left to the full look, as
         * without the index. */
        pid_t stuck;
        int rr =
            procindex_group_scan(g, x->w, held < PROCINDEX_HELD_MAX, x->with_stat, now_ms, &stuck);
        if (rr == -EINTR) {
            r = rr;
        } else if (is_stall(rr)) {
            stall_mark(x, g, &g->stall, g->rep, g->tmpdir, g->uid, rr, stuck);
        } else if (rr == 0) {
            g->stall = (struct procindex_stall){0};
        }
        held += g->held;
    }
    x->ngroups = kept;
    return r;
}

/* Each process's flags from its group's listing: a socket name for its namespace pid, and
 * whether that changed since the last scan. */
static void flag_processes(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->n; i++) {
        struct rec *rc = &x->v[i];
        rc->pub.flags |= rc->base;
        struct procindex_group *g = rc->g;
        /* Its directory, or its own full look, did not come back: nobody looks at it until the
         * back-off ends (its flags would send the scan into the same silent filesystem). */
        if (stall_active(x, g ? &g->stall : &rc->stall, now_ms)) {
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
        if (g->n && !rc->nspid && !read_nspid(x, rc)) {
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
                struct rec cur = *rc;
                if (read_stat(x, &cur, now_ms)) {
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
    if (scan_groups(x, now_ms) < 0)
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

/* The record of `pid` in the last scan (sorted by pid), or NULL. */
static struct rec *find_rec(struct procindex *x, pid_t pid)
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
    struct rec *rc = find_rec(x, t->pid);
    struct procindex_stall *st = rc ? (rc->g ? &rc->g->stall : &rc->stall) : NULL;
    int r = st && stall_active(x, st, x->now_ms) ? -ETIMEDOUT : 0;
    if (r == 0) {
        r = fsworker_call(x->w, &q, sizeof(q), -1, PROCINDEX_ANSWER_MS, (void **)&a, &len, ret_fd,
                          &stuck);
        if (r == 0 && len != sizeof(*a))
            r = -EPROTO;
        if (st && is_stall(r))
            stall_mark(x, rc->g, st, t->pid, t->tmpdir, t->status.uid[1], r, stuck);
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
