/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A vendor home's RID folders told from its other entries (lib/profset/profhome.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>

#include "profset/profhome.h"

static void test_rid_folder(void **state)
{
    (void)state;
    static const char *const yes[] = {"linux-x64",        "linux-arm64", "linux-musl-x64",
                                      "linux-musl-arm64", "linux-arm",   "linux-bionic-arm64",
                                      "win-x64",          "win-arm64",   "osx-arm64",
                                      "freebsd-x64",      "linux-x86",   "linux-s390x"};
    static const char *const no[] = {"net",
                                     "LICENSE",
                                     "linux",
                                     "x64",
                                     "linux-",
                                     "-x64",
                                     "linux-foo-x64",
                                     "linux-x64z",
                                     "linux-musl",
                                     "linux-x64-extra",
                                     "Linux-x64",
                                     "netcoreapp3.1",
                                     "linux-musl-x64-",
                                     ""};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!profhome_rid_folder(yes[i]))
            fail_msg("%s not taken for a RID folder", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (profhome_rid_folder(no[i]))
            fail_msg("%s taken for a RID folder", no[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rid_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
