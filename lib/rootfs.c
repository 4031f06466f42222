/* SPDX-License-Identifier: Apache-2.0 */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

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
        bool last = true;
        for (char *q = p; *q; q++)
            if (*q != '/') {
                last = false;
                break;
            }
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
        int next = dot ? dup(cur) : openat(cur, s, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved_errno = errno;
        close(cur);
        if (next < 0)
            return -saved_errno;
        cur = next;
        *p = saved;
    }
}

int rootfs_open(int rootfd, const char *path, int flags, mode_t mode, struct cla_error *e)
{
    int r = check_path(path, e);
    if (r < 0)
        return r;
    flags |= O_NOFOLLOW | O_CLOEXEC;

    if (!force_fallback && !openat2_missing) {
        struct open_how how = {
            .flags = (uint64_t)flags,
            .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        const char *rel = path;
        while (*rel == '/')
            rel++;
        if (!*rel)
            rel = ".";
        for (;;) {
            int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
            if (fd >= 0) {
                last_openat2 = true;
                return fd;
            }
            /* EAGAIN: a concurrent rename in the target's tree; the kernel asks us to retry. */
            if (errno == EINTR || errno == EAGAIN)
                continue;
            break;
        }
        /* ENOSYS: old kernel; EPERM: seccomp profiles of container runtimes often deny it
         * this way. Both mean "use the walk"; every other errno is the real answer. */
        if (errno != ENOSYS && errno != EPERM)
            return err_setsys(e, -errno, "openat2 '%s' in the target root", path);
        openat2_missing = true;
    }
    last_openat2 = false;
    r = open_walk(rootfd, path, flags, mode);
    if (r < 0)
        return err_setsys(e, r, "open '%s' in the target root", path);
    return r;
}

int rootfs_open_contained(int rootfd, const char *path, int flags, struct cla_error *e)
{
    int r = check_path(path, e);
    if (r < 0)
        return r;
    if (force_fallback || openat2_missing)
        return err_set(e, -ENOSYS,
                       "'%s' in the target root: following its links safely needs "
                       "openat2 (Linux 5.6)",
                       path);
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY),
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    const char *rel = path;
    while (*rel == '/')
        rel++;
    for (;;) {
        int fd = (int)syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
        if (fd >= 0)
            return fd;
        if (errno != EINTR && errno != EAGAIN)
            break;
    }
    return err_setsys(e, -errno, "openat2 '%s' in the target root", path);
}
