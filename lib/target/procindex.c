/* SPDX-License-Identifier: Apache-2.0 */
#include "target/procindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target/creds.h"
#include "target/rootfs.h"
#include "target/target.h"
#include "base/util.h"

/* ---- the probe (pure) ---- */

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

static int cmp_entry(const void *a, const void *b)
{
    const struct procindex_entry *x = a, *y = b;
    if (x->nspid != y->nspid)
        return x->nspid < y->nspid ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

void procindex_sort_entries(struct procindex_entry *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_entry);
}

uint64_t procindex_entries_fp(const struct procindex_entry *v, size_t n, pid_t nspid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first entry with this nspid */
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].nspid < nspid)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* FNV-1a over (key, inode, ctime) of each: any entry added, removed or re-created changes it.
     */
    uint64_t h = 1469598103934665603ULL;
    bool any = false;
    for (size_t i = lo; i < n && v[i].nspid == nspid; i++) {
        uint64_t w[3] = {v[i].key, v[i].ino, (uint64_t)v[i].ctime_ns};
        any = true;
        for (size_t k = 0; k < 3; k++)
            for (int b = 0; b < 64; b += 8) {
                h ^= (w[k] >> b) & 0xFF;
                h *= 1099511628211ULL;
            }
    }
    return any ? (h ? h : 1) : 0;
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

/* ---- the index ---- */

/* Where the sockets of a set of processes live: one directory in one view, as one user. */
struct group {
    uint64_t mnt_ino, root_dev, root_ino;
    uid_t uid;
    gid_t gid;
    char *tmpdir;
    pid_t rep; /* a member of the last scan: the process whose user opens the directory */
    size_t members;
    DIR *dir;   /* opened as rep's user; NULL until then, or after a failure */
    int rootfd; /* O_PATH of rep's root when the directory was opened */
    uint64_t dir_dev, dir_ino;
    int dir_errno; /* why there is no listing (0 with one) */
    int64_t retry_ms;
    /* the directory's mtime at the last listing, and when (CLOCK_REALTIME, ns) it was made */
    int64_t listed_mtime_ns, listed_at_ns;
    int64_t next_list_ms; /* a crowded directory is listed at most every PROCINDEX_RETRY_MS */
    bool valid;           /* the entries are the directory's (listed, not closed since) */
    struct procindex_entry *entries;
    size_t n, alloc;
};

struct rec {
    struct procindex_proc pub;
    pid_t nspid;   /* from its status, read once its group holds socket names; 0 until then */
    unsigned base; /* DISABLED, REFUSED, UNKNOWN from the probe */
    struct group *g;
    uint64_t sock_fp;
    int64_t next_look_ms; /* stat read again (with stat on), or an UNKNOWN probed again */
    int64_t young_until_ms;
    int64_t stat_ms; /* when its stat was read last */
};

struct procindex {
    int proc_dirfd;
    bool with_stat;
    pid_t self;
    struct rec *v;
    size_t n;
    struct group **groups;
    size_t ngroups, galloc;
    char *envbuf;                /* PROC_ENVIRON_MAX + 1 bytes, reused by every probe */
    pthread_mutex_t groups_lock; /* find_group() while a helper thread probes (relist) */
    pid_t last_pid;              /* from /proc/loadavg at the last listing; -1 = unknown */
    uint64_t pidns;              /* the PID namespace of /proc (its pid 1's); 0 = unknown */
    /* the pids allocated since the scan before: (alloc_after, alloc_upto], cyclic; unknown
     * when alloc_after < 0 */
    pid_t alloc_after, alloc_upto;
    int64_t relist_ms; /* list /proc again by then at the latest */
};

/* "<pid>/<name>" into out (at least PID_PATH_MAX bytes): snprintf's formatting machinery, three
 * times per process, was a visible share of a scan of thousands of processes. */
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

/* Lets go of the directory and root held open; the entries stay as listed. */
static void group_release(struct group *g)
{
    if (g->dir)
        closedir(g->dir);
    g->dir = NULL;
    util_closep(&g->rootfd);
    g->rootfd = -1; /* closed once: the number may be another fd's next */
}

static void group_close(struct group *g)
{
    group_release(g);
    g->n = 0;
    g->valid = false;
}

static void group_free(struct group *g)
{
    if (!g)
        return;
    group_close(g);
    free(g->entries);
    free(g->tmpdir);
    free(g);
}

void procindex_free(struct procindex *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->ngroups; i++)
        group_free(x->groups[i]);
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

static bool gone(int r)
{
    return r == -ENOENT || r == -ESRCH;
}

