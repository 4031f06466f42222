/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the sample profiler's pure parts: the client-data parser and the JSON report
 * (escaping, formatting, atomic replacement). profiler/ is not part of libclrattach.a, so its
 * sources are compiled into this test directly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../profiler/clientdata.c"
#include "../../profiler/report.c"

#define FIXTURES "tests/fixtures/clientdata"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Parses a C string (without its NUL). */
static int parse_str(const char *s, struct clientdata *cd)
{
    return clientdata_parse(s, strlen(s), cd);
}

static void test_valid_all_keys(void **state)
{
    struct clientdata cd;
    (void)state;
    assert_int_equal(parse_str("out=/tmp/x.json;detach_after=30;mask=0x2EE", &cd), 0);
    assert_string_equal(cd.out, "/tmp/x.json");
    assert_int_equal(cd.detach_after_s, 30);
    assert_true(cd.has_mask);
    assert_int_equal(cd.mask, 0x2ee);

    /* Order does not matter, and the prefix of the hex mask is optional. */
    assert_int_equal(parse_str("mask=ff;out=/r", &cd), 0);
    assert_string_equal(cd.out, "/r");
    assert_int_equal(cd.detach_after_s, 0);
    assert_int_equal(cd.mask, 0xff);
    assert_int_equal(parse_str("mask=0Xa", &cd), 0);
    assert_int_equal(cd.mask, 0xa);
    assert_string_equal(cd.out, "");
}

static void test_empty(void **state)
{
    struct clientdata cd;
    (void)state;
    memset(&cd, 0x55, sizeof(cd));
    /* The runtime passes a non-NULL pointer with size 0; other callers may pass NULL. */
    assert_int_equal(clientdata_parse("", 0, &cd), 0);
    assert_string_equal(cd.out, "");
    assert_int_equal(cd.detach_after_s, 0);
    assert_false(cd.has_mask);
    memset(&cd, 0x55, sizeof(cd));
    assert_int_equal(clientdata_parse(NULL, 0, &cd), 0);
    assert_string_equal(cd.out, "");
    assert_int_equal(clientdata_parse(NULL, 3, &cd), -EINVAL);
    /* Only separators: nothing to set, nothing wrong. */
    assert_int_equal(parse_str(";;;", &cd), 0);
    assert_string_equal(cd.out, "");
}

static void test_unknown_keys_ignored(void **state)
{
    struct clientdata cd;
    (void)state;
    assert_int_equal(parse_str("color=blue;out=/o;x=;y==z", &cd), 0);
    assert_string_equal(cd.out, "/o");
    /* Ignored keys still have to be well-formed. */
    assert_int_equal(parse_str("out=/o;color", &cd), -EINVAL);
    /* Keys are exact: no case folding, no trimming. */
    assert_int_equal(parse_str("OUT=relative", &cd), 0);
    assert_string_equal(cd.out, "");
    assert_int_equal(parse_str(" out=relative", &cd), 0);
    assert_string_equal(cd.out, "");
}

static void test_too_long(void **state)
{
    struct clientdata cd;
    char *buf = malloc(CLRPROBE_CLIENT_DATA_MAX + 1);
    (void)state;
    assert_non_null(buf);
    memcpy(buf, "pad=", 4);
    memset(buf + 4, 'a', CLRPROBE_CLIENT_DATA_MAX - 3);
    assert_int_equal(clientdata_parse(buf, CLRPROBE_CLIENT_DATA_MAX, &cd), 0);
    assert_int_equal(clientdata_parse(buf, CLRPROBE_CLIENT_DATA_MAX + 1, &cd), -E2BIG);
    free(buf);
}

static void test_missing_equals(void **state)
{
    struct clientdata cd;
    (void)state;
    assert_int_equal(parse_str("out", &cd), -EINVAL);
    assert_int_equal(parse_str("detach_after=1;mask", &cd), -EINVAL);
    assert_int_equal(parse_str("=/tmp/x", &cd), -EINVAL);
    assert_int_equal(parse_str("out=/a;=", &cd), -EINVAL);
}

