/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_EMULATION_H
#define CLRATTACH_TEST_EMULATION_H

/*
 * Checks that need a syscall an emulator lacks. qemu-user (7.2, Debian bookworm) implements
 * neither seccomp() nor openat2(): both are ENOSYS for every program it runs, so on an arm64
 * build tested under emulation (tests/arm64/run.sh) the kernel paths cannot be proven, only the
 * fallbacks. Such a part of a check is reported, never passed in silence: emulation_lacks()
 * prints "n/a: ..." (tests/arm64/run.sh lists those lines) and the caller leaves out that part
 * alone. emulator_lacks() asks the same without a word, for a check that runs in full either way
 * and only works around what the emulator lacks.
 *
 * Both answer true only when CLRATTACH_TEST_EMULATOR names the emulator (the arm64 suite sets
 * it) AND the syscall is really ENOSYS: on a native kernel, or with the variable unset, every
 * check runs as before and a kernel without the syscall fails it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Whether this runs under the emulator and it lacks syscall `nr`, without a word: for a check
 * that runs in full either way and only has to work around what the emulator does not have. */
static inline bool emulator_lacks(long nr)
{
    const char *emu = getenv("CLRATTACH_TEST_EMULATOR");
    if (!emu || !*emu)
        return false;
    /* Arguments no implementation accepts (a NULL path, a zero size): EFAULT or EINVAL from a
     * kernel that has the call, ENOSYS from one that does not. */
    errno = 0;
    long r = syscall(nr, -1L, NULL, NULL, 0L);
    return r == -1 && errno == ENOSYS;
}

/* The same, for a check that leaves a part out: says which ("n/a: CHECK: NAME is ENOSYS"). */
static inline bool emulation_lacks(long nr, const char *name, const char *check)
{
    if (!emulator_lacks(nr))
        return false;
    printf("n/a: %s: %s is ENOSYS under %s\n", check, name, getenv("CLRATTACH_TEST_EMULATOR"));
    fflush(stdout);
    return true;
}

#endif
