/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Delivering a profiler directory (lib/deliver/deliver_dir.c) into a directory standing in for a
 * target's root: names kept under one content-addressed name, modes made read-only, reuse only of
 * an identical tree, refusal of anything else under the name (a FIFO there must not block), a
 * rename race on the temporary directory, and deliver_undo() removing exactly what this run
 * created; another uid's entry under the name sent to a fallback name, and stale temporary trees
 * swept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guards.h"
#include "root.h"
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"
#include "profset/profdir.h"
#include "profset/profdir_read.h"
#include "base/util.h"

static char base[128];
static int rootfd = -1;
static struct profdir pd;

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-deliver-dir.XXXXXX");
    assert_non_null(mkdtemp(base));
    sh("mkdir -p %s/src/lib %s/root/tmp && chmod 1777 %s/root/tmp && "
       "cp tests/fixtures/elf/entry-gnu.so %s/src/libvendor.so && chmod 755 %s/src/libvendor.so "
       "&& cp tests/fixtures/elf/glibc-x64.so %s/src/lib/libfxhelper.so && chmod 644 "
       "%s/src/lib/*.so && "
       "printf 'conf\\n' >%s/src/vendor.conf",
       base, base, base, base, base, base, base, base);
    char p[256];
    snprintf(p, sizeof(p), "%s/src", base);
    _cleanup_close_ int sfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct cla_error e = {0};
    assert_int_equal(profdir_read(sfd, p, NULL, &pd, &e), 0);
    assert_int_equal(profdir_choose_entry(&pd, NULL, "src", &e), 0);
    snprintf(p, sizeof(p), "%s/root", base);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    profdir_free(&pd);
    close(rootfd);
    sh("chmod -R u+w %s; rm -rf %s", base, base);
    return 0;
}

static mode_t mode_of(const char *rel)
{
    char p[TARGET_PATH_MAX + 256];
    struct stat st;
    snprintf(p, sizeof(p), "%s/root%s", base, rel);
    if (lstat(p, &st) < 0)
        return (mode_t)-1;
    return st.st_mode;
}

static void test_deliver_reuse_undo(void **state)
{
    (void)state;
    struct deliver_dir_opts o = {.pd = &pd, .dir = "/tmp/", .uid = getuid()};
    struct deliver_dir_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_dir(rootfd, &o, &r, &e), 0);
    assert_false(r.reused);
    /* "<entry stem>-<first 16 hex of the digest>". */
    assert_int_equal(strncmp(r.path, "/tmp/libvendor-", 15), 0);
    assert_int_equal(strlen(r.path), 15 + 16);
    char want[TARGET_PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s/libvendor.so", r.path);
    assert_string_equal(r.entry, want);
    /* Names kept, everything read-only, executables stay executable. */
    assert_int_equal(mode_of(r.path) & 07777, 0555);
    snprintf(want, sizeof(want), "%s/lib", r.path);
    assert_int_equal(mode_of(want) & 07777, 0555);
    snprintf(want, sizeof(want), "%s/lib/libfxhelper.so", r.path);
    assert_int_equal(mode_of(want) & 07777, 0444);
    assert_int_equal(mode_of(r.entry) & 07777, 0555);
    /* No temporary directory left. */
    char cmd[TARGET_PATH_MAX];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s/root/tmp | grep -v '^libvendor-')\"", base);
    assert_int_equal(system(cmd), 0);

    /* The same tree again: reused, untouched. */
    struct deliver_dir_result r2;
    assert_int_equal(deliver_dir(rootfd, &o, &r2, &e), 0);
    assert_true(r2.reused);
    assert_string_equal(r2.path, r.path);

    /* Undo removes what the first run created, and only while it is that inode. */
    assert_int_equal(deliver_undo(rootfd, r.path, r.dev, r.ino, &e), 0);
    assert_int_equal((int)mode_of(r.path), -1);
    assert_int_equal(deliver_undo(rootfd, r.path, r.dev, r.ino, &e), -ESTALE);
}

