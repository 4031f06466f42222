/* SPDX-License-Identifier: Apache-2.0 */
/* Opens inside a target's root: openat2 with the RESOLVE_* flags, or the O_PATH|O_NOFOLLOW walk
 * where it is missing, then the type check and the reopen through the pinned fd. */
#include "target/rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/util.h"
#include "base/syscalls.h"

/* What a lookup does with symbolic links: refuse every one (rootfs_open), follow them inside
 * the root with absolute ones from the root (rootfs_open_contained), or follow them only
 * beneath the directory, absolute ones refused (rootfs_open_beneath). */
enum links { LINKS_NONE, LINKS_IN_ROOT, LINKS_BENEATH };

static bool force_fallback;
static bool openat2_missing;
static bool last_openat2;

void rootfs_force_fallback(bool on)
{
    force_fallback = on;
}

bool rootfs_last_used_openat2(void)
{
    return last_openat2;
}

/* Checks the path's shape once, for both strategies: no "..", no empty result past the root. */
static int check_path(const char *path, struct cla_error *e)
{
    size_t len = strlen(path);
    if (len >= TARGET_PATH_MAX)
        return err_set(e, -ENAMETOOLONG, "path of %zu bytes inside the target root", len);
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        const char *s = p;
        while (*p && *p != '/')
            p++;
        if (p - s == 2 && s[0] == '.' && s[1] == '.')
            return err_set(e, -EINVAL, "path '%s' inside the target root contains '..'", path);
    }
    return 0;
}

