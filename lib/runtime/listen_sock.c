/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket of `--listen`, bound safely in the shared directory (only a stale socket of our own
 * replaced, a path over sun_path refused), and its peers accepted under caps and deadlines.
 */
#include "runtime/listen_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/util.h"

struct pending {
    int fd;
    int64_t deadline;
    uint64_t seq; /* accept order: the oldest is evicted first */
    size_t got;
    uint8_t buf[ADVERT_SIZE];
};

struct listen_sock {
    int fd;
    int dirfd;
    dev_t dev; /* the socket inode bound at NAME: what "still ours" means later */
    ino_t ino;
    char name[NAME_MAX + 1];
    struct pending pending[LISTEN_PENDING_MAX];
    size_t npending;
    uint64_t seq;
    struct listen_stats stats;
};

/* "/proc/self/fd/<dirfd>/<name>" in sun_path: the directory is the one opened, whatever its path
 * has become since. Returns 0 or -ENAMETOOLONG. */
static int fd_sockaddr(int dirfd, const char *name, struct sockaddr_un *sa, struct cla_error *e)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d%s%s", dirfd,
                     name ? "/" : "", name ? name : "");
    if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
        return err_set(e, -ENAMETOOLONG,
                       "listen: the socket name '%s' is too long for a Unix socket address "
                       "(%zu bytes with /proc/self/fd/N/)",
                       name ? name : "", sizeof(sa->sun_path) - 1);
    return 0;
}

/* What is at NAME, told as a person reads it. */
static void describe(const struct stat *st, char *out, size_t size)
{
    snprintf(out, size, "a %s owned by uid %u", util_file_type_name(st->st_mode),
             (unsigned)st->st_uid);
}

/* Could a socket owned by `uid` be one we left behind? Ours (our euid), or one we gave away with
 * --socket-owner. */
static bool owner_ours(uid_t uid, uid_t given)
{
    return uid == geteuid() || (given != (uid_t)-1 && uid == given);
}

/* Is the socket at NAME (already seen as a socket owned by us) served by anyone? A connect()
 * through an O_PATH fd of that very inode: refused means nobody listens (stale). Returns 0 for
 * stale, -EEXIST for live (or unknown), -errno. */
static int probe_stale(int dirfd, const char *name, uid_t given, struct cla_error *e)
{
    _cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return err_setsys(e, -errno, "listen: open '%s'", name);
    struct stat st;
    if (fstat(pfd, &st) < 0)
        return err_setsys(e, -errno, "listen: fstat '%s'", name);
    if (!S_ISSOCK(st.st_mode) || !owner_ours(st.st_uid, given))
        return err_set(e, -EEXIST, "listen: '%s' changed while it was looked at", name);
    struct sockaddr_un sa;
    int r = fd_sockaddr(pfd, NULL, &sa, e);
    if (r < 0)
        return r;
    _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return err_setsys(e, -errno, "listen: socket");
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN ||
        errno == EINPROGRESS)
        return err_set(e, -EEXIST, "listen: '%s' is a live socket: another process listens on it",
                       name);
    if (errno == ECONNREFUSED)
        return 0;
    return err_setsys(e, -EEXIST, "listen: connect to the existing '%s'", name);
}

/* Clears NAME for bind(): nothing there, or a stale socket of ours removed. */
static int clear_name(int dirfd, const char *name, uid_t given, struct cla_error *e)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return err_setsys(e, -errno, "listen: stat '%s'", name);
    }
    char what[96];
    describe(&st, what, sizeof(what));
    if (!S_ISSOCK(st.st_mode) || !owner_ours(st.st_uid, given)) {
        err_set(e, -EEXIST,
                "listen: '%s' exists and is %s, not a stale socket of ours (uid %u): left alone",
                name, what, (unsigned)geteuid());
        err_hint(e, "give --listen a name nothing else uses in the shared directory; clrattach "
                    "replaces only a socket it left behind");
        return -EEXIST;
    }
    int r = probe_stale(dirfd, name, given, e);
    if (r < 0) {
        err_hint(e, "another clrattach may be listening there: give each its own name");
        return r;
    }
    /* The app shares the directory and may swap the name between the probe and here; it can
     * only make us remove something it just put there itself, and bind() below then creates
     * the socket anew or fails (it never follows or reuses what is there). */
    if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
        return err_setsys(e, -errno, "listen: remove the stale socket '%s'", name);
    return 0;
}

int listen_sock_path_fits(const char *path, const char *what, struct cla_error *e)
{
    _Static_assert(LISTEN_PATH_MAX == sizeof(((struct sockaddr_un *)0)->sun_path) - 1,
                   "LISTEN_PATH_MAX is sun_path less its NUL");
    size_t len = strlen(path);
    if (len <= LISTEN_PATH_MAX)
        return 0;
    err_set(e, -ENAMETOOLONG,
            "%s '%s' is %zu bytes, over the %d a Unix socket's path may have (sun_path): a "
            "runtime given it in DOTNET_DiagnosticPorts could never connect",
            what, path, len, LISTEN_PATH_MAX);
    err_hint(e,
             "mount the directory shared with the app at a shorter path (in both containers) "
             "or give a shorter socket name, so the path is at most %d bytes",
             LISTEN_PATH_MAX);
    return -ENAMETOOLONG;
}