/* The process's stat; false when it is gone. An unparsable one is left zero. */
static bool read_stat(const struct procindex *x, struct rec *r, int64_t now)
{
    r->stat_ms = now;
    char buf[PROC_STAT_MAX];
    size_t len;
    int rr = read_once(x->proc_dirfd, r->pub.pid, "stat", buf, sizeof(buf), &len);
    if (gone(rr) || (rr == 0 && len == 0))
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

static struct group *find_group(struct procindex *x, uint64_t mnt_ino, const struct stat *root,
                                const struct stat *owner, const struct procindex_probe *p,
                                pid_t pid)
{
    for (size_t i = 0; i < x->ngroups; i++) {
        struct group *g = x->groups[i];
        if (g->mnt_ino == mnt_ino && g->root_dev == root->st_dev && g->root_ino == root->st_ino &&
            g->uid == owner->st_uid && g->gid == owner->st_gid && strcmp(g->tmpdir, p->tmpdir) == 0)
            return g;
    }
    if (x->ngroups == x->galloc) {
        size_t na = x->galloc ? x->galloc * 2 : 8;
        struct group **ng = realloc(x->groups, na * sizeof(*ng));
        if (!ng)
            return NULL;
        x->groups = ng;
        x->galloc = na;
    }
    struct group *g = calloc(1, sizeof(*g));
    if (!g || !(g->tmpdir = strdup(p->tmpdir))) {
        free(g);
        return NULL;
    }
    g->mnt_ino = mnt_ino;
    g->root_dev = root->st_dev;
    g->root_ino = root->st_ino;
    g->uid = owner->st_uid;
    g->gid = owner->st_gid;
    g->rep = pid;
    g->rootfd = -1;
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
     * status of a member (group_open), and a member that the listing does not point at has
     * no socket name in that directory for anybody. */
    char path[PID_PATH_MAX];
    struct stat owner, root;
    uint64_t mnt;
    size_t elen = 0;
    if (fstatat(x->proc_dirfd, pid_path(path, pid, NULL), &owner, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    int rr = ns_ino(x->proc_dirfd, pid, "ns/mnt", &mnt);
    if (rr < 0) {
        if (gone(rr))
            return false;
        r->base |= PROCINDEX_UNKNOWN;
        return true;
    }
    /* "root" is a magic link of our own procfs (as in target_open_root): what is stat'ed is
     * the directory the process sees as "/", nothing below it. */
    if (fstatat(x->proc_dirfd, pid_path(path, pid, "root"), &root, 0) < 0) {
        if (gone(-errno)) /* a zombie has no root: it has no socket either */
            return false;
        r->base |= PROCINDEX_UNKNOWN;
        return true;
    }
    rr = read_once(x->proc_dirfd, pid, "environ", envbuf, PROC_ENVIRON_MAX + 1, &elen);
    if (gone(rr))
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

/* Opens a group's directory as its representative's user, through the pinned process: the
 * same steps as diag_socket_find (target_open, creds, rootfs_open), once per group. */
static void group_open(struct procindex *x, struct group *g, int64_t now)
{
    struct target t;
    g->retry_ms = now + PROCINDEX_RETRY_MS;
    int r = target_open(x->proc_dirfd, g->rep, &t, NULL);
    if (r < 0) {
        g->dir_errno = gone(r) ? EAGAIN : -r;
        if (gone(r))
            g->retry_ms = now; /* another member is its representative at the next scan */
        return;
    }
    struct stat rst;
    /* The pinned process must still see this directory (an execve may have moved it); its own
     * ids, from its status, are who the directory is listed as. */
    if (strcmp(t.tmpdir, g->tmpdir) != 0 || t.mntns != g->mnt_ino ||
        target_open_root(&t, NULL) < 0 || fstat(t.rootfd, &rst) < 0 || rst.st_dev != g->root_dev ||
        rst.st_ino != g->root_ino) {
        g->dir_errno = EAGAIN;
        goto out;
    }
    struct creds_target ct;
    struct creds_saved cs = {0};
    creds_target_of(t.procfd, &t.status, &ct);
    int fd = -EPERM;
    if (creds_check(&ct, NULL) == 0 && creds_become(&ct, &cs, NULL) == 0)
        fd = rootfs_open_contained(t.rootfd, g->tmpdir, ROOTFS_DIR, O_RDONLY, NULL);
    creds_restore(&cs);
    struct stat dst;
    if (fd >= 0 && fstat(fd, &dst) < 0) {
        close(fd);
        fd = -errno;
    }
    if (fd < 0) {
        g->dir_errno = -fd;
        goto out;
    }
    g->dir = fdopendir(fd);
    if (!g->dir) {
        g->dir_errno = errno;
        close(fd);
        goto out;
    }
    g->dir_dev = dst.st_dev;
    g->dir_ino = dst.st_ino;
    g->rootfd = util_take_fd(&t.rootfd);
    g->dir_errno = 0;
    g->listed_at_ns = 0; /* listed at once */
out:
    target_close(&t);
}

/* Does the TMPDIR name still lead to the directory held open? A tmpfs mounted over /tmp after
 * the group was opened (a container's start) hides the old one under it. Resolved as ourselves
 * through rootfs (O_PATH: nothing is read), only to compare identities. */
static bool group_current(struct group *g)
{
    _cleanup_close_ int fd = rootfs_open_contained(g->rootfd, g->tmpdir, ROOTFS_DIR, O_PATH, NULL);
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == g->dir_dev && st.st_ino == g->dir_ino;
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Lists a group's directory when it may have changed: its mtime moves with every name added,
 * removed or replaced. The filesystem's clock is coarse (a jiffy), so a listing made within a
 * second of the last change does not count as seeing it: the next scan lists again. */
static void group_list(struct group *g, int64_t now_ms)
{
    if (now_ms < g->next_list_ms)
        return;
    struct stat st;
    if (fstat(dirfd(g->dir), &st) < 0 || st.st_nlink == 0) {
        group_close(g); /* removed: opened again, by its name */
        g->dir_errno = ENOENT;
        return;
    }
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (g->listed_at_ns && mtime == g->listed_mtime_ns && g->listed_at_ns - mtime > 1000000000LL)
        return;
    int64_t at = realtime_ns();
    rewinddir(g->dir);
    g->n = 0;
    size_t seen = 0;
    struct dirent *de;
    /* errno cleared before each readdir: a name gone before its stat below must not read as a
     * failed listing at the end (readdir's NULL is the end or an error, told apart by errno). */
    for (;;) {
        errno = 0;
        if (!(de = readdir(g->dir)))
            break;
        /* A hostile target can fill its /tmp with millions of entries to stall us: as in
         * diag_socket.c, past the cap the directory gives no listing (tried again later). */
        if (++seen > TARGET_DIR_ENTRIES_MAX) {
            group_close(g);
            g->dir_errno = E2BIG;
            return;
        }
        size_t len = strlen(de->d_name);
        pid_t pid;
        uint64_t key;
        struct stat est;
        if (!proc_socket_name_parse(de->d_name, len, &pid, &key) ||
            fstatat(dirfd(g->dir), de->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* another name, or gone meanwhile */
        if (g->n == g->alloc) {
            size_t na = g->alloc ? g->alloc * 2 : 8;
            struct procindex_entry *ne = realloc(g->entries, na * sizeof(*ne));
            if (!ne)
                break; /* out of memory: fewer names; the next change lists again */
            g->entries = ne;
            g->alloc = na;
        }
        g->entries[g->n++] = (struct procindex_entry){
            .nspid = pid,
            .key = key,
            .ino = est.st_ino,
            .ctime_ns = (int64_t)est.st_ctim.tv_sec * 1000000000 + est.st_ctim.tv_nsec};
    }
    if (errno && !de) {
        group_close(g);
        g->dir_errno = errno;
        return;
    }
    procindex_sort_entries(g->entries, g->n);
    g->listed_mtime_ns = mtime;
    g->listed_at_ns = at;
    g->valid = true;
    /* A directory a target keeps busy with many names is not listed at every scan. */
    if (seen > PROCINDEX_BUSY_ENTRIES)
        g->next_list_ms = now_ms + PROCINDEX_RETRY_MS;
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

/* Each group's representative (its first member in pid order), its directory opened or
 * kept, listed when it changed; groups nobody is left in let go. */
static void scan_groups(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->ngroups; i++)
        x->groups[i]->members = 0;
    for (size_t i = 0; i < x->n; i++) {
        struct group *g = x->v[i].g;
        if (g && g->members++ == 0)
            g->rep = x->v[i].pub.pid;
    }
    size_t kept = 0, held = 0;
    for (size_t i = 0; i < x->ngroups; i++) {
        struct group *g = x->groups[i];
        if (!g->members) { /* nobody left there: its directory is let go */
            group_free(g);
            continue;
        }
        x->groups[kept++] = g;
        if (g->dir && !group_current(g))
            group_close(g);
        if (!g->dir && now_ms >= g->retry_ms) {
            /* Two fds per directory held: a target that makes thousands of TMPDIRs must not
             * take every fd the watcher has (its attaches need pipes and pidfds). The groups
             * past the bound are left to the full look, as without the index. */
            if (held < PROCINDEX_HELD_MAX) {
                group_open(x, g, now_ms);
            } else {
                g->dir_errno = EMFILE;
                g->retry_ms = now_ms + PROCINDEX_RETRY_MS;
            }
        }
        if (g->dir)
            group_list(g, now_ms);
        if (!x->with_stat)
            group_release(g); /* ps: listed once */
        held += g->dir != NULL;
    }
    x->ngroups = kept;
}

/* Each process's flags from its group's listing: a socket name for its namespace pid, and
 * whether that changed since the last scan. */
static void flag_processes(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->n; i++) {
        struct rec *rc = &x->v[i];
        rc->pub.flags |= rc->base;
        struct group *g = rc->g;
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
    bool fresh = pids_allocated(x); /* read BEFORE the listing: what comes after is seen next */
    if (x->with_stat && !fresh && now_ms < x->relist_ms) {
        refresh_known(x, now_ms);
    } else {
        int r = relist(x, now_ms, e);
        if (r < 0)
            return r;
    }
    scan_groups(x, now_ms);
    flag_processes(x, now_ms);
    return 0;
}
