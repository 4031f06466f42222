/* SPDX-License-Identifier: Apache-2.0 */
/* The raw syscalls that the C libraries we build with (glibc 2.36, musl 1.2) either lack or
 * wrap only in later releases: one declaration each, with the number for kernels whose headers
 * predate it. Each returns what the kernel does: the result, or -1 with errno set. */
#ifndef CLRATTACH_SYSCALLS_H
#define CLRATTACH_SYSCALLS_H

#include <linux/capability.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Linux 5.6+; ENOSYS before, which the callers' fallback walk handles. */
static inline int sys_openat2(int dirfd, const char *path, const struct open_how *how)
{
    return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

/* Linux 5.3+. */
static inline int sys_pidfd_open(pid_t pid, unsigned flags)
{
    return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* Linux 5.1+. */
static inline int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned flags)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}

/* capget/capset directly: libcap is not linked, and only the calling thread's sets matter. */
static inline int sys_capget(struct __user_cap_header_struct *hdr,
                             struct __user_cap_data_struct *data)
{
    return (int)syscall(SYS_capget, hdr, data);
}

static inline int sys_capset(struct __user_cap_header_struct *hdr,
                             const struct __user_cap_data_struct *data)
{
    return (int)syscall(SYS_capset, hdr, data);
}

/* seccomp(2) itself: glibc has no wrapper. */
static inline long sys_seccomp(unsigned op, unsigned flags, void *args)
{
    return syscall(SYS_seccomp, op, flags, args);
}

#endif