static void test_bad_numbers(void **state)
{
    static const char *const bad_dec[] = {
        "detach_after=",   "detach_after=-1", "detach_after=+1", "detach_after=1a",
        "detach_after= 1", "detach_after=1 ", "detach_after=0x10",
    };
    static const char *const bad_hex[] = {"mask=", "mask=0x", "mask=zz", "mask=0x2ee;",
                                          "mask=-1", "mask= 1"};
    struct clientdata cd;
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(bad_dec); i++)
        assert_int_equal(parse_str(bad_dec[i], &cd), -EINVAL);
    /* "mask=0x2ee;" is fine (trailing separator); it sits in the list to prove that. */
    for (size_t i = 0; i < ARRAY_SIZE(bad_hex); i++)
        assert_int_equal(parse_str(bad_hex[i], &cd), i == 3 ? 0 : -EINVAL);

    assert_int_equal(parse_str("detach_after=31536000", &cd), 0);
    assert_int_equal(cd.detach_after_s, 31536000);
    assert_int_equal(parse_str("detach_after=31536001", &cd), -ERANGE);
    /* 2^64 + 1 would wrap to 1 in a parser that checks only at the end. */
    assert_int_equal(parse_str("detach_after=18446744073709551617", &cd), -ERANGE);
    assert_int_equal(parse_str("detach_after=0000000000000000000000000005", &cd), 0);
    assert_int_equal(cd.detach_after_s, 5);

    assert_int_equal(parse_str("mask=FFFFFFFF", &cd), 0);
    assert_int_equal(cd.mask, 0xffffffffu);
    assert_int_equal(parse_str("mask=100000000", &cd), -ERANGE);
    assert_int_equal(parse_str("mask=0x00000000000000ff", &cd), 0);
    assert_int_equal(cd.mask, 0xff);
}

static void test_path_rules(void **state)
{
    struct clientdata cd;
    char buf[CLRPROBE_OUT_PATH_MAX + 16];
    (void)state;

    /* Exactly at the cap is accepted and kept whole; one more byte is refused. */
    memcpy(buf, "out=/", 5);
    memset(buf + 5, 'p', CLRPROBE_OUT_PATH_MAX - 1);
    assert_int_equal(clientdata_parse(buf, 4 + CLRPROBE_OUT_PATH_MAX, &cd), 0);
    assert_int_equal(strlen(cd.out), CLRPROBE_OUT_PATH_MAX);
    assert_int_equal(cd.out[CLRPROBE_OUT_PATH_MAX - 1], 'p');
    buf[4 + CLRPROBE_OUT_PATH_MAX] = 'p';
    assert_int_equal(clientdata_parse(buf, 5 + CLRPROBE_OUT_PATH_MAX, &cd), -E2BIG);

    assert_int_equal(parse_str("out=", &cd), -EINVAL);
    assert_int_equal(parse_str("out=tmp/x.json", &cd), -EINVAL);
    assert_int_equal(parse_str("out=/tmp/", &cd), -EINVAL);
    assert_int_equal(parse_str("out=/tmp/a\nb", &cd), -EINVAL);
    assert_int_equal(parse_str("out=/tmp/a\x7f", &cd), -EINVAL);
    /* Non-ASCII bytes are legal in Linux paths; the report escapes them. */
    assert_int_equal(parse_str("out=/tmp/r\xc3\xa9.json", &cd), 0);
    assert_string_equal(cd.out, "/tmp/r\xc3\xa9.json");
}

static void test_embedded_nul(void **state)
{
    static const char with_nul[] = "out=/tmp/a\0b;detach_after=1";
    static const char nul_key[] = "detach_after=1;\0x=1";
    struct clientdata cd;
    (void)state;
    assert_int_equal(clientdata_parse(with_nul, sizeof(with_nul) - 1, &cd), -EINVAL);
    assert_int_equal(clientdata_parse(nul_key, sizeof(nul_key) - 1, &cd), -EINVAL);
    /* One terminating NUL (a C client sending strlen + 1) is tolerated; two are not. */
    assert_int_equal(clientdata_parse("detach_after=7", 15, &cd), 0);
    assert_int_equal(cd.detach_after_s, 7);
    assert_int_equal(clientdata_parse("detach_after=7\0", 16, &cd), -EINVAL);
    assert_int_equal(clientdata_parse("\0", 1, &cd), 0);
}

