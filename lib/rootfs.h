/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_ROOTFS_H
#define CLRATTACH_ROOTFS_H

/*
 * Path resolution inside a hostile root (a target's /proc/<pid>/root). Every open below a target
 * root goes through here: no symlink or magic link is ever followed, ".." is refused, and the
 * walk cannot leave the root. openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS)
 * does it in the kernel; where openat2 is missing (Linux < 5.6, or a seccomp profile that hides
 * it with ENOSYS/EPERM) a component-by-component O_PATH|O_NOFOLLOW walk gives the same answer.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

/* Opens `path` below `rootfd` (a leading '/' means the root itself) with open(2) `flags` and
 * `mode`; O_NOFOLLOW and O_CLOEXEC are always added. A symlink anywhere in the path gives -ELOOP
 * (or -ENOTDIR for a link in a directory position), ".." gives -EINVAL. Returns the fd. */
int rootfs_open(int rootfd, const char *path, int flags, mode_t mode, struct cla_error *e);

/* Like rootfs_open() but symlinks inside the root are followed, resolved against the root
 * itself (RESOLVE_IN_ROOT): for trees made of links by design, such as the kubelet's projected
 * service-account volume. Magic links are still refused. Needs openat2 (Linux 5.6): without
 * it, -ENOSYS, as no walk of ours could follow links as safely. */
int rootfs_open_contained(int rootfd, const char *path, int flags, struct cla_error *e);

/* Tests only: force the fallback walk (true) or let openat2 be tried first (false). */
void rootfs_force_fallback(bool on);

/* Whether the last rootfs_open() used openat2 (true) or the walk (false). */
bool rootfs_last_used_openat2(void);

#endif
