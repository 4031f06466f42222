/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs.h"

/* A fake target root with traps:
 *   root/tmp/            a real directory
 *   root/tmp/file        a real file
 *   root/linkdir -> /etc      absolute link (would escape to OUR /etc)
 *   root/reldir  -> tmp       relative link, still inside
 *   root/tmp/evil -> ../../outside/secret   escapes the root by dot-dot
 *   outside/secret       must never be reached
 */
static char base[256];
static int rootfd = -1;

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-rootfs.XXXXXX");
    assert_non_null(mkdtemp(base));
    char p[512];
    snprintf(p, sizeof(p), "%s/root", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/root/tmp", base);
    assert_int_equal(mkdir(p, 01777), 0);
    snprintf(p, sizeof(p), "%s/root/tmp/file", base);
    int fd = open(p, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof(p), "%s/outside", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/outside/secret", base);
    fd = open(p, O_CREAT | O_WRONLY, 0600);
    close(fd);
    snprintf(p, sizeof(p), "%s/root/linkdir", base);
    assert_int_equal(symlink("/etc", p), 0);
    snprintf(p, sizeof(p), "%s/root/reldir", base);
    assert_int_equal(symlink("tmp", p), 0);
    snprintf(p, sizeof(p), "%s/root/tmp/evil", base);
    assert_int_equal(symlink("../../outside/secret", p), 0);
    snprintf(p, sizeof(p), "%s/root", base);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(rootfd);
    char cmd[600];
    /* Test-only cleanup of our own temporary tree. */
    snprintf(cmd, sizeof(cmd), "%s/root/tmp/new", base);
    unlink(cmd);
    const char *rel[] = {"root/tmp/evil", "root/tmp/file", "root/reldir", "root/linkdir",
                         "root/tmp", "root", "outside/secret", "outside", ""};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        snprintf(cmd, sizeof(cmd), "%s/%s", base, rel[i]);
        if (remove(cmd) < 0 && errno != ENOENT)
            fprintf(stderr, "cleanup %s: %s\n", cmd, strerror(errno));
    }
    return 0;
}

static void both(void (*fn)(void))
{
    rootfs_force_fallback(false);
    fn();
    rootfs_force_fallback(true);
    fn();
    rootfs_force_fallback(false);
}

static void check_plain(void)
{
    struct cla_error e = {0};
    int fd = rootfs_open(rootfd, "/tmp/file", O_RDONLY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "tmp//./file", O_RDONLY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "/", O_RDONLY | O_DIRECTORY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/", O_RDONLY | O_DIRECTORY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
}

static void check_traps(void)
{
    struct cla_error e = {0};
    /* An absolute link in a directory position: refused, never resolved against OUR root. */
    int r = rootfs_open(rootfd, "/linkdir/passwd", O_RDONLY, 0, &e);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    /* Even a link that stays inside is refused: links are never followed. */
    r = rootfs_open(rootfd, "/reldir/file", O_RDONLY, 0, &e);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    /* A link as the last component. */
    r = rootfs_open(rootfd, "/tmp/evil", O_RDONLY, 0, &e);
    assert_int_equal(r, -ELOOP);
    /* O_CREAT through a planted link must not create or open its target. */
    r = rootfs_open(rootfd, "/tmp/evil", O_WRONLY | O_CREAT | O_EXCL, 0644, &e);
    assert_true(r == -EEXIST || r == -ELOOP);
    r = rootfs_open(rootfd, "/linkdir/x", O_WRONLY | O_CREAT | O_EXCL, 0644, &e);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    /* Dot-dot is refused outright. */
    assert_int_equal(rootfs_open(rootfd, "/tmp/../../outside/secret", O_RDONLY, 0, &e), -EINVAL);
    assert_int_equal(rootfs_open(rootfd, "..", O_RDONLY, 0, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ".."));
}

static void check_create(void)
{
    struct cla_error e = {0};
    int fd = rootfs_open(rootfd, "/tmp/new", O_WRONLY | O_CREAT | O_EXCL, 0600, &e);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rootfs_open(rootfd, "/tmp/new", O_WRONLY | O_CREAT | O_EXCL, 0600, &e),
                     -EEXIST);
    char p[512];
    snprintf(p, sizeof(p), "%s/root/tmp/new", base);
    assert_int_equal(unlink(p), 0);
}

static void test_plain(void **state)
{
    (void)state;
    both(check_plain);
}

static void test_traps(void **state)
{
    (void)state;
    both(check_traps);
}

static void test_create(void **state)
{
    (void)state;
    both(check_create);
}

static void test_strategy_used(void **state)
{
    (void)state;
    struct cla_error e = {0};
    rootfs_force_fallback(true);
    int fd = rootfs_open(rootfd, "/tmp/file", O_RDONLY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
    assert_false(rootfs_last_used_openat2());
    rootfs_force_fallback(false);
    fd = rootfs_open(rootfd, "/tmp/file", O_RDONLY, 0, &e);
    assert_true(fd >= 0);
    close(fd);
    /* This kernel has openat2 (5.6+): the kernel path is the one normally taken. */
    assert_true(rootfs_last_used_openat2());
}

static void test_too_long(void **state)
{
    (void)state;
    static char path[5000];
    memset(path, 'a', sizeof(path) - 1);
    struct cla_error e = {0};
    assert_int_equal(rootfs_open(rootfd, path, O_RDONLY, 0, &e), -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),         cmocka_unit_test(test_traps),
        cmocka_unit_test(test_create),        cmocka_unit_test(test_strategy_used),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