static void test_refuses_other_contents(void **state)
{
    (void)state;
    struct deliver_dir_opts o = {.pd = &pd, .dir = "/tmp", .uid = getuid()};
    struct deliver_dir_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_dir(rootfd, &o, &r, &e), 0);
    /* An extra file, then a changed byte, then a FIFO: never reused, never touched. */
    sh("chmod u+w %s/root%s && touch %s/root%s/extra.so", base, r.path, base, r.path);
    assert_int_equal(deliver_dir(rootfd, &o, &r, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "other contents"));
    sh("rm %s/root%s/extra.so && chmod u+w %s/root%s/vendor.conf && "
       "printf 'CONF\\n' >%s/root%s/vendor.conf",
       base, r.path, base, r.path, base, r.path);
    assert_int_equal(deliver_dir(rootfd, &o, &r, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "vendor.conf"));
    sh("chmod -R u+w %s/root%s && rm -rf %s/root%s && mkfifo %s/root%s", base, r.path, base, r.path,
       base, r.path);
    int ret = 0;
    BOUNDED(10, ret = deliver_dir(rootfd, &o, &r, &e));
    assert_int_equal(ret, -EEXIST);
    assert_non_null(strstr(e.msg, "not a directory"));
    assert_true(S_ISFIFO(mode_of(r.path)));
    sh("rm -f %s/root%s", base, r.path);
    /* A link on the way is never crossed. */
    sh("ln -s /etc %s/root/etcl", base);
    o.dir = "/etcl";
    assert_true(deliver_dir(rootfd, &o, &r, &e) < 0);
    sh("rm %s/root/etcl", base);
}

/* Another uid (1001) holds the tree's content-addressed name with a directory of its own (then a
 * file): the tree goes under a fallback name of ours, complete and verified, reused by the next
 * delivery, removed by undo; the squatter's entry stays as it was. */
static void test_squatter_gets_fallback(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the squatter's directory is handed to uid 1001");
    struct deliver_dir_opts o = {.pd = &pd, .dir = "/tmp/", .uid = getuid()};
    struct deliver_dir_result r, r2;
    struct cla_error e = {0};
    assert_int_equal(deliver_dir(rootfd, &o, &r, &e), 0);
    char usual[TARGET_PATH_MAX];
    snprintf(usual, sizeof(usual), "%s", r.path);
    assert_int_equal(deliver_undo(rootfd, usual, r.dev, r.ino, &e), 0);

    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0)
            sh("mkdir %s/root%s && echo squat >%s/root%s/libvendor.so && chown -R 1001:1001 "
               "%s/root%s",
               base, usual, base, usual, base, usual);
        else
            sh("echo squat >%s/root%s && chown 1001:1001 %s/root%s", base, usual, base, usual);
        char host[TARGET_PATH_MAX + 256];
        snprintf(host, sizeof(host), "%s/root%s", base, usual);
        struct stat before, after;
        assert_int_equal(lstat(host, &before), 0);

        volatile int rc = 0;
        BOUNDED(10, rc = deliver_dir(rootfd, &o, &r, &e));
        if (rc != 0)
            fail_msg("kind %d: %d: %s", kind, (int)rc, e.msg);
        assert_true(r.squatted);
        assert_int_equal(r.squatter_uid, 1001);
        assert_false(r.reused);
        size_t n = strlen(usual);
        assert_int_equal(strncmp(r.path, usual, n), 0);
        assert_int_equal(r.path[n], '-');
        assert_int_equal(strlen(r.path + n + 1), 16);
        assert_int_equal(strspn(r.path + n + 1, "0123456789abcdef"), 16);
        char want[TARGET_PATH_MAX + 64];
        snprintf(want, sizeof(want), "%s/libvendor.so", r.path);
        assert_string_equal(r.entry, want);
        assert_int_equal(mode_of(r.path) & 07777, 0555);
        sh("cmp %s/src/libvendor.so %s/root%s/libvendor.so && "
           "cmp %s/src/lib/libfxhelper.so %s/root%s/lib/libfxhelper.so",
           base, base, r.path, base, base, r.path);

        assert_int_equal(lstat(host, &after), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        assert_int_equal(after.st_uid, 1001);
        if (kind == 0)
            sh("grep -qx squat %s/root%s/libvendor.so", base, usual);

        assert_int_equal(deliver_dir(rootfd, &o, &r2, &e), 0);
        assert_true(r2.reused && r2.squatted);
        assert_string_equal(r2.path, r.path);

        assert_int_equal(deliver_undo(rootfd, r.path, r.dev, r.ino, &e), 0);
        assert_int_equal((int)mode_of(r.path), -1);
        assert_int_equal(lstat(host, &after), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        sh("rm -rf %s", host);
    }
}

