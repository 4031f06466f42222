/* SPDX-License-Identifier: Apache-2.0 */
/*
 * no_openat2 PROGRAM [ARG...]: runs PROGRAM as on a kernel without openat2 (Linux < 5.6).
 *
 * A seccomp filter answers openat2 with ENOSYS and lets every other call through; then PROGRAM
 * is exec'd. Filters stack and the kernel takes the strictest answer of all of them, so the
 * filter clrattach installs on top still kills what it forbids, and its own EPERM for openat2
 * after delivery (an errno, like ours) is equally a reason to take the fallback walk. Used by
 * tests/e2e/test_no_openat2.sh so that the fallback is proven on the whole attach path.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: no_openat2 PROGRAM [ARG...]\n");
        return 2;
    }
    /* no_new_privs: needed to load a filter without CAP_SYS_ADMIN, and kept across the exec
     * (clrattach sets it again itself). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        fprintf(stderr, "no_openat2: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
        return 125;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        fprintf(stderr, "no_openat2: seccomp_init failed\n");
        return 125;
    }
    int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
    if (r == 0)
        r = seccomp_load(ctx);
    seccomp_release(ctx);
    if (r < 0) {
        fprintf(stderr, "no_openat2: loading the filter: %s\n", strerror(-r));
        return 125;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "no_openat2: exec %s: %s\n", argv[1], strerror(errno));
    return 127;
}
