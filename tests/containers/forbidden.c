/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny static program the container suite runs under clrattach's exported seccomp profile
 * (bind-mounted into the clrattach image, which has no shell): it makes calls the profile allows
 * and calls it does not, and prints one "NAME ok" or "NAME errno=N" line each. Calls that
 * succeed unconfined for any user (getppid, getcwd, socket(AF_NETLINK)) show that the refusal
 * comes from the runtime's filter, not from missing privileges; this program installs no filter
 * of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *name, long rc)
{
    if (rc < 0)
        printf("%s errno=%d\n", name, errno);
    else
        printf("%s ok\n", name);
}

int main(void)
{
    char buf[256];
    /* allowed by the profile */
    report("getpid", syscall(SYS_getpid));
    report("socket_inet", syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
    /* not in the profile: the default action answers (ERRNO, defaultErrnoRet) */
    report("getppid", syscall(SYS_getppid));
    report("getcwd", syscall(SYS_getcwd, buf, sizeof(buf)));
    report("socket_netlink", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */));
    /* clone3: its own answer in the profile (ENOSYS, so libc falls back to clone) */
    report("clone3", syscall(SYS_clone3, NULL, 0));
    fflush(stdout);
    return 0;
}
