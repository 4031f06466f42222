/* SPDX-License-Identifier: Apache-2.0 */
/* The index's helper process (fsworker.h): the only place where the index, `ps` and `watch`
 * touch what lies below another process's root. It holds the socket directories open, lists
 * them, and makes the full look's socket lookups, each as the process's own user (creds.h). */
#include "target/procindex_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "target/creds.h"
#include "target/proc_parse.h"
#include "target/procindex_hints.h"
#include "target/rootfs.h"
#include "target/target.h"

/* A group's directory, held open in the helper. */
struct held {
    uint64_t id;
    DIR *dir;   /* opened as the representative's user */
    int ifd;    /* the helper's inotify instance (not owned), -1: no watch */
    int wd;     /* its watch on the directory (direvents.h), -1: none */
    int rootfd; /* O_PATH of the representative's root when the directory was opened */
    uint64_t dir_dev, dir_ino;
    /* the directory's mtime at the last listing, and when (CLOCK_REALTIME, ns) it was made */
    int64_t listed_mtime_ns, listed_at_ns;
};

struct procindex_helper {
    struct held *v;
    size_t n, alloc;
    struct diag_socket_cache *cache; /* the listings of one scan (PX_SOCKET_FIND) */
    uint64_t cache_scan;
    int ifd;      /* inotify on the directories held (watch only; -1: none yet) */
    unsigned wds; /* watches placed, at most DIREVENTS_WATCHES_MAX */
    /* runtime files watched (procindex_hints.h), in an instance of their own: the watcher
     * reads it even while a flood of names keeps the directories' queue unread */
    struct procindex_hints hints;
    int hint_ifd; /* -1: none yet */
};

/* What a directory's watch asks of the kernel: a name that comes (created, or renamed into it),
 * and the directory itself leaving (IN_IGNORED comes with the end of any watch). */
#define HELD_EVENTS (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

static void held_close(struct held *h)
{
    /* The watch is the inode's: one held twice (two users, one directory) shares it, and the
     * index lets go of both at once or lists the other at the next scan. */
    if (h->wd >= 0 && h->ifd >= 0)
        (void)inotify_rm_watch(h->ifd, h->wd);
    h->wd = -1;
    if (h->dir)
        closedir(h->dir);
    h->dir = NULL;
    util_closep(&h->rootfd);
}

static struct held *held_find(struct procindex_helper *st, uint64_t id)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].id == id)
            return &st->v[i];
    return NULL;
}

static void held_drop(struct procindex_helper *st, struct held *h)
{
    if (h->wd >= 0 && st->wds)
        st->wds--;
    held_close(h);
    *h = st->v[--st->n];
}

/* Opens a group's directory as its representative's user, through the pinned process: the
 * same steps as diag_socket_find (target_open, creds, rootfs_open_contained). Returns 0, or a
 * positive errno for why not (EAGAIN: the representative has ended or moved on). */
static int group_open(int proc_dirfd, const struct px_group_req *q, const char *tmpdir, int ifd,
                      struct held *ret, bool *ret_rep_gone)
{
    struct target t;
    *ret_rep_gone = false;
    int r = target_open(proc_dirfd, q->rep, &t, NULL);
    if (r < 0) {
        *ret_rep_gone = procindex_gone(r);
        return procindex_gone(r) ? EAGAIN : -r;
    }
    struct stat rst;
    int err = 0;
    /* The pinned process must still see this directory (an execve may have moved it); its own
     * ids, from its status, are who the directory is listed as. */
    if (strcmp(t.tmpdir, tmpdir) != 0 || t.mntns != q->mnt_ino || target_open_root(&t, NULL) < 0 ||
        fstat(t.rootfd, &rst) < 0 || rst.st_dev != q->root_dev || rst.st_ino != q->root_ino) {
        err = EAGAIN;
        goto out;
    }
    struct creds_target ct;
    struct creds_saved cs = {0};
    creds_target_of(t.procfd, &t.status, &ct);
    int fd = -EPERM, wd = -1;
    if (creds_check(&ct, NULL) == 0 && creds_become(&ct, &cs, NULL) == 0) {
        fd = rootfs_open_contained(t.rootfd, tmpdir, ROOTFS_DIR, O_RDONLY, NULL);
        /* Watched before its first listing (nothing created between the two is missed), as
         * the same user, on the directory just opened: through our own fd's magic link, never
         * by its name (no path of the target's is resolved again). */
        if (fd >= 0 && ifd >= 0) {
            char self[48];
            snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
            wd = inotify_add_watch(ifd, self, HELD_EVENTS);
        }
    }
    creds_restore(&cs);
    struct stat dst;
    if (fd >= 0 && fstat(fd, &dst) < 0) {
        close(fd);
        fd = -errno;
    }
    if (fd < 0) {
        err = -fd;
        goto out;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        err = errno;
        if (wd >= 0)
            (void)inotify_rm_watch(ifd, wd);
        close(fd);
        goto out;
    }
    *ret = (struct held){.id = q->id,
                         .dir = dir,
                         .ifd = wd >= 0 ? ifd : -1,
                         .wd = wd >= 0 ? wd : -1,
                         .rootfd = util_take_fd(&t.rootfd),
                         .dir_dev = dst.st_dev,
                         .dir_ino = dst.st_ino};
out:
    target_close(&t);
    return err;
}