int listen_sock_open(const char *path, const struct listen_sock_opts *opts,
                     struct listen_sock **ret, struct cla_error *e)
{
    int fits = listen_sock_path_fits(path, "listen: the socket path", e);
    if (fits < 0)
        return fits;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return err_set(e, -EINVAL, "listen: '%s' names no socket file", path);
    if (strlen(name) > NAME_MAX)
        return err_set(e, -ENAMETOOLONG, "listen: the socket name is longer than %d bytes",
                       NAME_MAX);
    char dir[PATH_MAX];
    if (dlen >= sizeof(dir))
        return err_set(e, -ENAMETOOLONG, "listen: the directory is too long");
    if (slash == path)
        strncpy(dir, "/", sizeof(dir));
    else if (slash)
        memcpy(dir, path, dlen), dir[dlen] = '\0';
    else
        strncpy(dir, ".", sizeof(dir));

    struct listen_sock *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return err_set(e, -ENOMEM, "listen: out of memory");
    ls->fd = -1;
    memcpy(ls->name, name, strlen(name) + 1);
    ls->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int r;
    if (ls->dirfd < 0) {
        r = err_setsys(e, -errno, "listen: open the directory '%s'", dir);
        goto fail;
    }
    struct sockaddr_un sa;
    r = fd_sockaddr(ls->dirfd, name, &sa, e);
    if (r < 0)
        goto fail;
    r = clear_name(ls->dirfd, name, opts->uid, e);
    if (r < 0)
        goto fail;
    ls->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (ls->fd < 0) {
        r = err_setsys(e, -errno, "listen: socket");
        goto fail;
    }
    /* The inode gets 0777 & ~umask at bind(): the umask is set to give exactly opts->mode, and
     * never more for an instant (a wider mode changed afterwards would leave a window in which
     * another uid could connect). Single-threaded here, so the process-wide umask is ours. */
    mode_t old = umask(~opts->mode & 0777);
    int b = bind(ls->fd, (struct sockaddr *)&sa, sizeof(sa));
    int berr = errno;
    umask(old);
    if (b < 0) {
        r = err_setsys(e, -berr, "listen: bind '%s'", path);
        if (berr == EADDRINUSE)
            err_hint(e, "something appeared at the name while clrattach bound it: the app "
                        "shares the directory; start clrattach before the app");
        goto fail;
    }
    /* The inode just created, pinned by an O_PATH fd of the name and checked to be a socket of
     * ours: its identity is what later checks compare with, and a chown goes through it, never
     * through a link the app put there since bind(). */
    {
        _cleanup_close_ int pfd = openat(ls->dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
            r = err_set(e, -ESTALE, "listen: '%s' is no longer the socket just bound", path);
            goto fail;
        }
        ls->dev = st.st_dev;
        ls->ino = st.st_ino;
        if ((opts->uid != (uid_t)-1 || opts->gid != (gid_t)-1) &&
            fchownat(pfd, "", opts->uid, opts->gid, AT_EMPTY_PATH) < 0) {
            r = err_setsys(e, -errno, "listen: chown '%s' to %d:%d", path, (int)opts->uid,
                           (int)opts->gid);
            err_hint(e, "changing the owner needs CAP_CHOWN; run clrattach as the app's uid, "
                        "or share a group (fsGroup) and use --socket-mode 0660");
            goto fail;
        }
    }
    if (listen(ls->fd, LISTEN_BACKLOG) < 0) {
        r = err_setsys(e, -errno, "listen: listen '%s'", path);
        goto fail;
    }
    *ret = ls;
    return 0;
fail:
    listen_sock_close(ls);
    return r;
}

static void drop(struct listen_sock *ls, size_t i)
{
    close(ls->pending[i].fd);
    ls->pending[i] = ls->pending[--ls->npending];
}

