/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_ROOT_H
#define CLRATTACH_TEST_ROOT_H

/*
 * Checks that need root: a file handed to uid 1000 (CAP_CHOWN), a character device made with
 * mknod(), setfsuid() to an id that is not ours, namespaces of a child. CI runs the unit suite
 * as root, so they run there in full; a developer's run as another user reports them skipped
 * (cmocka's skip()) instead of failing for a privilege the code under test rightly lacks. Only
 * such checks use it: everything that can run unprivileged still runs. Under CI (CI=true) a
 * non-root run is a failure, never a skip, as no check may skip there. Include after cmocka.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SKIP_UNLESS_ROOT(why)                                                                      \
    do {                                                                                           \
        if (geteuid() != 0) {                                                                      \
            const char *ci_ = getenv("CI");                                                        \
            if (ci_ && strcmp(ci_, "true") == 0)                                                   \
                fail_msg("%s needs root (%s): run the unit suite as root under CI", __func__,      \
                         why);                                                                     \
            print_message("skipped: %s needs root (%s)\n", __func__, why);                         \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#endif
