/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the env loader's settings-file parser (profiler/envload_conf.c): every rule of
 * the format, the caps at and one past their edge, the line named in a refusal, no partial
 * output, the seeds of fuzz/corpus/envload/, and random inputs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deliver/placeholders.h"
#include "fixture.h"

/* profiler/ is not part of libclrattach.a: the parser is compiled into this test. */
#include "../../profiler/envload_conf.c"

#define SEEDS "fuzz/corpus/envload"
#define HEAD  "clrenvload 1\nprofiler=real/libprof.so\n"

static int parse_str(const char *s, struct envload_conf *c, struct envload_error *e)
{
    return envload_conf_parse(s, strlen(s), c, e);
}

/* The span's bytes as a C string (static buffer: one at a time). */
static const char *span(const char *buf, struct envload_span s)
{
    static char out[ENVLOAD_VAR_BYTES_MAX + 1];
    assert_true(s.len < sizeof(out));
    memcpy(out, buf + s.off, s.len);
    out[s.len] = '\0';
    return out;
}

/* Refused with code, on line, for a reason containing why; *ret untouched. */
static void refused(const char *buf, size_t len, int code, unsigned line, const char *why)
{
    struct envload_conf c;
    struct envload_error e = {99, NULL};
    memset(&c, 0xA5, sizeof(c));
    assert_int_equal(envload_conf_parse(buf, len, &c, &e), code);
    assert_int_equal(e.line, line);
    assert_non_null(e.why);
    if (!strstr(e.why, why))
        fail_msg("'%s' does not say '%s'", e.why, why);
    for (size_t i = 0; i < sizeof(c); i++)
        assert_int_equal(((unsigned char *)&c)[i], 0xA5);
}

static void refused_str(const char *s, int code, unsigned line, const char *why)
{
    refused(s, strlen(s), code, line, why);
}

/* The loader expands a value as clrattach expands --env (placeholders_expand), so the
 * profiler's getenv() and the runtime's copy agree: checked on the same inputs. */
static void test_expand_as_clrattach(void **state)
{
    (void)state;
    static const char *const values[] = {
        "",
        "plain",
        "{dir}",
        "{entry}",
        "{dir}/lib:{entry}",
        "{{dir}",
        "{{{dir}",
        "a{b",
        "{}",
        "{ dir}",
        "x{dir",
        "}}{",
        "{dir}{dir}{entry}",
        "json {\"a\": 1}",
        "{{",
    };
    const char *dir = "/tmp/libclrenvload-0123456789abcdef", *entry = "/tmp/d/sub/libp.so";
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        const char *v = values[i];
        uint8_t want[256];
        size_t wn = 0;
        struct cla_error e = {0};
        assert_int_equal(placeholders_expand((const uint8_t *)v, strlen(v), dir, entry, want,
                                             sizeof(want), &wn, &e),
                         0);
        char got[256];
        size_t n = envload_expand(v, strlen(v), dir, entry, NULL, 0);
        assert_int_equal(n, wn);
        assert_int_equal(envload_expand(v, strlen(v), dir, entry, got, sizeof(got)), wn);
        assert_memory_equal(got, want, wn);
        assert_int_equal(got[wn], '\0');
    }
    /* Cut short, still terminated. */
    char small[4];
    assert_int_equal(envload_expand("{dir}", 5, "/abcdef", "", small, sizeof(small)), 7);
    assert_int_equal(small[3], '\0');
}

