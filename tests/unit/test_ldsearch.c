/* SPDX-License-Identifier: Apache-2.0 */
/* The loader's search order (lib/profset/ldsearch.c) for glibc and musl targets. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profset/ldsearch.h"
#include "base/util.h"

/* The list as "why:dir" joined with spaces, for one readable comparison. */
static const char *joined(const struct ld_search *s)
{
    static char out[LDSEARCH_BUF * 2];
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n; i++)
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s:%s", i ? " " : "", s->why[i],
                              s->dir[i]);
    return out;
}

static void test_glibc_runpath_order(void **state)
{
    (void)state;
    struct ld_request rq = {.libc = RID_LIBC_GLIBC,
                            .arch = RID_ARCH_X64,
                            .runpath = "$ORIGIN/lib:${ORIGIN}/../shared:/opt/x",
                            .origin = "/tmp/vendor-0123",
                            .ld_library_path = "/app/native:relative::/app/native/",
                            .ld_library_path_len = 34};
    struct ld_search s;
    assert_int_equal(ldsearch_dirs(&rq, &s, NULL), 0);
    /* LD_LIBRARY_PATH before RUNPATH; relative and empty entries and duplicates dropped. */
    assert_string_equal(joined(&s),
                        "LD_LIBRARY_PATH:/app/native RUNPATH:/tmp/vendor-0123/lib "
                        "RUNPATH:/tmp/vendor-0123/../shared RUNPATH:/opt/x "
                        "default:/lib/x86_64-linux-gnu default:/usr/lib/x86_64-linux-gnu "
                        "default:/lib64 default:/usr/lib64 default:/lib default:/usr/lib "
                        "default:/usr/local/lib");
}

static void test_glibc_rpath_first(void **state)
{
    (void)state;
    struct ld_request rq = {.libc = RID_LIBC_GLIBC,
                            .arch = RID_ARCH_ARM64,
                            .runpath = "$ORIGIN",
                            .runpath_is_rpath = true,
                            .origin = "/p",
                            .ld_library_path = "/l",
                            .ld_library_path_len = 2};
    struct ld_search s;
    assert_int_equal(ldsearch_dirs(&rq, &s, NULL), 0);
    assert_string_equal(s.why[0], "RPATH");
    assert_string_equal(s.dir[0], "/p");
    assert_string_equal(s.dir[1], "/l");
    assert_string_equal(s.dir[2], "/lib/aarch64-linux-gnu");
}

static void test_musl_order_and_path_file(void **state)
{
    (void)state;
    const char *pathfile = "/usr/lib/extra\n/lib:/opt/musl\n";
    struct ld_request rq = {.libc = RID_LIBC_MUSL,
                            .arch = RID_ARCH_X64,
                            .runpath = "$ORIGIN/lib",
                            .origin = "/tmp/d",
                            .ld_library_path = "/l",
                            .ld_library_path_len = 2};
    struct ld_search s;
    assert_int_equal(ldsearch_dirs(&rq, &s, NULL), 0);
    assert_string_equal(joined(&s), "LD_LIBRARY_PATH:/l RUNPATH:/tmp/d/lib default:/lib "
                                    "default:/usr/local/lib default:/usr/lib");
    rq.musl_path = pathfile;
    rq.musl_path_len = strlen(pathfile);
    assert_int_equal(ldsearch_dirs(&rq, &s, NULL), 0);
    assert_string_equal(joined(&s), "LD_LIBRARY_PATH:/l RUNPATH:/tmp/d/lib "
                                    "default:/usr/lib/extra default:/lib default:/opt/musl");
    assert_string_equal(ldsearch_musl_arch(RID_ARCH_ARM64), "aarch64");
    assert_null(ldsearch_musl_arch(RID_ARCH_UNKNOWN));
}

/* Tokens that depend on the loader's build, and $ORIGIN where it has no meaning, are skipped. */
static void test_tokens_skipped(void **state)
{
    (void)state;
    struct ld_request rq = {.libc = RID_LIBC_GLIBC,
                            .arch = RID_ARCH_UNKNOWN,
                            .runpath = "/a/$LIB:$ORIGINAL/x:$PLATFORM:/b",
                            .origin = "/o",
                            .ld_library_path = "$ORIGIN/x:/c",
                            .ld_library_path_len = 12};
    struct ld_search s;
    assert_int_equal(ldsearch_dirs(&rq, &s, NULL), 0);
    assert_string_equal(joined(&s), "LD_LIBRARY_PATH:/c RUNPATH:/b default:/lib default:/usr/lib "
                                    "default:/usr/local/lib");
}

/* A hostile LD_LIBRARY_PATH cannot grow the list past its caps. */
static void test_caps(void **state)
{
    (void)state;
    char big[8192];
    size_t n = 0;
    for (int i = 0; n + 16 < sizeof(big); i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "/d%d:", i);
    struct ld_request rq = {.libc = RID_LIBC_GLIBC,
                            .arch = RID_ARCH_X64,
                            .ld_library_path = big,
                            .ld_library_path_len = n};
    struct ld_search s;
    struct cla_error e = {0};
    assert_int_equal(ldsearch_dirs(&rq, &s, &e), -E2BIG);
    assert_non_null(strstr(e.msg, "more than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glibc_runpath_order),
        cmocka_unit_test(test_glibc_rpath_first),
        cmocka_unit_test(test_musl_order_and_path_file),
        cmocka_unit_test(test_tokens_skipped),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
