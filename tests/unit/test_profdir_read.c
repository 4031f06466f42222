/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading a profiler directory (lib/profset/profdir_read.c): a vendor-shaped tree read from
 * disk, links inside and outside it, FIFOs and devices refused without blocking, the entry
 * chosen in the same call (or left to the caller for a lone library), the digest stable and
 * equal for the same tree read from disk or from a tar stream. The model's own rules are
 * test_profdir.c.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shell.h"

#include "base/util.h"
#include "profset/profdir_read.h"
#include "target/rootfs.h"

#define FIX "tests/fixtures/elf/"

static char root[64];

/* A vendor-shaped tree: the entry, a helper in lib/, a config, a link to the entry. */
static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/clrattach-profdir-XXXXXX");
    assert_non_null(mkdtemp(root));
    sh("mkdir -p %s/v/lib && cp " FIX "entry-gnu.so %s/v/libvendor.so && cp " FIX
       "glibc-x64.so %s/v/lib/libfxhelper.so && printf 'conf-v1\\n' >%s/v/vendor.conf && "
       "ln -s libvendor.so %s/v/libvendor.so.1 && chmod 755 %s/v/libvendor.so",
       root, root, root, root, root, root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", root);
    return 0;
}

static int read_tree(const char *sub, const char *entry, struct profdir *pd, struct cla_error *e)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", root, sub);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    return profdir_read(fd, path, entry, pd, e);
}

static const struct profdir_file *file(const struct profdir *pd, const char *path)
{
    for (size_t i = 0; i < pd->n; i++)
        if (strcmp(pd->files[i].path, path) == 0)
            return &pd->files[i];
    return NULL;
}

/* Reads the file at `path` below the fixture root whole. */
static void slurp(const char *rel, char **buf, size_t *len)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(util_read_all(fd, 1 << 20, buf, len), 0);
}