void listen_sock_close(struct listen_sock *ls)
{
    if (!ls)
        return;
    while (ls->npending)
        drop(ls, 0);
    if (ls->fd >= 0) {
        close(ls->fd);
        struct stat st;
        /* Only while the name holds the very inode bound: a name the app replaced stays. */
        if (ls->ino && fstatat(ls->dirfd, ls->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_dev == ls->dev && st.st_ino == ls->ino)
            unlinkat(ls->dirfd, ls->name, 0);
    }
    if (ls->dirfd >= 0)
        close(ls->dirfd);
    free(ls);
}

size_t listen_sock_pollfds(const struct listen_sock *ls, struct pollfd *fds, size_t max)
{
    size_t n = 0;
    if (n < max)
        fds[n++] = (struct pollfd){.fd = ls->fd, .events = POLLIN};
    for (size_t i = 0; i < ls->npending && n < max; i++)
        fds[n++] = (struct pollfd){.fd = ls->pending[i].fd, .events = POLLIN};
    return n;
}

int64_t listen_sock_next_deadline(const struct listen_sock *ls)
{
    int64_t d = INT64_MAX;
    for (size_t i = 0; i < ls->npending; i++)
        if (ls->pending[i].deadline < d)
            d = ls->pending[i].deadline;
    return d;
}

/* Reads what has arrived on a waiting connection. Returns 1 when the advertisement is whole, 0
 * for more to come, -1 when the connection must be closed (counted in stats). */
static int read_pending(struct listen_sock *ls, struct pending *p)
{
    /* One byte more than an advertisement: a runtime sends nothing after it until it has our
     * command, so a 35th byte means this is not one. */
    uint8_t extra[ADVERT_SIZE + 1];
    for (;;) {
        ssize_t n = recv(p->fd, extra, ADVERT_SIZE + 1 - p->got, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            ls->stats.hung_up++;
            return -1;
        }
        if (n == 0) {
            ls->stats.hung_up++;
            return -1;
        }
        if (p->got + (size_t)n > ADVERT_SIZE) {
            ls->stats.bad++;
            return -1;
        }
        memcpy(p->buf + p->got, extra, (size_t)n);
        p->got += (size_t)n;
        if (p->got == ADVERT_SIZE) {
            /* Anything already queued behind it is not a runtime's either. */
            n = recv(p->fd, extra, 1, MSG_DONTWAIT | MSG_PEEK);
            if (n != 0 && !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
                ls->stats.bad++;
                return -1;
            }
            return 1;
        }
    }
}

/* Makes room for one more waiting connection: the oldest goes. */
static void evict_oldest(struct listen_sock *ls)
{
    size_t old = 0;
    for (size_t i = 1; i < ls->npending; i++)
        if (ls->pending[i].seq < ls->pending[old].seq)
            old = i;
    ls->stats.evicted++;
    drop(ls, old);
}

int listen_sock_step(struct listen_sock *ls, int64_t now_ms, struct listen_conn *ret, size_t max,
                     struct cla_error *e)
{
    for (int i = 0; i < LISTEN_ACCEPT_BATCH; i++) {
        int c = accept4(ls->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            /* The peer gave up between its connect() and our accept(), or we are out of fds for
             * a moment (a flood): neither is the listening socket's failure. */
            if (errno == ECONNABORTED || errno == EINTR || errno == EMFILE || errno == ENFILE ||
                errno == ENOBUFS || errno == ENOMEM)
                break;
            return err_setsys(e, -errno, "listen: accept");
        }
        ls->stats.accepted++;
        if (ls->npending == LISTEN_PENDING_MAX)
            evict_oldest(ls);
        ls->pending[ls->npending++] =
            (struct pending){.fd = c, .deadline = now_ms + LISTEN_ADVERT_MS, .seq = ls->seq++};
    }

    size_t out = 0;
    for (size_t i = 0; i < ls->npending;) {
        struct pending *p = &ls->pending[i];
        if (out == max)
            break;
        int r = read_pending(ls, p);
        if (r == 0 && now_ms >= p->deadline) {
            ls->stats.slow++;
            r = -1;
        }
        if (r < 0) {
            drop(ls, i);
            continue;
        }
        if (r == 0) {
            i++;
            continue;
        }
        struct listen_conn *c = &ret[out];
        struct cla_error ignored = {0};
        if (advert_decode(p->buf, p->got, &c->adv, &ignored) < 0) {
            ls->stats.bad++;
            drop(ls, i);
            continue;
        }
        struct ucred uc = {0};
        socklen_t len = sizeof(uc);
        if (getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0) {
            ls->stats.hung_up++;
            drop(ls, i);
            continue;
        }
        c->fd = p->fd;
        c->peer_pid = uc.pid;
        c->peer_uid = uc.uid;
        c->peer_gid = uc.gid;
        ls->stats.advertised++;
        out++;
        ls->pending[i] = ls->pending[--ls->npending];
    }
    return (int)out;
}

int listen_sock_check(const struct listen_sock *ls, struct cla_error *e)
{
    struct stat st;
    if (fstatat(ls->dirfd, ls->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return err_setsys(e, -ESTALE, "listen: the socket '%s' is gone", ls->name);
    if (st.st_dev != ls->dev || st.st_ino != ls->ino) {
        char what[96];
        describe(&st, what, sizeof(what));
        err_set(e, -ESTALE, "listen: '%s' was replaced by %s", ls->name, what);
        err_hint(e, "runtimes that start from now on cannot reach clrattach; nothing there is "
                    "followed or removed: restart clrattach once the name is free");
        return -ESTALE;
    }
    return 0;
}

const struct listen_stats *listen_sock_stats(const struct listen_sock *ls)
{
    return &ls->stats;
}

int listen_sock_fd(const struct listen_sock *ls)
{
    return ls->fd;
}
