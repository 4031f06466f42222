/* SPDX-License-Identifier: Apache-2.0 */
/* assembly.c: is it a .NET assembly, and does it hold what the runtime calls as a startup hook?
 * On the class libraries the e2e tests load (tests/fixtures/assembly/gen.sh), and on copies of
 * them changed byte by byte. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "profset/assembly.h"

#define HOOK    "tests/fixtures/assembly/StartupHookTest.dll"
#define NOHOOK  "tests/fixtures/assembly/NoStartupHook.dll"
#define REFHOOK "tests/fixtures/assembly/RefHook.dll"

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

/* The hook's own name and what it references (System.Runtime, for Path, File, Environment). */
static void test_identity(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load(HOOK, &len);
    struct cla_error e = {0};
    struct assembly_identity *id = calloc(1, sizeof(*id));
    assert_non_null(id);
    assert_int_equal(assembly_read_identity(d, len, "hook", id, &e), 0);
    assert_string_equal(id->name, "StartupHookTest");
    bool runtime = false;
    assert_true(id->nrefs >= 1);
    for (size_t i = 0; i < id->nrefs; i++) {
        runtime |= strcmp(id->refs[i], "System.Runtime") == 0;
        assert_null(strchr(id->refs[i], '/'));
    }
    assert_true(runtime);
    /* A reference's name that would be a path: refused, *ret untouched. */
    size_t at = find(d, len, "System.Runtime");
    d[at + 6] = '/';
    memset(id, 0x5a, sizeof(*id));
    assert_int_equal(assembly_read_identity(d, len, "hook", id, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "malformed"));
    assert_int_equal((uint8_t)id->name[0], 0x5a);
    d[at + 6] = '.';
    d[at] = '\0'; /* an empty name */
    assert_int_equal(assembly_read_identity(d, len, "hook", id, &e), -EINVAL);
    d[at] = 'S';
    assert_int_equal(assembly_read_identity(d, len, "hook", id, &e), 0);
    /* Every cut of the image is refused or read within it (ASan checks); not an assembly. */
    for (size_t cut = 0; cut < len; cut += 5)
        (void)assembly_read_identity(d, cut, "cut", id, &e);
    static const uint8_t text[] = "not a PE file, only text bytes, long enough for a DOS header..";
    assert_int_equal(assembly_read_identity(text, sizeof(text), "t", id, &e), -EINVAL);
    free(id);
    free(d);
}

/* Each class library names itself; the hook with an assembly of its own references it. */
static void test_identity_names(void **state)
{
    (void)state;
    static const struct {
        const char *path, *name, *ref;
    } cases[] = {
        {NOHOOK, "NoStartupHook", "System.Runtime"},
        {REFHOOK, "RefHook", "HookLib"},
    };
    struct assembly_identity *id = calloc(1, sizeof(*id));
    assert_non_null(id);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t len;
        uint8_t *d = load(cases[c].path, &len);
        struct cla_error e = {0};
        assert_int_equal(assembly_read_identity(d, len, "lib", id, &e), 0);
        assert_string_equal(id->name, cases[c].name);
        bool found = false;
        for (size_t i = 0; i < id->nrefs; i++)
            found |= strcmp(id->refs[i], cases[c].ref) == 0;
        assert_true(found);
        free(d);
    }
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_found), cmocka_unit_test(test_no_hook_type),
        cmocka_unit_test(test_renamed),    cmocka_unit_test(test_not_assemblies),
        cmocka_unit_test(test_identity),   cmocka_unit_test(test_identity_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