static int64_t ctime_of(const char *rel)
{
    char p[TARGET_PATH_MAX + 256];
    struct stat st;
    snprintf(p, sizeof(p), "%s/root%s", base, rel);
    assert_int_equal(lstat(p, &st), 0);
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/* A stale temporary tree of ours (a delivery killed mid-way: a read-only subdirectory, a file)
 * is swept at the next delivery; a young one, another uid's, and a symlink under our pattern
 * stay, and nothing is followed through the link. */
static void test_sweep_stale_tree(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("one tree is handed to uid 1001");
    const char *stale = "/tmp/.clrattach-0123456789abcdef-00112233445566ff.tmpdir";
    const char *foreign = "/tmp/.clrattach-0123456789abcdef-ffeeddccbbaa9988.tmpdir";
    const char *link = "/tmp/.clrattach-0123456789abcdef-0000000000000000.tmpdir";
    const char *young = "/tmp/.clrattach-0123456789abcdef-1111111111111111.tmpdir";
    sh("cd %s/root && mkdir -p .%s/lib .%s/lib && touch .%s/lib/a.so .%s/lib/a.so && "
       "chmod 555 .%s/lib .%s/lib && chown -R 1001:1001 .%s && mkdir -p %s/keep && touch "
       "%s/keep/x && ln -s %s/keep .%s",
       base, stale, foreign, stale, foreign, stale, foreign, foreign, base, base, base, link);
    int64_t newest = ctime_of(stale);
    newest = ctime_of(foreign) > newest ? ctime_of(foreign) : newest;
    newest = ctime_of(link) > newest ? ctime_of(link) : newest;
    usleep(50000);
    sh("mkdir %s/root%s", base, young);
    assert_true(ctime_of(young) > newest);

    struct deliver_test_hooks h = {.now_ns = newest + (int64_t)DELIVER_STALE_AFTER_S * 1000000000};
    deliver_set_test_hooks(&h);
    struct deliver_dir_opts o = {.pd = &pd, .dir = "/tmp/", .uid = getuid()};
    struct deliver_dir_result r;
    struct cla_error e = {0};
    int rc = deliver_dir(rootfd, &o, &r, &e);
    deliver_set_test_hooks(NULL);
    if (rc != 0)
        fail_msg("%d: %s", rc, e.msg);
    assert_int_equal((int)mode_of(stale), -1);
    assert_true(S_ISDIR(mode_of(foreign)));
    assert_true(S_ISLNK(mode_of(link)));
    assert_true(S_ISDIR(mode_of(young)));
    sh("test -f %s/keep/x", base);
    assert_int_equal(deliver_undo(rootfd, r.path, r.dev, r.ino, &e), 0);
    sh("chmod -R u+w %s/root%s && rm -rf %s/root%s %s/root%s %s/root%s %s/keep", base, foreign,
       base, foreign, base, link, base, young, base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deliver_reuse_undo),
        cmocka_unit_test(test_refuses_other_contents),
        cmocka_unit_test(test_squatter_gets_fallback),
        cmocka_unit_test(test_sweep_stale_tree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