static void test_valid(void **state)
{
    (void)state;
    struct envload_conf c;
    struct envload_error e = {0, NULL};
    const char *s = HEAD "OTEL_SERVICE_NAME=shop\nEMPTY=\nWITH_EQ=a=b\nlower.dot=x y\n";
    assert_int_equal(parse_str(s, &c, &e), 0);
    assert_string_equal(span(s, c.profiler), "real/libprof.so");
    assert_int_equal(c.nvars, 4);
    assert_string_equal(span(s, c.name[0]), "OTEL_SERVICE_NAME");
    assert_string_equal(span(s, c.value[0]), "shop");
    assert_string_equal(span(s, c.name[1]), "EMPTY");
    assert_string_equal(span(s, c.value[1]), "");
    assert_string_equal(span(s, c.name[2]), "WITH_EQ");
    assert_string_equal(span(s, c.value[2]), "a=b");
    assert_string_equal(span(s, c.name[3]), "lower.dot");
    assert_string_equal(span(s, c.value[3]), "x y");
    /* The byte after every span is the one the loader turns into a NUL. */
    assert_int_equal(s[c.profiler.off + c.profiler.len], '\n');
    for (size_t i = 0; i < c.nvars; i++) {
        assert_int_equal(s[c.name[i].off + c.name[i].len], '=');
        assert_int_equal(s[c.value[i].off + c.value[i].len], '\n');
    }

    const char *a = "clrenvload 1\nprofiler=/opt/p/libprof.so\n";
    assert_int_equal(parse_str(a, &c, NULL), 0);
    assert_string_equal(span(a, c.profiler), "/opt/p/libprof.so");
    assert_int_equal(c.nvars, 0);
    const char *u = HEAD "V=caf\xc3\xa9\n";
    assert_int_equal(parse_str(u, &c, NULL), 0);
    assert_string_equal(span(u, c.value[0]), "caf\xc3\xa9");
}

static void test_malformed(void **state)
{
    (void)state;
    refused("", 0, -EINVAL, 0, "empty");
    refused(NULL, 0, -EINVAL, 0, "empty");
    refused(HEAD "A=x\0y\n", sizeof(HEAD "A=x\0y\n") - 1, -EINVAL, 0, "NUL");
    refused_str(HEAD "A=1", -EINVAL, 0, "newline");
    refused_str("clrenvload 2\nprofiler=p.so\n", -EINVAL, 1, "clrenvload 1");
    refused_str("clrenvload 1 \nprofiler=p.so\n", -EINVAL, 1, "clrenvload 1");
    refused_str("# comment\nclrenvload 1\nprofiler=p.so\n", -EINVAL, 1, "clrenvload 1");
    refused_str("clrenvload 1\n", -EINVAL, 2, "no profiler=PATH");
    refused_str("clrenvload 1\nA=1\n", -EINVAL, 2, "profiler=PATH");
    refused_str("clrenvload 1\nprofiler p.so\n", -EINVAL, 2, "profiler=PATH");
    refused_str("clrenvload 1\nprofiler=\n", -EINVAL, 2, "empty");
    static const char *const bad_paths[] = {"/",        "x/",      "/x/",       "a//b", "./p.so",
                                            "a/./p.so", "../p.so", "a/../p.so", "a/..", "//p.so"};
    for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        char s[128];
        snprintf(s, sizeof(s), "clrenvload 1\nprofiler=%s\n", bad_paths[i]);
        refused_str(s, -EINVAL, 2, "component");
    }
    refused_str("clrenvload 1\nprofiler=p\t.so\n", -EINVAL, 2, "control");
    refused_str(HEAD "NOEQUALS\n", -EINVAL, 3, "NAME=VALUE");
    refused_str(HEAD "=value\n", -EINVAL, 3, "empty name");
    refused_str(HEAD "A=1\nB=2\nA=3\n", -EINVAL, 5, "twice");
    refused_str(HEAD "A=1\n\nB=2\n", -EINVAL, 4, "NAME=VALUE");
    refused_str(HEAD "A=1\r\n", -EINVAL, 3, "control");
    refused_str(HEAD "A=\x7f\n", -EINVAL, 3, "control");
    refused_str(HEAD "A\x1b=1\n", -EINVAL, 3, "control");
    /* Names are compared whole: a prefix is another name. */
    struct envload_conf c;
    assert_int_equal(parse_str(HEAD "AB=1\nA=2\nABC=3\n", &c, NULL), 0);
    assert_int_equal(c.nvars, 3);
}

/* A file of n variables, each line `len` bytes: "V<i>=" then 'x' up to len. */
static char *vars_file(size_t n, size_t len, const char *head, size_t *ret_len)
{
    size_t cap = strlen(head) + n * (len + 1) + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t off = (size_t)snprintf(s, cap, "%s", head);
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(s + off, cap - off, "V%zu=", i);
        memset(s + off + (size_t)k, 'x', len - (size_t)k);
        off += len;
        s[off++] = '\n';
    }
    s[off] = '\0';
    *ret_len = off;
    return s;
}

