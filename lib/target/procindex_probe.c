/* SPDX-License-Identifier: Apache-2.0 */
/* The probe of one process: what its /proc files say (owner, ns/mnt, root, environ, stat,
 * status) read with as few calls as the scan of thousands allows, the group it falls into, and
 * new processes probed on two threads when there are many. */
#include "target/procindex_internal.h"

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
int procindex_ns_ino(int proc_dirfd, pid_t pid, const char *ns, uint64_t *ret)
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
bool procindex_read_stat(const struct procindex *x, struct procindex_rec *r, int64_t now)
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
static void schedule(struct procindex_rec *r, int64_t now)
{
    if (now < r->young_until_ms)
        r->next_look_ms = now;
    else
        r->next_look_ms =
            now + PROCINDEX_RECHECK_MS / 2 +
            (int64_t)(((uint32_t)r->pub.pid * 2654435761u) % (PROCINDEX_RECHECK_MS / 2));
}

/* Probes `pid` into *r (flags CHANGED). Returns false when the process is gone. A pid that is
 * reused between two of these reads mixes two processes here: harmless, since the index only
 * points at processes, and what it points at is pinned and read again by the full look. */
static bool probe_into(struct procindex *x, pid_t pid, struct procindex_rec *r, int64_t now,
                       char *envbuf)
{
    memset(r, 0, sizeof(*r));
    r->pub.pid = pid;
    r->pub.flags = PROCINDEX_CHANGED;
    if (x->with_stat) {
        if (!procindex_read_stat(x, r, now))
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
    int rr = procindex_ns_ino(x->proc_dirfd, pid, "ns/mnt", &mnt);
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
    /* ESRCH here, its directory still there: a process with no address space, a kernel thread
     * (or one exiting). It runs no runtime, and it is kept as such: dropped, it would be new
     * again at the next listing of /proc, probed again, dropped again, at every listing (in the
     * machine's PID namespace, every kernel thread at every scan a new pid asks for). */
    if (rr == -ESRCH)
        return true;
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
        r->g = procindex_group_find(x, mnt, &root, &owner, &p, pid);
        int64_t until = now;
        if (x->with_stat && procindex_age_ms(r->pub.stat.starttime) < PROCINDEX_YOUNG_MS)
            until += PROCINDEX_GROUP_LOOK_MS;
        if (r->g && r->g->look_until_ms < until)
            r->g->look_until_ms = until;
        pthread_mutex_unlock(&x->groups_lock);
        if (!r->g)
            r->base |= PROCINDEX_UNKNOWN; /* out of memory: the full look decides */
    }
    return true;
}

bool procindex_probe_one(struct procindex *x, pid_t pid, struct procindex_rec *r, int64_t now)
{
    return probe_into(x, pid, r, now, x->envbuf);
}

/* A process seen before: its stat is read again when due, and an execve (new image marks) or a
 * new process on the pid (new start time) makes it probed afresh. Returns false when gone. */
bool procindex_refresh(struct procindex *x, struct procindex_rec *r, int64_t now)
{
    r->pub.flags = 0;
    if (now < r->next_look_ms)
        return true;
    if (!x->with_stat)
        return (r->base & PROCINDEX_UNKNOWN) ? procindex_probe_one(x, r->pub.pid, r, now) : true;
    struct procindex_rec cur = *r;
    cur.base = 0;
    if (!procindex_read_stat(x, &cur, now))
        return false;
    if (cur.pub.stat.starttime != r->pub.stat.starttime ||
        memcmp(cur.pub.stat.exec_marks, r->pub.stat.exec_marks, sizeof(cur.pub.stat.exec_marks)) ||
        (r->base & PROCINDEX_UNKNOWN))
        return procindex_probe_one(x, r->pub.pid, r, now);
    r->pub.stat = cur.pub.stat; /* comm may change without an execve */
    r->stat_ms = now;
    schedule(r, now);
    return true;
}

/* The process's namespace pid: the pid its runtime names its socket for. A process in the
 * PID namespace of our /proc has the pid we list it by (one readlink of its ns/pid); for another,
 * the last NSpid value of its status. False when neither can be read. */
bool procindex_read_nspid(const struct procindex *x, struct procindex_rec *r)
{
    uint64_t ns;
    if (x->pidns && procindex_ns_ino(x->proc_dirfd, r->pub.pid, "ns/pid", &ns) == 0 &&
        ns == x->pidns) {
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

/* New processes are probed by a helper thread as well when there are this many: probing is
 * nearly all kernel time (path walks in /proc, generating environ) and runs as well on another
 * CPU, so `ps` over thousands of processes takes about half the time on two CPUs. Every stage
 * of the seccomp filter allows threads (clone with CLONE_THREAD and no namespace flag). */
#define PARALLEL_MIN 256

struct probe_batch {
    struct procindex *x;
    struct procindex_rec *recs; /* each with its pid set */
    bool *keep;                 /* false: the process is gone */
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
 * procindex_group_find() takes under groups_lock; a group's representative is chosen in pid order
 * afterwards (procindex_scan), so the result does not depend on which thread came first. */
void procindex_probe_all(struct procindex *x, struct procindex_rec *recs, bool *keep, size_t n,
                         int64_t now)
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
