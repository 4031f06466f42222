/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The directory of our own delivered with --env (lib/profset/envwrap.c): the profiler under its
 * own name, the env loader built into clrattach for the target's libc (the musl one for a musl
 * RID, glibc's for a glibc one, none for another CPU or an unknown libc), and clrenvload.conf
 * naming the profiler and each variable as given; without the loader, the profiler alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profset/elfinfo.h"
#include "profset/envwrap.h"

#define FIX "tests/fixtures/elf/"

/* Only the x86_64 cases read the wrapped tree (the fixtures are x86_64 ELF files). */
__attribute__((unused)) static const struct profdir_file *file(const struct profdir *pd,
                                                               const char *path)
{
    for (size_t i = 0; i < pd->n; i++)
        if (strcmp(pd->files[i].path, path) == 0)
            return &pd->files[i];
    return NULL;
}

static struct rid rid_of(const char *s)
{
    struct rid r;
    assert_int_equal(rid_parse(s, &r), 0);
    return r;
}

/* The loader's libc, read from the bytes clrattach carries. */
static enum rid_libc loader_libc(const char *rid)
{
    const uint8_t *data;
    size_t len;
    struct cla_error e = {0};
    struct rid r = rid_of(rid);
    assert_int_equal(envwrap_loader(r.libc, r.arch, &data, &len, &e), 0);
    struct elf_info ei;
    assert_int_equal(elfinfo_parse(data, len, &ei, &e), 0);
    assert_true(ei.is_shared_object && ei.exports_class_factory);
    assert_int_equal(ei.arch, r.arch);
    return ei.libc;
}

static void test_loader_per_libc(void **state)
{
    (void)state;
#if defined(__x86_64__)
    assert_int_equal(loader_libc("linux-x64"), RID_LIBC_GLIBC);
    assert_int_equal(loader_libc("linux-musl-x64"), RID_LIBC_MUSL);
    struct rid other = rid_of("linux-arm64");
#else
    assert_int_equal(loader_libc("linux-arm64"), RID_LIBC_GLIBC);
    assert_int_equal(loader_libc("linux-musl-arm64"), RID_LIBC_MUSL);
    struct rid other = rid_of("linux-x64");
#endif
    const uint8_t *data;
    size_t len;
    struct cla_error e = {0};
    /* Another CPU, or a libc nobody knows: no loader is guessed. */
    assert_int_equal(envwrap_loader(other.libc, other.arch, &data, &len, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "built for"));
    assert_int_equal(envwrap_loader(RID_LIBC_UNKNOWN, RID_ARCH_UNKNOWN, &data, &len, &e), -ENOENT);
    assert_non_null(strstr(e.hint, "--rid"));
}

static void test_conf(void **state)
{
    (void)state;
    const char *env[] = {"A=1", "HOME_DIR={dir}/x", "P={entry}"};
    char buf[256];
    int n = envwrap_conf("sub/libp.so", env, 3, buf, sizeof(buf));
    const char *want = "clrenvload 1\nprofiler=sub/libp.so\nA=1\nHOME_DIR={dir}/x\nP={entry}\n";
    assert_int_equal(n, (int)strlen(want));
    assert_memory_equal(buf, want, strlen(want));
    assert_int_equal(envwrap_conf("sub/libp.so", env, 3, buf, 20), -E2BIG);
}

/* A single file: wrapped with the loader for the RID's libc, named as given. */
static void test_single_file(void **state)
{
    (void)state;
    struct profset ps = {0};
    struct cla_error e = {0};
    assert_int_equal(profset_load(FIX "musl-x64.so", NULL, &ps, &e), 0);
    const char *env[] = {"OTEL_DOTNET_AUTO_HOME={dir}"};
    struct rid r = rid_of("linux-musl-x64");
    struct envwrap w;
    int rc = envwrap_build(&ps.builds[0], &r, true, env, 1, &w, &e);
#if defined(__x86_64__)
    assert_int_equal(rc, 0);
    assert_true(w.loader);
    assert_string_equal(w.real, "musl-x64.so");
    const struct profdir *pd = w.build.dir;
    assert_non_null(pd);
    assert_string_equal(pd->files[pd->entry].path, ENVWRAP_LOADER_NAME);
    assert_int_equal(pd->files[pd->entry].elf->libc, RID_LIBC_MUSL);
    const struct profdir_file *f = file(pd, "musl-x64.so");
    assert_non_null(f);
    assert_int_equal(f->len, ps.builds[0].len);
    assert_memory_equal(f->data, ps.builds[0].data, f->len);
    f = file(pd, ENVWRAP_CONF_NAME);
    assert_non_null(f);
    const char *want = "clrenvload 1\nprofiler=musl-x64.so\nOTEL_DOTNET_AUTO_HOME={dir}\n";
    assert_int_equal(f->len, strlen(want));
    assert_memory_equal(f->data, want, f->len);
    assert_int_equal(pd->n, 3);
    envwrap_free(&w);
    /* Without the loader ({dir} asked of a single file): the profiler alone, the entry. */
    struct profset one = {0};
    assert_int_equal(profset_load(FIX "entry-gnu.so", NULL, &one, &e), 0);
    assert_int_equal(envwrap_build(&one.builds[0], &r, false, NULL, 0, &w, &e), 0);
    assert_false(w.loader);
    assert_int_equal(w.build.dir->n, 1);
    assert_string_equal(w.build.dir->files[w.build.dir->entry].path, "entry-gnu.so");
    envwrap_free(&w);
    profset_free(&one);
#else
    assert_int_equal(rc, -ENOENT);
#endif
    profset_free(&ps);
}

/* An unknown RID: the build's own libc chooses; too many variables are refused. */
static void test_libc_from_build_and_caps(void **state)
{
    (void)state;
    struct profset ps = {0};
    struct cla_error e = {0};
    assert_int_equal(profset_load(FIX "glibc-x64.so", NULL, &ps, &e), 0);
    struct rid r = {0};
    struct envwrap w;
    const char *env[ENV_VARS_MAX + 1];
    for (size_t i = 0; i <= ENV_VARS_MAX; i++)
        env[i] = "A=1";
#if defined(__x86_64__)
    assert_int_equal(envwrap_build(&ps.builds[0], &r, true, env, 1, &w, &e), 0);
    assert_int_equal(w.build.dir->files[w.build.dir->entry].elf->libc, RID_LIBC_GLIBC);
    envwrap_free(&w);
#endif
    assert_int_equal(envwrap_build(&ps.builds[0], &r, true, env, ENV_VARS_MAX + 1, &w, &e), -E2BIG);
    profset_free(&ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader_per_libc),
        cmocka_unit_test(test_conf),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_libc_from_build_and_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