/* Does the TMPDIR name still lead to the directory held open? A tmpfs mounted over /tmp after
 * the group was opened (a container's start) hides the old one under it. Resolved as ourselves
 * through rootfs (O_PATH: nothing is read), only to compare identities. */
static bool held_current(const struct held *h, const char *tmpdir)
{
    _cleanup_close_ int fd = rootfs_open_contained(h->rootfd, tmpdir, ROOTFS_DIR, O_PATH, NULL);
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == h->dir_dev && st.st_ino == h->dir_ino;
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The answer being built: the fixed part, then the entries. */
struct answer {
    char *buf;
    size_t len, cap;
};

static struct px_group_reply *answer_head(struct answer *a)
{
    return (struct px_group_reply *)a->buf;
}

static bool answer_entry(struct answer *a, pid_t nspid, uint64_t key, const struct stat *st)
{
    if (a->len + sizeof(struct procindex_entry) > a->cap) {
        size_t nc = a->cap * 2;
        char *nb = realloc(a->buf, nc);
        if (!nb)
            return false;
        a->buf = nb;
        a->cap = nc;
    }
    /* Field by field on a zeroed slot: the padding after nspid crosses the socket too. */
    struct procindex_entry e;
    memset(&e, 0, sizeof(e));
    e.nspid = nspid;
    e.key = key;
    e.ino = st->st_ino;
    e.ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    memcpy(a->buf + a->len, &e, sizeof(e));
    a->len += sizeof(e);
    answer_head(a)->n++;
    return true;
}

/* Lists a held directory when it may have changed: its mtime moves with every name added,
 * removed or replaced. The filesystem's clock is coarse (a jiffy), so a listing made within a
 * second of the last change does not count as seeing it: the next scan lists again. Returns
 * false when the directory is no longer to be held (the answer says why). */
static bool held_list(struct held *h, struct answer *a)
{
    struct px_group_reply *rh = answer_head(a);
    struct stat st;
    if (fstat(dirfd(h->dir), &st) < 0 || st.st_nlink == 0) {
        rh->flags |= PX_CLOSED; /* removed: opened again, by its name */
        rh->dir_errno = ENOENT;
        return false;
    }
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (h->listed_at_ns && mtime == h->listed_mtime_ns && h->listed_at_ns - mtime > 1000000000LL)
        return true;
    int64_t at = realtime_ns();
    rewinddir(h->dir);
    struct dirent *de;
    /* errno cleared before each readdir: a name gone before its stat below must not read as a
     * failed listing at the end (readdir's NULL is the end or an error, told apart by errno). */
    for (;;) {
        errno = 0;
        if (!(de = readdir(h->dir)))
            break;
        /* A hostile target can fill its /tmp with millions of entries to stall us: as in
         * diag_socket.c, past the cap the directory gives no listing (tried again later). */
        if (++rh->seen > TARGET_DIR_ENTRIES_MAX) {
            rh->flags |= PX_CLOSED;
            rh->dir_errno = E2BIG;
            a->len = sizeof(*rh);
            rh->n = 0;
            return false;
        }
        size_t len = strlen(de->d_name);
        pid_t pid;
        uint64_t key;
        struct stat est;
        if (!proc_socket_name_parse(de->d_name, len, &pid, &key) ||
            fstatat(dirfd(h->dir), de->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* another name, or gone meanwhile */
        if (!answer_entry(a, pid, key, &est))
            break; /* out of memory: fewer names; the next change lists again */
        rh = answer_head(a);
    }
    if (errno && !de) {
        rh->flags |= PX_CLOSED;
        rh->dir_errno = errno;
        a->len = sizeof(*rh);
        rh->n = 0;
        return false;
    }
    rh->flags |= PX_LISTED;
    h->listed_mtime_ns = mtime;
    h->listed_at_ns = at;
    return true;
}

static struct procindex_helper *state_of(struct procindex_hctx *c)
{
    if (!c->state && (c->state = calloc(1, sizeof(*c->state)))) {
        c->state->ifd = -1;
        c->state->hint_ifd = -1;
    }
    return c->state;
}

/* PX_GROUP and PX_FORGET. */
static void handle_group(struct procindex_hctx *c, const void *req, size_t len, struct answer *a)
{
    struct procindex_helper *st = state_of(c);
    struct px_group_req q;
    char tmpdir[TARGET_PATH_MAX];
    if (!st || len < sizeof(q))
        return;
    memcpy(&q, req, sizeof(q));
    if (q.tmpdir_len >= sizeof(tmpdir) || len != sizeof(q) + q.tmpdir_len)
        return;
    memcpy(tmpdir, (const char *)req + sizeof(q), q.tmpdir_len);
    tmpdir[q.tmpdir_len] = '\0';
    struct held *h = held_find(st, q.id);
    if (q.op == PX_FORGET) {
        if (h)
            held_drop(st, h);
        a->len = 0;
        return;
    }
    struct px_group_reply *rh = answer_head(a);
    if (h && !held_current(h, tmpdir)) {
        held_drop(st, h);
        h = NULL;
        rh->flags |= PX_CLOSED;
    }
    if (!h && (q.flags & PX_MAY_OPEN)) {
        struct held nh;
        bool gone;
        /* Watched only where it is held (watch), within the bound of watches; the instance is
         * made by the first such open (or PX_EVENTS, whichever comes first). */
        if ((q.flags & PX_HOLD) && st->ifd < 0)
            st->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        int ifd = (q.flags & PX_HOLD) && st->wds < DIREVENTS_WATCHES_MAX ? st->ifd : -1;
        int err = group_open(c->proc_dirfd, &q, tmpdir, ifd, &nh, &gone);
        if (err) {
            rh->flags |= PX_OPEN_FAILED | (gone ? PX_REP_GONE : 0);
            rh->dir_errno = err;
        } else if (st->n == st->alloc) {
            size_t na = st->alloc ? st->alloc * 2 : 8;
            struct held *nv = realloc(st->v, na * sizeof(*nv));
            if (!nv) {
                held_close(&nh);
                rh->flags |= PX_OPEN_FAILED;
                rh->dir_errno = ENOMEM;
            } else {
                st->v = nv;
                st->alloc = na;
            }
        }
        if (!err && !(rh->flags & PX_OPEN_FAILED)) {
            st->wds += nh.wd >= 0;
            st->v[st->n++] = nh;
            h = &st->v[st->n - 1];
        }
    }
    /* A directory just opened is listed at once, whatever the caller's throttle says. */
    if (h && ((q.flags & PX_MAY_LIST) || !h->listed_at_ns) && !held_list(h, a)) {
        held_drop(st, h);
        h = NULL;
    }
    if (h && !(q.flags & PX_HOLD)) {
        held_drop(st, h);
        h = NULL;
    }
    if (h) {
        answer_head(a)->flags |= PX_HELD | (h->wd >= 0 ? PX_WATCHED : 0);
        answer_head(a)->wd = h->wd;
    }
}

/* PX_SOCKET_FIND, PX_SOCKET_OPEN and PX_HINT_PLACE: the process pinned again (a pid and start time
 * name one process), the look made as its user. */
static void handle_socket(struct procindex_hctx *c, const void *req, size_t len,
                          struct px_socket_reply *rep, int *ret_fd)
{
    struct px_socket_req q;
    struct cla_error e = {0};
    struct target t;
    int r;
    if (len != sizeof(q)) {
        rep->r = -EINVAL;
        return;
    }
    memcpy(&q, req, sizeof(q));
    q.name[sizeof(q.name) - 1] = '\0';
    struct procindex_helper *st = state_of(c);
    if (st && st->cache_scan != q.scan) {
        diag_socket_cache_free(st->cache);
        st->cache = diag_socket_cache_new();
        st->cache_scan = q.scan;
    }
    if ((r = target_open(c->proc_dirfd, q.pid, &t, &e)) < 0) {
        rep->r = r;
        goto copy_error;
    }
    if (t.stat.starttime != q.starttime) {
        rep->r = err_set(&e, -ESRCH, "pid %d now belongs to another process", (int)q.pid);
        target_close(&t);
        goto copy_error;
    }
    struct creds_target ct;
    struct creds_saved cs = {0};
    struct diag_socket s = {.state = SOCKET_ABSENT};
    creds_target_of(t.procfd, &t.status, &ct);
    if ((r = creds_check(&ct, &e)) >= 0 && (r = creds_become(&ct, &cs, &e)) >= 0) {
        if (q.op == PX_SOCKET_FIND) {
            r = diag_socket_find(&t, st ? st->cache : NULL, &s, &e);
        } else if (q.op == PX_HINT_PLACE) {
            /* A runtime that answered, with events on (watch): the next start from its files
             * is noticed when it opens them. */
            r = 0;
            if (st && st->ifd >= 0) {
                if (st->hint_ifd < 0)
                    st->hint_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                r = (int)procindex_hints_place(&st->hints, st->hint_ifd, &t);
            }
        } else {
            memcpy(s.name, q.name, sizeof(s.name));
            r = diag_socket_open(&t, &s, &e);
            if (r >= 0)
                *ret_fd = r;
        }
    }
    creds_restore(&cs);
    target_close(&t);
    rep->r = r < 0 || q.op == PX_HINT_PLACE ? r : 0;
    rep->state = s.state;
    /* Up to the NUL only (rep is zeroed): the bytes after it were never written, and all
     * that crosses the socket is defined. */
    memcpy(rep->s.name, s.name, strnlen(s.name, sizeof(s.name) - 1));
    rep->s.key = s.key;
    rep->s.candidates = s.candidates;
    rep->s.stale = s.stale;
    rep->s.dir_errno = s.dir_errno;
    rep->s.file_type = s.file_type;
    rep->s.owner = (uint32_t)s.owner;
copy_error:
    rep->code = e.code;
    memcpy(rep->msg, e.msg, strnlen(e.msg, sizeof(e.msg) - 1));
    memcpy(rep->hint, e.hint, strnlen(e.hint, sizeof(e.hint) - 1));
}

/* PX_EVENTS: the inotify instance of the directories held; PX_HINT_EVENTS: that of the runtime
 * files (each made now, when there is none yet); a copy of it to the caller, which reads it
 * (direvents.h). */
static void handle_events(struct procindex_hctx *c, uint32_t op, void **ret_reply, size_t *ret_len,
                          int *ret_fd)
{
    struct procindex_helper *st = state_of(c);
    int32_t *r = calloc(1, sizeof(*r));
    if (!st || !r) {
        free(r);
        return;
    }
    int *ifd = op == PX_HINT_EVENTS ? &st->hint_ifd : &st->ifd;
    if (*ifd < 0)
        *ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    *ret_fd = *ifd >= 0 ? fcntl(*ifd, F_DUPFD_CLOEXEC, 0) : -1;
    *r = *ret_fd >= 0 ? 0 : -errno;
    *ret_reply = r;
    *ret_len = sizeof(*r);
}

void procindex_helper_handle(void *ctx, const void *req, size_t len, int fd, void **ret_reply,
                             size_t *ret_len, int *ret_fd)
{
    struct procindex_hctx *c = ctx;
    uint32_t op = 0;
    *ret_reply = NULL;
    *ret_len = 0;
    *ret_fd = -1;
    if (fd >= 0)
        close(fd); /* no request of ours comes with one */
    if (len >= sizeof(op))
        memcpy(&op, req, sizeof(op));
    if (op == PX_GROUP || op == PX_FORGET) {
        /* calloc: every byte sent is defined, padding included */
        struct answer a = {
            .buf = calloc(1, 4096), .len = sizeof(struct px_group_reply), .cap = 4096};
        if (!a.buf)
            return;
        handle_group(c, req, len, &a);
        *ret_reply = a.buf;
        *ret_len = a.len;
    } else if (op == PX_EVENTS || op == PX_HINT_EVENTS) {
        handle_events(c, op, ret_reply, ret_len, ret_fd);
    } else if (op == PX_SOCKET_FIND || op == PX_SOCKET_OPEN || op == PX_HINT_PLACE) {
        struct px_socket_reply *rep = calloc(1, sizeof(*rep));
        if (!rep)
            return;
        handle_socket(c, req, len, rep, ret_fd);
        *ret_reply = rep;
        *ret_len = sizeof(*rep);
    }
    /* Anything else gets an empty answer, which no caller takes for one. */
}

void procindex_helper_done(void *ctx)
{
    struct procindex_hctx *c = ctx;
    struct procindex_helper *st = c->state;
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++)
        held_close(&st->v[i]);
    util_closep(&st->ifd);
    util_closep(&st->hint_ifd);
    free(st->v);
    diag_socket_cache_free(st->cache);
    free(st);
    c->state = NULL;
}