static void test_vendor_tree(void **state)
{
    (void)state;
    struct profdir pd;
    struct cla_error e = {0};
    /* The entry and its link both export DllGetClassObject: ambiguous until --entry says. */
    assert_int_equal(read_tree("v", NULL, &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "libvendor.so, libvendor.so.1"));
    assert_non_null(strstr(e.hint, "--entry"));
    assert_int_equal(read_tree("v", "libvendor.so", &pd, &e), 0);
    assert_string_equal(pd.files[pd.entry].path, "libvendor.so");
    assert_int_equal(pd.n, 5); /* lib/, lib/libfxhelper.so, libvendor.so, .so.1, vendor.conf */
    const struct profdir_file *f = file(&pd, "libvendor.so.1");
    assert_non_null(f);
    assert_false(f->is_dir);
    assert_string_equal(f->sha256, file(&pd, "libvendor.so")->sha256); /* a link is a copy */
    assert_true(file(&pd, "lib")->is_dir);
    assert_true(file(&pd, "libvendor.so")->executable);
    assert_false(file(&pd, "vendor.conf")->executable);
    assert_null(file(&pd, "vendor.conf")->elf);
    assert_non_null(file(&pd, "lib/libfxhelper.so")->elf);
    profdir_free(&pd);

    /* The helper is not a profiler; a name not in the tree is named as such. */
    assert_int_equal(read_tree("v", "libfxhelper.so", &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "does not export DllGetClassObject"));
    assert_int_equal(read_tree("v", "nope.so", &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no such file"));

    /* A tar stream holds no link: refused, the message naming the stream. */
    char *buf;
    size_t len;
    sh("tar -C %s/v -cf %s/v.tar .", root, root);
    slurp("v.tar", &buf, &len);
    assert_int_equal(profdir_read_tar((uint8_t *)buf, len, NULL, "v.tar", &pd, &e), -EPERM);
    assert_int_equal(strncmp(e.msg, "v.tar: tar: ", 12), 0);
    free(buf);

    /* Without the link the only exporter is chosen by itself. */
    sh("rm %s/v/libvendor.so.1", root);
    assert_int_equal(read_tree("v", NULL, &pd, &e), 0);
    assert_string_equal(pd.files[pd.entry].path, "libvendor.so");
    char digest[65];
    memcpy(digest, pd.digest, sizeof(digest));
    profdir_free(&pd);

    /* The same tree as a tar stream: the same digest, the same entry. A changed byte: another
     * digest. */
    sh("tar -C %s/v -cf %s/v.tar .", root, root);
    slurp("v.tar", &buf, &len);
    assert_int_equal(profdir_read_tar((uint8_t *)buf, len, NULL, "v.tar", &pd, &e), 0);
    assert_string_equal(pd.digest, digest);
    assert_string_equal(pd.files[pd.entry].path, "libvendor.so");
    profdir_free(&pd);
    free(buf);
    sh("printf 'conf-v2\\n' >%s/v/vendor.conf", root);
    assert_int_equal(read_tree("v", NULL, &pd, &e), 0);
    assert_string_not_equal(pd.digest, digest);
    profdir_free(&pd);
    sh("ln -s libvendor.so %s/v/libvendor.so.1", root);
}

static void test_refused(void **state)
{
    (void)state;
    struct profdir pd;
    struct cla_error e = {0};
    /* A link leaving the tree, a FIFO (must not block), a dangling link, a link to a dir. */
    sh("mkdir -p %s/out && cp -r %s/v %s/out/a && ln -s /etc/passwd %s/out/a/passwd", root, root,
       root, root);
    assert_int_equal(read_tree("out/a", NULL, &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "symbolic link"));
    sh("cp -r %s/v %s/out/b && ln -s ../../v/vendor.conf %s/out/b/up.conf", root, root, root);
    assert_int_equal(read_tree("out/b", NULL, &pd, &e), -EINVAL);
    sh("cp -r %s/v %s/out/c && mkfifo %s/out/c/fifo.so", root, root, root);
    alarm(10); /* a blocking open would hang here: let SIGALRM fail the test instead */
    assert_int_equal(read_tree("out/c", NULL, &pd, &e), -ENXIO);
    alarm(0);
    assert_non_null(strstr(e.msg, "fifo.so' is a FIFO"));
    sh("cp -r %s/v %s/out/d && ln -s lib %s/out/d/libdir", root, root, root);
    assert_int_equal(read_tree("out/d", NULL, &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "not a regular file"));
    /* An empty directory, and one with no profiler in it. */
    sh("mkdir -p %s/out/empty/sub %s/out/noprof && cp " FIX "glibc-x64.so %s/out/noprof/", root,
       root, root);
    assert_int_equal(read_tree("out/empty", NULL, &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no file"));
    /* A lone library is left to the caller without an entry (1); asked for as the entry, a
     * library that is no profiler is refused. */
    assert_int_equal(read_tree("out/noprof", NULL, &pd, &e), 1);
    assert_int_equal(pd.n, 1);
    assert_int_equal(profdir_choose_entry(&pd, NULL, "noprof", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no library in noprof exports DllGetClassObject"));
    profdir_free(&pd);
    assert_int_equal(read_tree("out/noprof", "glibc-x64.so", &pd, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "does not export DllGetClassObject"));
    /* Too deep. */
    sh("mkdir -p %s/out/deep/1/2/3/4/5/6/7/8/9/10 && touch %s/out/deep/1/2/3/4/5/6/7/8/9/10/f",
       root, root);
    assert_int_equal(read_tree("out/deep", NULL, &pd, &e), -E2BIG);
    assert_non_null(strstr(e.msg, "deep"));
}

/* The same trees where openat2 is missing: links are followed by rootfs.c's walk. */
static void test_vendor_tree_walk(void **state)
{
    sh("printf 'conf-v1\\n' >%s/v/vendor.conf", root); /* the first run changed it */
    rootfs_force_fallback(true);
    test_vendor_tree(state);
    rootfs_force_fallback(false);
}

static void test_refused_walk(void **state)
{
    sh("rm -rf %s/out", root);
    rootfs_force_fallback(true);
    test_refused(state);
    rootfs_force_fallback(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vendor_tree),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_vendor_tree_walk),
        cmocka_unit_test(test_refused_walk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