static void test_caps(void **state)
{
    (void)state;
    struct envload_conf c;
    size_t len;
    char *s = vars_file(ENVLOAD_VARS_MAX, 8, HEAD, &len);
    assert_int_equal(envload_conf_parse(s, len, &c, NULL), 0);
    assert_int_equal(c.nvars, ENVLOAD_VARS_MAX);
    free(s);
    s = vars_file(ENVLOAD_VARS_MAX + 1, 8, HEAD, &len);
    refused(s, len, -E2BIG, 3 + ENVLOAD_VARS_MAX, "more than 32");
    free(s);
    s = vars_file(1, ENVLOAD_VAR_BYTES_MAX, HEAD, &len);
    assert_int_equal(envload_conf_parse(s, len, &c, NULL), 0);
    assert_int_equal(c.value[0].len, ENVLOAD_VAR_BYTES_MAX - 3);
    free(s);
    s = vars_file(1, ENVLOAD_VAR_BYTES_MAX + 1, HEAD, &len);
    refused(s, len, -E2BIG, 3, "over 4096");
    free(s);

    /* The largest valid file is exactly the cap; one byte more is refused before parsing. */
    char head[32 + ENVLOAD_PATH_MAX + 2];
    int h = snprintf(head, sizeof(head), "clrenvload 1\nprofiler=");
    memset(head + h, 'p', ENVLOAD_PATH_MAX);
    snprintf(head + h + ENVLOAD_PATH_MAX, sizeof(head) - (size_t)h - ENVLOAD_PATH_MAX, "\n");
    s = vars_file(ENVLOAD_VARS_MAX, ENVLOAD_VAR_BYTES_MAX, head, &len);
    assert_int_equal(len, ENVLOAD_CONF_MAX);
    assert_int_equal(envload_conf_parse(s, len, &c, NULL), 0);
    assert_int_equal(c.profiler.len, ENVLOAD_PATH_MAX);
    refused(s, len + 1, -E2BIG, 0, "cap");
    free(s);
    head[h + ENVLOAD_PATH_MAX] = 'p';
    head[h + ENVLOAD_PATH_MAX + 1] = '\n';
    head[h + ENVLOAD_PATH_MAX + 2] = '\0';
    refused_str(head, -E2BIG, 2, "too long");
}

static void test_seeds(void **state)
{
    (void)state;
    DIR *d = opendir(SEEDS);
    struct dirent *de;
    int ok = 0, bad = 0;
    assert_non_null(d);
    while ((de = readdir(d))) {
        bool want_ok = strncmp(de->d_name, "ok-", 3) == 0;
        if (!want_ok && strncmp(de->d_name, "bad-", 4) != 0)
            continue;
        char path[512];
        size_t n;
        snprintf(path, sizeof(path), "%s/%s", SEEDS, de->d_name);
        const char *buf = slurp(path, &n);
        struct envload_conf c;
        if (want_ok != (envload_conf_parse(buf, n, &c, NULL) == 0))
            fail_msg("%s: %s", de->d_name, want_ok ? "refused" : "accepted");
        want_ok ? ok++ : bad++;
    }
    closedir(d);
    assert_true(ok >= 3);
    assert_true(bad >= 10);
}

/* Mutations of a valid file: every success keeps the promises the loader relies on. */
static void test_random_inputs(void **state)
{
    (void)state;
    const char base[] = HEAD "A=1\nB=x=y\nC=\n";
    static const char alphabet[] = "=\n/.\0\r\tAB a1";
    char buf[sizeof(base) + 8];
    srand(1234);
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = sizeof(base) - 1;
        memcpy(buf, base, len);
        for (int k = rand() % 4; k >= 0; k--) {
            size_t at = (size_t)rand() % len;
            if (rand() % 4 == 0 && len > 1)
                len = at + 1; /* cut */
            else
                buf[at] = alphabet[(size_t)rand() % (sizeof(alphabet) - 1)];
        }
        struct envload_conf c;
        if (envload_conf_parse(buf, len, &c, NULL) < 0)
            continue;
        assert_true(c.profiler.len > 0 && c.profiler.off + c.profiler.len < len);
        assert_int_equal(buf[c.profiler.off + c.profiler.len], '\n');
        for (size_t i = 0; i < c.nvars; i++) {
            assert_true(c.name[i].len > 0);
            assert_int_equal(buf[c.name[i].off + c.name[i].len], '=');
            assert_int_equal(buf[c.value[i].off + c.value[i].len], '\n');
            assert_null(memchr(buf + c.name[i].off, '=', c.name[i].len));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_as_clrattach),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_random_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
