/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_EMULATION_H
#define CLRATTACH_TEST_EMULATION_H

/*
 * Checks that need a syscall an emulator lacks. qemu-user (7.2, Debian bookworm) implements
 * neither seccomp() nor openat2(): both are ENOSYS for every program it runs, so on an arm64
 * build tested under emulation (tests/arm64/run.sh) the kernel paths cannot be proven, only the
 * fallbacks. Such a check is reported, never passed in silence: emulation_lacks() prints
 * "n/a: ..." (tests/arm64/run.sh lists those lines) and the caller leaves the check out.
 *
 * It answers true only when CLRATTACH_TEST_EMULATOR names the emulator (the arm64 suite sets
 * it) AND the syscall is really ENOSYS: on a native kernel, or with the variable unset, every
 * check runs as before and a kernel without the syscall fails it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline bool emulation_lacks(long nr, const char *name, const char *check)
{
    const char *emu = getenv("CLRATTACH_TEST_EMULATOR");
    if (!emu || !*emu)
        return false;
    /* Arguments no implementation accepts (a NULL path, a zero size): EFAULT or EINVAL from a
     * kernel that has the call, ENOSYS from one that does not. */
    errno = 0;
    long r = syscall(nr, -1L, NULL, NULL, 0L);
    if (r != -1 || errno != ENOSYS)
        return false;
    printf("n/a: %s: %s is ENOSYS under %s\n", check, name, emu);
    fflush(stdout);
    return true;
}

#endif
