/* SPDX-License-Identifier: Apache-2.0 */
/* perfmap.c's pure part: where the runtime writes its perf map, from its environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "flow/perfmap.h"

static void dir_of(const char *env, size_t len, const char *want)
{
    char out[256];
    perfmap_dir_of(env, len, out, sizeof(out));
    assert_string_equal(out, want);
}

static void test_dir_of(void **state)
{
    (void)state;
    /* TMPDIR plays no part: /tmp unless PerfMapJitDumpPath says otherwise. */
    static const char plain[] = "TMPDIR=/var/app\0HOME=/\0";
    dir_of(plain, sizeof(plain) - 1, "/tmp");
    dir_of(NULL, 0, "/tmp");
    static const char dotnet[] =
        "COMPlus_PerfMapJitDumpPath=/old\0DOTNET_PerfMapJitDumpPath=/maps/\0";
    dir_of(dotnet, sizeof(dotnet) - 1, "/maps");
    static const char complus[] = "COMPlus_PerfMapJitDumpPath=/old\0";
    dir_of(complus, sizeof(complus) - 1, "/old");
    static const char empty[] = "DOTNET_PerfMapJitDumpPath=\0";
    dir_of(empty, sizeof(empty) - 1, "/tmp");
    /* The app's text is rendered before it is shown. */
    static const char esc[] = "DOTNET_PerfMapJitDumpPath=/m\x1b[2J\0";
    dir_of(esc, sizeof(esc) - 1, "/m\\x1b[2J");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dir_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
