/* SPDX-License-Identifier: Apache-2.0 */
/* assembly.c: is it a .NET assembly, and does it hold what the runtime calls as a startup hook?
 * On the class libraries the e2e tests load (tests/fixtures/assembly/gen.sh), and on copies of
 * them changed byte by byte. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "profset/assembly.h"

#define HOOK   "tests/fixtures/assembly/StartupHookTest.dll"
#define NOHOOK "tests/fixtures/assembly/NoStartupHook.dll"

static uint8_t *load(const char *path, size_t *len)
{
    char *s = slurp(path, len);
    uint8_t *copy = malloc(*len);
    assert_non_null(copy);
    memcpy(copy, s, *len);
    return copy;
}

/* The offset of the first `what` (with its NUL) in the image: a #Strings entry. */
static size_t find(const uint8_t *d, size_t len, const char *what)
{
    size_t n = strlen(what) + 1;
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(d + i, what, n) == 0)
            return i;
    fail_msg("'%s' not in the fixture", what);
    return 0;
}

static void test_hook_found(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load(HOOK, &len);
    struct cla_error e = {0};
    assert_int_equal(assembly_check(d, len, "hook", &e), 0);
    assert_int_equal(assembly_check_startup_hook(d, len, "hook", &e), 0);
    free(d);
}

static void test_no_hook_type(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load(NOHOOK, &len);
    struct cla_error e = {0};
    assert_int_equal(assembly_check(d, len, "nohook", &e), 0);
    assert_int_equal(assembly_check_startup_hook(d, len, "nohook", &e), -ENOENT);
    assert_non_null(strstr(e.msg, "no type named StartupHook"));
    free(d);
}

/* The type renamed in #Strings: no StartupHook any more; Initialize renamed: no method. */
static void test_renamed(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load(HOOK, &len);
    struct cla_error e = {0};
    size_t at = find(d, len, "StartupHook");
    d[at + 10] = 'K';
    assert_int_equal(assembly_check_startup_hook(d, len, "hook", &e), -ENOENT);
    d[at + 10] = 'k';
    at = find(d, len, "Initialize");
    d[at] = 'i';
    assert_int_equal(assembly_check_startup_hook(d, len, "hook", &e), -ENOEXEC);
    assert_non_null(strstr(e.msg, "no Initialize method"));
    free(d);
}

static void test_not_assemblies(void **state)
{
    (void)state;
    struct cla_error e = {0};
    static const uint8_t text[] = "hello, not a PE file at all, only some text bytes here......";
    assert_int_equal(assembly_check(text, sizeof(text), "t", &e), -EINVAL);
    assert_int_equal(assembly_check_startup_hook(text, sizeof(text), "t", &e), -EINVAL);
    size_t len;
    uint8_t *d = load(HOOK, &len);
    /* Every cut of the image is refused or read within it, never past it (ASan checks). */
    for (size_t cut = 0; cut < len; cut += 7)
        (void)assembly_check_startup_hook(d, cut, "cut", &e);
    assert_int_equal(assembly_check_startup_hook(d, 512, "cut", &e), -EINVAL);
    /* No CLI header: a native PE file. */
    uint32_t pe = (uint32_t)d[0x3c] | (uint32_t)d[0x3d] << 8;
    size_t opt = pe + 24;
    size_t cli = opt + ((d[opt] | d[opt + 1] << 8) == 0x10b ? 96 : 112) + 14 * 8;
    memset(d + cli, 0, 8);
    assert_int_equal(assembly_check(d, len, "native", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "without a CLI header"));
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_found),
        cmocka_unit_test(test_no_hook_type),
        cmocka_unit_test(test_renamed),
        cmocka_unit_test(test_not_assemblies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