static int open_walk(int rootfd, const char *path, int flags, mode_t mode)
{
    char buf[TARGET_PATH_MAX];
    size_t len = strlen(path);
    memcpy(buf, path, len + 1);

    /* The current directory of the walk; starts as a duplicate of the root so that every step
     * can close the previous one. */
    int cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    char *p = buf;
    for (;;) {
        while (*p == '/')
            p++;
        char *s = p;
        while (*p && *p != '/')
            p++;
        /* A trailing slash makes the last name a directory position, as in the kernel's own
         * lookup: "tmp/link/" crosses the link (refused) where "tmp/link" would pin it. */
        bool last = *p == '\0';
        if (p == s) {
            /* Path was empty or only slashes: the root itself. */
            int fd = openat(cur, ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC, mode);
            int r = fd < 0 ? -errno : fd;
            close(cur);
            return r;
        }
        char saved = *p;
        *p = '\0';
        bool dot = p - s == 1 && s[0] == '.';
        if (last) {
            int fd = openat(cur, s, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            int r = fd < 0 ? -errno : fd;
            close(cur);
            return r;
        }
        /* O_PATH|O_NOFOLLOW on a symlink opens the link itself; O_DIRECTORY then fails with
         * ENOTDIR, so a planted link in a directory position can never be crossed. */
        int next = dot ? fcntl(cur, F_DUPFD_CLOEXEC, 0)
                       : openat(cur, s, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved_errno = errno;
        /* A link there is ELOOP, what openat2's RESOLVE_NO_SYMLINKS answers: the same refusal
         * reads the same with either strategy. */
        struct stat lst;
        if (next < 0 && saved_errno == ENOTDIR && fstatat(cur, s, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(lst.st_mode))
            saved_errno = ELOOP;
        close(cur);
        if (next < 0)
            return -saved_errno;
        cur = next;
        *p = saved;
    }
}

/* The directories a link-following walk holds: [0] is the root. ".." pops back to a directory
 * this walk itself opened, never asks the kernel for a parent: a directory the target moves
 * elsewhere meanwhile cannot take the walk out of the root. */
struct walk_stack {
    int fd[TARGET_WALK_DEPTH_MAX + 1];
    int depth;
};

static void walk_stack_close(struct walk_stack *ws)
{
    for (; ws->depth >= 0; ws->depth--)
        util_closep(&ws->fd[ws->depth]);
}

/*
 * The walk for rootfs_open_contained() and rootfs_open_beneath() where openat2 is missing: the
 * kernel never follows a link (every name is opened O_PATH|O_NOFOLLOW); a link's text is read
 * and resolved by us, a relative one from the link's directory, an absolute one from the root
 * (LINKS_IN_ROOT) or not at all (LINKS_BENEATH: -EXDEV). What RESOLVE_IN_ROOT/RESOLVE_BENEATH|
 * RESOLVE_NO_MAGICLINKS guarantee holds: a /proc magic link is refused (its text is not where
 * the kernel would jump), at most TARGET_LINKS_MAX links are followed (a loop ends in ELOOP),
 * and ".." above the root is refused with EXDEV rather than clamped, as nothing legitimate in a
 * service-account tree or a library path climbs out of the root. Returns an O_PATH fd.
 */
static int open_walk_contained(int rootfd, const char *path, enum links links_mode,
                               struct cla_error *e)
{
    char todo[TARGET_PATH_MAX], link[TARGET_PATH_MAX], next[TARGET_PATH_MAX];
    snprintf(todo, sizeof(todo), "%s", path);
    _cleanup_(walk_stack_close) struct walk_stack ws = {.depth = 0};
    ws.fd[0] = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    if (ws.fd[0] < 0)
        return err_setsys(e, -errno, "open '%s' in the target root", path);
    int links = 0;
    char *p = todo;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p) /* Ends at a directory (the root itself for "" or "/"). */
            return util_take_fd(&ws.fd[ws.depth]);
        char *s = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - s);
        if (n == 1 && s[0] == '.')
            continue;
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (ws.depth == 0)
                return err_set(e, -EXDEV, "'%s' in the target root: a link leads out of the root",
                               path);
            util_closep(&ws.fd[ws.depth--]);
            continue;
        }
        char saved = *p;
        *p = '\0';
        _cleanup_close_ int fd = openat(ws.fd[ws.depth], s, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return err_setsys(e, -errno, "open '%s' in the target root", path);
        *p = saved;
        struct stat st;
        if (fstat(fd, &st) < 0)
            return err_setsys(e, -errno, "stat '%s' in the target root", path);
        if (S_ISDIR(st.st_mode)) {
            if (ws.depth >= TARGET_WALK_DEPTH_MAX)
                return err_set(e, -ENAMETOOLONG, "'%s' in the target root: more than %d levels",
                               path, TARGET_WALK_DEPTH_MAX);
            ws.fd[++ws.depth] = util_take_fd(&fd);
            continue;
        }
        if (!S_ISLNK(st.st_mode)) {
            /* "file/" is ENOTDIR too, as in the kernel. */
            if (*p)
                return err_set(e, -ENOTDIR, "'%s' in the target root: a %s in a directory position",
                               path, util_file_type_name(st.st_mode));
            return util_take_fd(&fd);
        }
        /* A link. procfs links (/proc/<pid>/root, fd/N, exe) are the magic ones: the kernel
         * jumps to an inode, anywhere, whatever their text says. Refused by filesystem, as
         * RESOLVE_NO_MAGICLINKS does; an ordinary link's text is ours to resolve. */
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0 || sfs.f_type == PROC_SUPER_MAGIC)
            return err_set(e, -ELOOP, "'%s' in the target root: a link of /proc, not followed",
                           path);
        if (++links > TARGET_LINKS_MAX)
            return err_set(e, -ELOOP, "'%s' in the target root: more than %d symbolic links", path,
                           TARGET_LINKS_MAX);
        ssize_t len = readlinkat(fd, "", link, sizeof(link));
        if (len < 0)
            return err_setsys(e, -errno, "readlink '%s' in the target root", path);
        if (len == 0 || (size_t)len >= sizeof(link))
            return err_set(e, -ENAMETOOLONG,
                           "'%s' in the target root: a link's text is empty or too long", path);
        link[len] = '\0';
        if (link[0] == '/' && links_mode == LINKS_BENEATH)
            return err_set(e, -EXDEV, "'%s': an absolute link, not followed beneath the directory",
                           path);
        int w = snprintf(next, sizeof(next), "%s%s", link, p);
        if (w < 0 || (size_t)w >= sizeof(next))
            return err_set(e, -ENAMETOOLONG,
                           "'%s' in the target root: longer than %d bytes once its links are "
                           "expanded",
                           path, TARGET_PATH_MAX);
        if (link[0] == '/')
            while (ws.depth > 0)
                util_closep(&ws.fd[ws.depth--]);
        memcpy(todo, next, (size_t)w + 1);
        p = todo;
    }
}

