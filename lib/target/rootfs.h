/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Path resolution inside a hostile root (a target's /proc/<pid>/root). Every open below a target
 * root goes through here: no symlink or magic link is ever followed, ".." is refused, and the
 * walk cannot leave the root. openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS)
 * does it in the kernel; where openat2 is missing (Linux < 5.6, or a seccomp profile that hides
 * it with ENOSYS/EPERM) a component-by-component O_PATH|O_NOFOLLOW walk gives the same answer.
 *
 * Nothing under a target root is opened before its type is known: the name is pinned with an
 * O_PATH open (which runs no driver, waits for no FIFO writer, takes no terminal), checked with
 * fstat against the type the caller expects, and only then reopened through the pinned fd with
 * O_NONBLOCK|O_NOCTTY. So a FIFO, a pty or a device planted under a name can neither block us
 * nor become our controlling terminal: it is refused, and the message says what it was.
 */
#ifndef CLRATTACH_ROOTFS_H
#define CLRATTACH_ROOTFS_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"

/* What a caller expects under a name. */
enum rootfs_type {
    ROOTFS_REG,  /* a regular file, opened with the caller's flags */
    ROOTFS_DIR,  /* a directory, opened with the caller's flags (O_DIRECTORY is added) */
    ROOTFS_SOCK, /* a socket: only an O_PATH fd (connect through /proc/self/fd/N) */
    ROOTFS_ANY,  /* whatever is there, a symlink included: only an O_PATH fd, for fstat */
};

/*
 * Opens `path` below `rootfd` (a leading '/' means the root itself) as type `want`.
 *
 * `flags` are open(2) flags: O_RDONLY/O_WRONLY/O_RDWR for REG and DIR; O_PATH alone returns the
 * pinned fd after the type check (the only choice for SOCK and ANY). O_NONBLOCK, O_NOCTTY,
 * O_CLOEXEC are always added, and O_NOFOLLOW wherever a name is resolved. O_CREAT needs O_EXCL
 * and REG: it never opens an existing name, and the new file is checked to be regular. `mode`
 * is used with O_CREAT only.
 *
 * Returns the fd. Errors: -ENOENT; -ELOOP (a symlink on the way, or as the last name when
 * REG is wanted or the path ends in '/'), with either strategy; -EINVAL for ".." or flags outside
 * the above; and when something else than `want` is there, a message naming it ("is a FIFO, not a
 * regular file") with -ENXIO (REG found a FIFO, device or socket: what open(2) itself answers for a
 * socket), -EISDIR (REG found a directory), -ENOTDIR (DIR), -ENOTSOCK (SOCK). `e` may be NULL
 * (here and below) where the caller only needs the code.
 */
int rootfs_open(int rootfd, const char *path, enum rootfs_type want, int flags, mode_t mode,
                struct cla_error *e);

/* Like rootfs_open() without O_CREAT, but symlinks inside the root are followed, resolved
 * against the root itself (RESOLVE_IN_ROOT): for trees made of links by design, such as the
 * kubelet's projected service-account volume. Magic links are still refused, and the type is
 * checked on the inode the links lead to. Without openat2 a walk of ours resolves each link's
 * text inside the root; it refuses what would climb above the root (-EXDEV), a /proc link
 * (-ELOOP) and more than TARGET_LINKS_MAX links (-ELOOP). */
int rootfs_open_contained(int rootfd, const char *path, enum rootfs_type want, int flags,
                          struct cla_error *e);

/* Like rootfs_open_contained(), but links may only lead beneath `dirfd` (RESOLVE_BENEATH): an
 * absolute link is refused (-EXDEV) as well as one climbing above it. For a tree of our own
 * that must be self-contained, such as a profiler directory. */
int rootfs_open_beneath(int dirfd, const char *path, enum rootfs_type want, int flags,
                        struct cla_error *e);

/* Tests only: force the fallback walk (true) or let openat2 be tried first (false). */
void rootfs_force_fallback(bool on);

/* Whether the last rootfs_open() used openat2 (true) or the walk (false). */
bool rootfs_last_used_openat2(void);

#endif