static void test_duplicates_and_no_partial_output(void **state)
{
    struct clientdata cd, before;
    (void)state;
    assert_int_equal(parse_str("out=/a;out=/b", &cd), -EINVAL);
    assert_int_equal(parse_str("detach_after=1;detach_after=1", &cd), -EINVAL);
    assert_int_equal(parse_str("mask=1;mask=1", &cd), -EINVAL);
    /* Unknown keys may repeat: they carry nothing we act on. */
    assert_int_equal(parse_str("x=1;x=2", &cd), 0);

    /* A failure after a good key must leave *ret untouched. */
    memset(&cd, 0x5a, sizeof(cd));
    before = cd;
    assert_int_equal(parse_str("out=/good;detach_after=bad", &cd), -EINVAL);
    assert_memory_equal(&cd, &before, sizeof(cd));
}

/* Every seed fixture: ok-* must parse, bad-* must not. Guards the seeds' meaning as well. */
static void test_fixtures(void **state)
{
    DIR *d = opendir(FIXTURES);
    struct dirent *de;
    int ok = 0, bad = 0;
    (void)state;
    assert_non_null(d);
    while ((de = readdir(d))) {
        bool want_ok = strncmp(de->d_name, "ok-", 3) == 0;
        if (!want_ok && strncmp(de->d_name, "bad-", 4) != 0)
            continue;
        char path[512], buf[CLRPROBE_CLIENT_DATA_MAX + 1];
        snprintf(path, sizeof(path), "%s/%s", FIXTURES, de->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        struct clientdata cd;
        int r = clientdata_parse(buf, n, &cd);
        if (want_ok != (r == 0))
            fail_msg("%s: parse returned %d", de->d_name, r);
        want_ok ? ok++ : bad++;
    }
    closedir(d);
    assert_true(ok >= 3);
    assert_true(bad >= 3);
}

/* Random and mutated inputs: the parser must never crash, and whatever it accepts must obey
 * the documented rules. A fixed seed keeps failures reproducible. */
static void test_random_inputs(void **state)
{
    static const char alphabet[] = "out=detach_ftermsk0x19/;\0\n\xc3\xff";
    unsigned seed = 12345;
    char buf[96];
    (void)state;
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = (size_t)(rand_r(&seed) % (int)sizeof(buf));
        for (size_t i = 0; i < len; i++)
            buf[i] = alphabet[rand_r(&seed) % (int)(sizeof(alphabet) - 1)];
        struct clientdata cd;
        if (clientdata_parse(buf, len, &cd) == 0) {
            assert_true(cd.out[0] == '\0' || cd.out[0] == '/');
            assert_true(strlen(cd.out) <= CLRPROBE_OUT_PATH_MAX);
            assert_true(cd.detach_after_s <= CLRPROBE_DETACH_AFTER_MAX);
            assert_true(cd.has_mask || cd.mask == 0);
        }
    }
}

/* ---- report ------------------------------------------------------------------------------- */

static const char *escape(const void *s, size_t len)
{
    static char out[256];
    size_t pos = 0;
    assert_int_equal(report_escape(s, len, out, sizeof(out), &pos), 0);
    assert_int_equal(strlen(out), pos);
    return out;
}