/*
 * One resolution of `path` with `flags` exactly as given: openat2 where the kernel has it, else
 * the walk that matches `links`. No type check here.
 */
static int resolve(int rootfd, const char *path, int flags, mode_t mode, enum links links,
                   struct cla_error *e)
{
    bool contained = links != LINKS_NONE;
    if (!force_fallback && !openat2_missing) {
        struct open_how how = {
            .flags = (uint64_t)flags,
            .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
            .resolve = (links == LINKS_BENEATH ? RESOLVE_BENEATH : RESOLVE_IN_ROOT) |
                       RESOLVE_NO_MAGICLINKS | (contained ? 0 : RESOLVE_NO_SYMLINKS),
        };
        const char *rel = path;
        while (*rel == '/')
            rel++;
        if (!*rel)
            rel = ".";
        /* EAGAIN: a rename anywhere on the machine while the kernel resolved a ".." (a link's
         * target may hold one when `contained`); it asks us to retry. A target that renames in
         * a loop could keep asking: the retries are capped. EINTR cannot come from a FIFO here
         * (O_PATH and O_NONBLOCK never wait), only from a signal during a slow lookup. */
        for (int tries = 0;; tries++) {
            int fd = sys_openat2(rootfd, rel, &how);
            if (fd >= 0) {
                last_openat2 = true;
                return fd;
            }
            if ((errno != EINTR && errno != EAGAIN) || tries >= TARGET_OPEN_RETRIES_MAX)
                break;
        }
        /* ENOSYS: old kernel; EPERM: seccomp profiles of container runtimes often deny it
         * this way (and our own filter does after delivery). Both mean "use the walk"; every
         * other errno is the real answer. */
        if (errno != ENOSYS && errno != EPERM)
            return err_setsys(e, -errno, "openat2 '%s' in the target root", path);
        openat2_missing = true;
    }
    last_openat2 = false;
    /* The contained walk opens O_PATH only: open_typed() asks nothing else of it. */
    if (contained)
        return open_walk_contained(rootfd, path, links, e);
    int r = open_walk(rootfd, path, flags, mode);
    if (r < 0)
        return err_setsys(e, r, "open '%s' in the target root", path);
    return r;
}

static const char *want_name(enum rootfs_type want)
{
    switch (want) {
    case ROOTFS_REG: return "a regular file";
    case ROOTFS_DIR: return "a directory";
    case ROOTFS_SOCK: return "a socket";
    case ROOTFS_ANY: break;
    }
    return "anything";
}

/* Is the pinned inode what the caller expects? The refusal names what was found instead. */
static int check_type(const struct stat *st, enum rootfs_type want, const char *path,
                      struct cla_error *e)
{
    unsigned fmt = st->st_mode & S_IFMT;
    int code = 0;
    switch (want) {
    case ROOTFS_REG:
        if (fmt != S_IFREG)
            code = fmt == S_IFLNK ? -ELOOP : fmt == S_IFDIR ? -EISDIR : -ENXIO;
        break;
    case ROOTFS_DIR:
        if (fmt != S_IFDIR)
            code = -ENOTDIR;
        break;
    case ROOTFS_SOCK:
        if (fmt != S_IFSOCK)
            code = -ENOTSOCK;
        break;
    case ROOTFS_ANY: break;
    }
    if (code == 0)
        return 0;
    return err_set(e, code, "'%s' in the target root is a %s, not %s", path,
                   util_file_type_name(fmt), want_name(want));
}

