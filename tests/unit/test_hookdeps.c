/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hookdeps.c: the directories an app resolves assemblies from, read from its maps (its shared
 * framework, ASP.NET Core's when mapped, its entry assembly's directory); which of a hook's
 * references are delivered with it; the refusal's wording.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profset/hookdeps.h"

#define FW "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.1"
#define AS "/usr/share/dotnet/shared/Microsoft.AspNetCore.App/10.0.1"

static const char maps[] = "1-2 r-xp 0 08:01 1 /usr/share/dotnet/dotnet\n"
                           "3-4 r-xp 0 08:01 2 " FW "/libcoreclr.so\n"
                           "5-6 r--p 0 08:01 3 " FW "/System.Private.CoreLib.dll\n"
                           "7-8 r--p 0 08:01 4 /app/Shop.dll\n"
                           "9-a r--p 0 08:01 5 " AS "/Microsoft.AspNetCore.dll\n"
                           "b-c r--p 0 08:01 6 /tmp/Other.dll\n";

static void test_dirs(void **state)
{
    (void)state;
    struct hookdeps_dirs *d = calloc(1, sizeof(*d));
    assert_non_null(d);
    hookdeps_dirs_from_maps(maps, sizeof(maps) - 1, "Shop", d);
    assert_int_equal(d->n, 3);
    assert_string_equal(d->dir[0], FW);
    assert_string_equal(d->dir[1], AS);
    assert_string_equal(d->dir[2], "/app");
    /* No entry name, or one that is not a plain name: no app directory. */
    hookdeps_dirs_from_maps(maps, sizeof(maps) - 1, NULL, d);
    assert_int_equal(d->n, 2);
    hookdeps_dirs_from_maps(maps, sizeof(maps) - 1, "../app/Shop", d);
    assert_int_equal(d->n, 2);
    /* Without ASP.NET Core mapped, only the runtime's own framework. */
    static const char plain[] = "3-4 r-xp 0 08:01 2 " FW "/libcoreclr.so\n";
    hookdeps_dirs_from_maps(plain, sizeof(plain) - 1, "Shop", d);
    assert_int_equal(d->n, 1);
    /* No runtime library (a single-file app) or no maps: nothing can be said. */
    static const char single[] = "1-2 r-xp 0 08:01 1 /app/Shop\n7-8 r--p 0 08:01 4 /app/Shop.dll\n";
    hookdeps_dirs_from_maps(single, sizeof(single) - 1, "Shop", d);
    assert_int_equal(d->n, 0);
    hookdeps_dirs_from_maps(NULL, 0, "Shop", d);
    assert_int_equal(d->n, 0);
    free(d);
}

static struct assembly_identity *identity(void)
{
    struct assembly_identity *id = calloc(1, sizeof(*id));
    assert_non_null(id);
    strcpy(id->name, "Hook");
    static const char *const refs[] = {"System.Runtime", "HookLib", "Other"};
    for (size_t i = 0; i < 3; i++)
        strcpy(id->refs[id->nrefs++], refs[i]);
    return id;
}

static void add(struct profdir *pd, const char *path)
{
    struct cla_error e = {0};
    uint8_t *data = malloc(1);
    assert_non_null(data);
    assert_int_equal(profdir_add(pd, path, false, false, data, 1, &e), 0);
}

/* Delivered means "<name>.dll" in the hook's own directory inside what was given. */
static void test_undelivered(void **state)
{
    (void)state;
    struct assembly_identity *id = identity();
    size_t idx[ASSEMBLY_REFS_MAX];
    assert_int_equal(hookdeps_undelivered(id, NULL, idx), 3);
    struct profdir pd = {0};
    add(&pd, "net/Hook.dll");
    add(&pd, "net/HookLib.dll");
    add(&pd, "Other.dll"); /* not beside the hook */
    add(&pd, "net/Other.dll.config");
    for (pd.entry = 0; strcmp(pd.files[pd.entry].path, "net/Hook.dll") != 0; pd.entry++)
        assert_true(pd.entry + 1 < pd.n);
    assert_int_equal(hookdeps_undelivered(id, &pd, idx), 2);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    profdir_free(&pd);
    free(id);
}

static void test_refuse(void **state)
{
    (void)state;
    struct assembly_identity *id = identity();
    struct hookdeps_dirs *d = calloc(1, sizeof(*d));
    assert_non_null(d);
    hookdeps_dirs_from_maps(maps, sizeof(maps) - 1, "Shop", d);
    size_t missing[] = {1, 2};
    struct cla_error e = {0};
    assert_int_equal(hookdeps_refuse("Hook.dll", id, missing, 2, d, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "Hook.dll references 2 assemblies"));
    assert_non_null(strstr(e.msg, ": HookLib, Other;"));
    assert_non_null(strstr(e.msg, FW));
    assert_non_null(strstr(e.msg, "/app"));
    assert_null(strstr(e.msg, "System.Runtime"));
    assert_non_null(strstr(e.hint, "--assembly DIR"));
    free(d);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dirs),
        cmocka_unit_test(test_undelivered),
        cmocka_unit_test(test_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
