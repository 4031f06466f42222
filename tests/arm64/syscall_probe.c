/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints the syscalls clrattach needs that the kernel (or the emulator running this program)
 * does not implement, one name a line: "seccomp", "openat2". tests/arm64/run.sh runs it under
 * qemu-user to know which checks are not applicable there, rather than assuming it.
 * Exit 0 whatever it finds.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Arguments that no implementation accepts: a kernel that has the call answers EFAULT or
 * EINVAL, one that does not answers ENOSYS before looking at them. */
static int lacks(long nr)
{
    errno = 0;
    return syscall(nr, -1L, NULL, NULL, 0L) == -1 && errno == ENOSYS;
}

int main(void)
{
    if (lacks(SYS_seccomp))
        puts("seccomp");
    if (lacks(SYS_openat2))
        puts("openat2");
    return 0;
}