/*
 * Opens the inode pinned by `pin` (an O_PATH fd, its type checked) for real, without resolving
 * any name of the target's again. A directory through its own ".". Anything else through our
 * own procfs's magic link /proc/self/fd/N, which the kernel resolves to that very inode;
 * O_NOFOLLOW cannot be given there (the last component IS the magic link: ELOOP), and need not
 * be, as the link is ours and names no path of the target's.
 */
static int reopen(int pin, const struct stat *pst, enum rootfs_type want, int flags,
                  const char *path, struct cla_error *e)
{
    int extra = O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int fd;
    if (want == ROOTFS_DIR) {
        fd = openat(pin, ".", flags | O_DIRECTORY | O_NOFOLLOW | extra);
    } else {
        char self[40];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", pin);
        fd = openat(AT_FDCWD, self, flags | extra);
    }
    if (fd < 0) {
        /* ENOENT here is not "absent": the name was just pinned; our /proc is missing. */
        if (errno == ENOENT)
            return err_set(e, -ENOSYS,
                           "reopen '%s' in the target root: /proc/self/fd is missing (clrattach "
                           "needs procfs mounted at /proc)",
                           path);
        return err_setsys(e, -errno, "open '%s' in the target root", path);
    }
    /* The magic link cannot lead elsewhere; checking costs one fstat and states the invariant
     * that every caller relies on. */
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != pst->st_dev || st.st_ino != pst->st_ino) {
        close(fd);
        return err_set(e, -EIO, "'%s' in the target root changed while it was opened", path);
    }
    return fd;
}

/* The one place every open below a target root ends up: pin, check the type, reopen. */
static int open_typed(int rootfd, const char *path, enum rootfs_type want, int flags, mode_t mode,
                      enum links links, struct cla_error *e)
{
    bool contained = links != LINKS_NONE;
    int r = check_path(path, e);
    if (r < 0)
        return r;
    bool path_only = want == ROOTFS_SOCK || want == ROOTFS_ANY;
    if (((flags & O_PATH) || path_only) && flags != O_PATH)
        return err_set(e, -EINVAL, "'%s': only O_PATH opens a socket or an unchecked type", path);
    if (flags & O_CREAT) {
        if (want != ROOTFS_REG || !(flags & O_EXCL) || contained)
            return err_set(e, -EINVAL, "'%s': creation needs O_EXCL and a regular file", path);
        /* O_EXCL never opens what is there (a FIFO, a link): it fails with EEXIST. */
        _cleanup_close_ int fd =
            resolve(rootfd, path, flags | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC, mode,
                    LINKS_NONE, e);
        if (fd < 0)
            return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
            return err_setsys(e, -errno, "stat '%s' in the target root", path);
        if ((r = check_type(&st, ROOTFS_REG, path, e)) < 0)
            return r;
        return util_take_fd(&fd);
    }

    /* O_PATH runs no driver's open, waits for no FIFO peer and takes no terminal: the name is
     * pinned before anything about it is known. */
    _cleanup_close_ int pin =
        resolve(rootfd, path, O_PATH | O_CLOEXEC | (contained ? 0 : O_NOFOLLOW), 0, links, e);
    if (pin < 0)
        return pin;
    struct stat st;
    if (fstat(pin, &st) < 0)
        return err_setsys(e, -errno, "stat '%s' in the target root", path);
    if ((r = check_type(&st, want, path, e)) < 0)
        return r;
    if (flags == O_PATH)
        return util_take_fd(&pin);
    return reopen(pin, &st, want, flags, path, e);
}

int rootfs_open(int rootfd, const char *path, enum rootfs_type want, int flags, mode_t mode,
                struct cla_error *e)
{
    return open_typed(rootfd, path, want, flags, mode, LINKS_NONE, e);
}

int rootfs_open_contained(int rootfd, const char *path, enum rootfs_type want, int flags,
                          struct cla_error *e)
{
    return open_typed(rootfd, path, want, flags, 0, LINKS_IN_ROOT, e);
}

int rootfs_open_beneath(int dirfd, const char *path, enum rootfs_type want, int flags,
                        struct cla_error *e)
{
    return open_typed(dirfd, path, want, flags, 0, LINKS_BENEATH, e);
}
