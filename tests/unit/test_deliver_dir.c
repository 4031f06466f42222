/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Delivering a profiler directory (lib/deliver/deliver_dir.c) into a directory standing in for a
 * target's root: names kept under one content-addressed name, modes made read-only, reuse only of
 * an identical tree, refusal of anything else under the name (a FIFO there must not block), a
 * rename race on the temporary directory, and deliver_undo() removing exactly what this run
 * created.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deliver_reuse_undo),
        cmocka_unit_test(test_refuses_other_contents),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
