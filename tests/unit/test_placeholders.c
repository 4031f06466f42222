/* SPDX-License-Identifier: Apache-2.0 */
/* Client data placeholders (lib/deliver/placeholders.c): {dir}, {entry}, doubled braces,
 * typos, caps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "deliver/placeholders.h"

static const char *expand(const char *in, size_t cap, int *ret)
{
    static uint8_t out[256];
    static struct cla_error e;
    size_t n = 0;
    memset(&e, 0, sizeof(e));
    *ret = placeholders_expand((const uint8_t *)in, strlen(in), "/tmp/clrie-0123",
                               "/tmp/clrie-0123/libE.so", out, cap, &n, &e);
    if (*ret < 0)
        return e.msg;
    out[n] = '\0';
    return (const char *)out;
}

static void test_expands(void **state)
{
    (void)state;
    int r;
    assert_string_equal(expand("<A ConfigPath=\"{dir}/Cov_x64.config\"/>", 200, &r),
                        "<A ConfigPath=\"/tmp/clrie-0123/Cov_x64.config\"/>");
    assert_int_equal(r, 0);
    assert_string_equal(expand("e={entry};d={dir}", 200, &r),
                        "e=/tmp/clrie-0123/libE.so;d=/tmp/clrie-0123");
    /* Doubled braces are literal; other braces (JSON) stay as they are. */
    assert_string_equal(expand("{{dir} {\"a\":{\"b\":1}} }}", 200, &r),
                        "{dir} {\"a\":{\"b\":1}} }}");
    assert_string_equal(expand("{ dir} {} {-x}", 200, &r), "{ dir} {} {-x}");
    assert_int_equal(r, 0);
}

static void test_refuses(void **state)
{
    (void)state;
    int r;
    const char *m = expand("path={Dir}/x", 200, &r);
    assert_int_equal(r, -EINVAL);
    assert_non_null(strstr(m, "'{Dir}'"));
    assert_non_null(strstr(m, "{{"));
    m = expand("{dir}{dir}{dir}", 40, &r);
    assert_int_equal(r, -E2BIG);
    /* Exactly at the cap fits. */
    expand("{dir}", strlen("/tmp/clrie-0123"), &r);
    assert_int_equal(r, 0);

    uint8_t out[16];
    size_t n;
    struct cla_error e = {0};
    assert_int_equal(
        placeholders_expand((const uint8_t *)"{entry}", 7, NULL, NULL, out, sizeof(out), &n, &e),
        -EINVAL);
    assert_non_null(strstr(e.msg, "no value"));
    assert_int_equal(
        placeholders_expand((const uint8_t *)"plain", 5, NULL, NULL, out, sizeof(out), &n, &e), 0);
    assert_int_equal(n, 5);
}

/* With no output buffer: the same verdicts, and the length the expansion writes. */
static void test_measures(void **state)
{
    (void)state;
    static const char *const cases[] = {"e={entry};d={dir}", "{{dir} {\"a\":{}} }}", "plain", "",
                                        "{dir}{dir}{dir}",   "path={Dir}/x"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t cap = 0; cap <= 80; cap += 20) {
            uint8_t out[128];
            size_t n1 = 9999, n2 = 8888;
            struct cla_error e1 = {0}, e2 = {0};
            const uint8_t *in = (const uint8_t *)cases[i];
            int r1 = placeholders_expand(in, strlen(cases[i]), "/d", "/d/e.so", out, cap, &n1, &e1);
            int r2 =
                placeholders_expand(in, strlen(cases[i]), "/d", "/d/e.so", NULL, cap, &n2, &e2);
            assert_int_equal(r1, r2);
            assert_string_equal(e1.msg, e2.msg);
            if (r1 == 0)
                assert_int_equal(n1, n2);
        }
    }
}

static void test_present(void **state)
{
    (void)state;
    assert_int_equal(placeholders_present((const uint8_t *)"a{dir}", 6), 1);
    assert_int_equal(placeholders_present((const uint8_t *)"a{{dir}", 7), 0);
    assert_int_equal(placeholders_present((const uint8_t *)"{entry", 6), 0);
    assert_int_equal(placeholders_present((const uint8_t *)"{x}", 3), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expands),
        cmocka_unit_test(test_refuses),
        cmocka_unit_test(test_measures),
        cmocka_unit_test(test_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