static void test_report_escape(void **state)
{
    (void)state;
    assert_string_equal(escape("a\"b\\c", 5), "a\\\"b\\\\c");
    assert_string_equal(escape("\n\t\x01\x7f", 4), "\\u000a\\u0009\\u0001\\u007f");
    assert_string_equal(escape("x\0y", 3), "x\\u0000y");
    /* Valid UTF-8 (2- and 4-byte) passes through unchanged. */
    assert_string_equal(escape("\xc3\xa9\xf0\x9f\x98\x80", 6), "\xc3\xa9\xf0\x9f\x98\x80");
    /* Invalid: stray byte, overlong NUL, UTF-16 surrogate, truncated sequence, > U+10FFFF. */
    assert_string_equal(escape("\xff", 1), "\\ufffd");
    assert_string_equal(escape("\xc0\x80", 2), "\\ufffd\\ufffd");
    assert_string_equal(escape("\xed\xa0\x80", 3), "\\ufffd\\ufffd\\ufffd");
    assert_string_equal(escape("\xe2\x82", 2), "\\ufffd\\ufffd");
    assert_string_equal(escape("\xf4\x90\x80\x80", 4), "\\ufffd\\ufffd\\ufffd\\ufffd");
    assert_string_equal(escape("\xe0\x9f\xbf", 3), "\\ufffd\\ufffd\\ufffd");

    char small[8];
    size_t pos = 0;
    assert_int_equal(report_escape("\x01\x02", 2, small, sizeof(small), &pos), -E2BIG);
}

static void test_report_format(void **state)
{
    static const char cd[] = "out=/tmp/\"q\".json";
    struct report r = {
        .pid = 42,
        .attach_unix_ms = 1700000000000,
        .updated_unix_ms = 1700000000200,
        .runtime_type = 2,
        .major = 10,
        .minor = 0,
        .build = 12,
        .qfe = 0,
        .runtime_version = "10.0.12",
        .event_mask = 0x2ee,
        .client_data = cd,
        .client_data_len = sizeof(cd) - 1,
        .counters = {.gc_started = 3, .assembly_loads = 18446744073709551615ull},
        .attach_complete = true,
    };
    char buf[2048];
    (void)state;
    int n = report_format(&r, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(strlen(buf), (size_t)n);
    assert_int_equal(buf[n - 1], '\n');
    assert_non_null(strstr(buf, "\"pid\":42,"));
    assert_non_null(strstr(buf, "\"clsid\":\"" CLRPROBE_CLSID "\""));
    assert_non_null(strstr(buf, "\"type\":\"CoreCLR\",\"major\":10,\"minor\":0,\"build\":12"));
    assert_non_null(strstr(buf, "\"version\":\"10.0.12\""));
    assert_non_null(strstr(buf, "\"event_mask\":\"0x000002ee\""));
    assert_non_null(strstr(buf, "\"client_data\":\"out=/tmp/\\\"q\\\".json\""));
    assert_non_null(strstr(buf, "\"gc_started\":3,"));
    assert_non_null(strstr(buf, "\"assembly_loads\":18446744073709551615}"));
    assert_non_null(strstr(buf, "\"attach_complete\":true,\"detached\":false}"));

    /* Every prefix-sized buffer must fail cleanly, never write past its end. */
    for (size_t cap = 0; cap <= (size_t)n; cap++) {
        char *b = malloc(cap ? cap : 1);
        assert_int_equal(report_format(&r, b, cap), -E2BIG);
        free(b);
    }
}

static void test_report_write_atomic(void **state)
{
    char dir[] = "/tmp/clrprobe-test.XXXXXX";
    char path[128], got[64];
    struct stat st;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/r.json", dir);

    assert_int_equal(report_write_atomic(path, "first\n", 6), 0);
    assert_int_equal(report_write_atomic(path, "second\n", 7), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(got, 1, sizeof(got), f);
    fclose(f);
    assert_int_equal(n, 7);
    assert_memory_equal(got, "second\n", 7);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* No temporary is left behind: the directory holds exactly the report. */
    DIR *d = opendir(dir);
    struct dirent *de;
    int entries = 0;
    assert_non_null(d);
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            entries++;
    closedir(d);
    assert_int_equal(entries, 1);

    snprintf(path, sizeof(path), "%s/missing/r.json", dir);
    assert_int_equal(report_write_atomic(path, "x", 1), -ENOENT);

    snprintf(path, sizeof(path), "%s/r.json", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_all_keys),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_unknown_keys_ignored),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_missing_equals),
        cmocka_unit_test(test_bad_numbers),
        cmocka_unit_test(test_path_rules),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_duplicates_and_no_partial_output),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_random_inputs),
        cmocka_unit_test(test_report_escape),
        cmocka_unit_test(test_report_format),
        cmocka_unit_test(test_report_write_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
