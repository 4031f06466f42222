/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profiler-directory model (lib/profset/profdir.c), on trees built in memory: the entry
 * chosen by DllGetClassObject or --entry and every refusal named, the digest independent of
 * the order files arrive in, the caps on entries and bytes. Reading trees from disk or a tar
 * stream is test_profdir_read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "profset/profdir.h"

#define FIX "tests/fixtures/elf/"

/* Adds `path` to the tree with the bytes of fixture `fix` (NULL: "conf-v1\n"). */
static void add(struct profdir *pd, const char *path, const char *fix, bool exec)
{
    char *buf;
    size_t len;
    if (fix) {
        _cleanup_close_ int fd = open(fix, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(util_read_all(fd, 1 << 20, &buf, &len), 0);
    } else {
        buf = strdup("conf-v1\n");
        assert_non_null(buf);
        len = strlen(buf);
    }
    struct cla_error e = {0};
    assert_int_equal(profdir_add(pd, path, false, exec, (uint8_t *)buf, len, &e), 0);
}

/* A vendor-shaped tree: the entry, a copy of it under its versioned name, a helper in lib/
 * (the directory implied), a config. Sealed. */
static void vendor_tree(struct profdir *pd, bool with_copy)
{
    *pd = (struct profdir){0};
    add(pd, "lib/libfxhelper.so", FIX "glibc-x64.so", false);
    add(pd, "vendor.conf", NULL, false);
    add(pd, "libvendor.so", FIX "entry-gnu.so", true);
    if (with_copy)
        add(pd, "libvendor.so.1", FIX "entry-gnu.so", false);
    struct cla_error e = {0};
    assert_int_equal(profdir_seal(pd, &e), 0);
}

static void test_choose_entry(void **state)
{
    (void)state;
    struct profdir pd;
    struct cla_error e = {0};
    vendor_tree(&pd, true);
    assert_int_equal(pd.n, 5); /* lib/ was implied by lib/libfxhelper.so */

    /* The entry and its copy both export DllGetClassObject: ambiguous until --entry says. */
    assert_int_equal(profdir_choose_entry(&pd, NULL, "v", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "libvendor.so, libvendor.so.1"));
    assert_non_null(strstr(e.hint, "--entry"));
    assert_int_equal(profdir_choose_entry(&pd, "libvendor.so", "v", &e), 0);
    assert_string_equal(pd.files[pd.entry].path, "libvendor.so");
    /* The helper (found by its bare name below lib/) is not a profiler, nor is the config; a
     * name not in the tree is named as such. */
    assert_int_equal(profdir_choose_entry(&pd, "libfxhelper.so", "v", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "does not export DllGetClassObject"));
    assert_int_equal(profdir_choose_entry(&pd, "nope.so", "v", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no such file"));
    assert_int_equal(profdir_choose_entry(&pd, "vendor.conf", "v", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "not an ELF shared object"));
    profdir_free(&pd);

    /* Without the copy the only exporter is chosen by itself. */
    vendor_tree(&pd, false);
    assert_int_equal(profdir_choose_entry(&pd, NULL, "v", &e), 0);
    assert_string_equal(pd.files[pd.entry].path, "libvendor.so");
    profdir_free(&pd);

    /* A library that is no profiler, alone. */
    add(&pd, "glibc-x64.so", FIX "glibc-x64.so", false);
    assert_int_equal(profdir_seal(&pd, &e), 0);
    assert_int_equal(profdir_choose_entry(&pd, NULL, "noprof", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no library in noprof exports DllGetClassObject"));
    profdir_free(&pd);
}

/* The digest is of the sealed (sorted) tree: arrival order does not change it, one byte
 * does, and a tree of directories only holds nothing to load. */
static void test_digest(void **state)
{
    (void)state;
    struct profdir a, b = {0};
    struct cla_error e = {0};
    vendor_tree(&a, false);
    add(&b, "libvendor.so", FIX "entry-gnu.so", true);
    add(&b, "vendor.conf", NULL, false);
    add(&b, "lib/libfxhelper.so", FIX "glibc-x64.so", false);
    assert_int_equal(profdir_seal(&b, &e), 0);
    assert_string_equal(a.digest, b.digest);
    profdir_free(&b);
    add(&b, "libvendor.so", FIX "entry-gnu.so", false); /* the x bit is part of the tree */
    add(&b, "vendor.conf", NULL, false);
    add(&b, "lib/libfxhelper.so", FIX "glibc-x64.so", false);
    assert_int_equal(profdir_seal(&b, &e), 0);
    assert_string_not_equal(a.digest, b.digest);
    profdir_free(&b);
    profdir_free(&a);

    assert_int_equal(profdir_add(&b, "empty/sub", true, true, NULL, 0, &e), 0);
    assert_int_equal(profdir_seal(&b, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no file"));
    profdir_free(&b);
}

static void test_model_caps(void **state)
{
    (void)state;
    struct profdir pd = {0};
    struct cla_error e = {0};
    assert_int_equal(profdir_add(&pd, "a/b", false, false, (uint8_t *)strdup("x"), 1, &e), 0);
    assert_int_equal(profdir_add(&pd, "a/b", false, false, (uint8_t *)strdup("y"), 1, &e), -EEXIST);
    assert_int_equal(profdir_add(&pd, "a/b/c", false, false, (uint8_t *)strdup("z"), 1, &e),
                     -EEXIST);
    assert_non_null(strstr(e.msg, "both a file and a directory"));
    assert_int_equal(profdir_add(&pd, "big", false, false, malloc(1), PROFILER_MAX_SIZE, &e),
                     -E2BIG);
    profdir_free(&pd);
    for (int i = 0; i < PROFDIR_FILES_MAX + 1; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        int r = profdir_add(&pd, name, false, false, (uint8_t *)strdup("x"), 1, &e);
        if (i < PROFDIR_FILES_MAX)
            assert_int_equal(r, 0);
        else
            assert_int_equal(r, -E2BIG);
    }
    profdir_free(&pd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choose_entry),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_model_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
