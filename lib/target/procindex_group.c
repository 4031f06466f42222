/* SPDX-License-Identifier: Apache-2.0 */
#include "target/procindex_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target/creds.h"
#include "target/proc_parse.h"
#include "target/rootfs.h"
#include "target/target.h"
#include "base/util.h"

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
    /* FNV-1a over (key, inode, ctime) of each: an entry added, removed or re-created changes it. */
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

struct procindex_group *procindex_group_new(uint64_t mnt_ino, const struct stat *root,
                                            const struct stat *owner, const char *tmpdir, pid_t rep)
{
    struct procindex_group *g = calloc(1, sizeof(*g));
    if (!g || !(g->tmpdir = strdup(tmpdir))) {
        free(g);
        return NULL;
    }
    g->mnt_ino = mnt_ino;
    g->root_dev = root->st_dev;
    g->root_ino = root->st_ino;
    g->uid = owner->st_uid;
    g->gid = owner->st_gid;
    g->rep = rep;
    g->rootfd = -1;
    return g;
}

/* Lets go of the directory and root held open; the entries stay as listed. */
static void group_release(struct procindex_group *g)
{
    if (g->dir)
        closedir(g->dir);
    g->dir = NULL;
    util_closep(&g->rootfd);
    g->rootfd = -1; /* closed once: the number may be another fd's next */
}

static void group_close(struct procindex_group *g)
{
    group_release(g);
    g->n = 0;
    g->valid = false;
}

void procindex_group_free(struct procindex_group *g)
{
    if (!g)
        return;
    group_close(g);
    free(g->entries);
    free(g->tmpdir);
    free(g);
}

/* Opens a group's directory as its representative's user, through the pinned process: the
 * same steps as diag_socket_find (target_open, creds, rootfs_open), once per group. */
static void group_open(int proc_dirfd, struct procindex_group *g, int64_t now)
{
    struct target t;
    g->retry_ms = now + PROCINDEX_RETRY_MS;
    int r = target_open(proc_dirfd, g->rep, &t, NULL);
    if (r < 0) {
        g->dir_errno = procindex_gone(r) ? EAGAIN : -r;
        if (procindex_gone(r))
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
static bool group_current(struct procindex_group *g)
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
static void group_list(struct procindex_group *g, int64_t now_ms)
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

void procindex_group_scan(struct procindex_group *g, int proc_dirfd, bool may_open, bool hold,
                          int64_t now_ms)
{
    if (g->dir && !group_current(g))
        group_close(g);
    if (!g->dir && now_ms >= g->retry_ms) {
        if (may_open) {
            group_open(proc_dirfd, g, now_ms);
        } else {
            g->dir_errno = EMFILE;
            g->retry_ms = now_ms + PROCINDEX_RETRY_MS;
        }
    }
    if (g->dir)
        group_list(g, now_ms);
    if (!hold)
        group_release(g);
}
