/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement's I/O half: the candidate directories asked in turn through the target's root, the
 * first that takes the profiler used, every one passed over named (rendered) with its reason,
 * and what was created undone (never what was reused). A directory stands in for the target's
 * root, another for its /proc/<pid> (the mountinfo that names a refusing mount).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deliver/place.h"
#include "profset/profset.h"
#include "root.h"
#include "shell.h"
#include "target/target.h"

static char base[64];
static uint8_t payload[] = "\x7f"
                           "ELF pretend shared object bytes";

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-place.XXXXXX");
    assert_non_null(mkdtemp(base));
    sh("cd '%s' && mkdir -p proc bare root/tmp root/var/tmp root/dev/shm && chmod 1777 root/tmp "
       "root/var/tmp root/dev/shm",
       base);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf '%s'", base);
    return 0;
}

/* A target whose root is base/`root` and whose TMPDIR is `tmpdir`. */
static struct target fake_target(const char *root, const char *tmpdir)
{
    char path[256];
    struct target t = {.pid = 4242, .pidfd = -1};
    snprintf(path, sizeof(path), "%s/proc", base);
    t.procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof(path), "%s/%s", base, root);
    t.rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(t.procfd >= 0 && t.rootfd >= 0);
    snprintf(t.tmpdir, sizeof(t.tmpdir), "%s", tmpdir);
    return t;
}

static struct profset_build build(void)
{
    struct profset_build b = {.data = payload, .len = sizeof(payload)};
    snprintf(b.name, sizeof(b.name), "libclrprobe.so");
    return b;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool exists_in(const char *root, const char *path)
{
    char p[5000];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s%s", base, root, path);
    return lstat(p, &st) == 0;
}

/* TMPDIR missing in the target's view: passed over with the delivery's reason, /tmp/ takes it.
 * A second run reuses the file, and only the run that created it removes it. */
static void test_first_that_takes_it(void **state)
{
    (void)state;
    struct target t = fake_target("root", "/nope/");
    struct profset_build b = build();
    struct place_opts o = {.build = &b, .uid = geteuid()};
    struct placed p, again;
    char over[512];
    struct cla_error e = {0};
    assert_int_equal(place_profiler(&t, &o, &p, over, sizeof(over), &e), 0);
    assert_true(starts(over, "/nope/ (TMPDIR): "));
    assert_null(strchr(over, ';')); /* one directory passed over */
    assert_true(starts(p.path, "/tmp/libclrprobe-"));
    assert_string_equal(p.top, p.path);
    assert_string_equal(p.dir, "/tmp");
    assert_int_equal(strlen(p.sha256), 64);
    assert_false(p.is_dir);
    assert_false(p.reused);
    assert_true(exists_in("root", p.path));

    assert_int_equal(place_profiler(&t, &o, &again, over, sizeof(over), &e), 0);
    assert_true(again.reused);
    assert_string_equal(again.path, p.path);
    assert_false(place_undo(&t, &again));
    assert_true(exists_in("root", p.path));
    assert_true(place_undo(&t, &p));
    assert_false(exists_in("root", p.path));
    target_close(&t);
}

/* No directory takes it: the error names each with its reason, the hint the way out, which
 * depends on whether the operator chose the directory. The directories are rendered. */
static void test_none_takes_it(void **state)
{
    (void)state;
    struct target t = fake_target("bare", "/nope/");
    struct profset_build b = build();
    struct place_opts o = {.build = &b, .uid = geteuid()};
    struct placed p;
    char over[512];
    struct cla_error e = {0};
    assert_true(place_profiler(&t, &o, &p, over, sizeof(over), &e) < 0);
    assert_true(e.code < 0);
    assert_true(starts(e.msg, "deliver: no directory in the target's view can take the profiler: "
                              "/nope/ (TMPDIR): "));
    assert_non_null(strstr(over, "; /tmp/ (default): "));
    assert_non_null(strstr(over, "; /var/tmp/ (default): "));
    assert_non_null(strstr(over, "; /dev/shm/ (default): "));
    assert_non_null(strstr(e.hint, "mount a writable volume"));

    o.user_dir = "/no\x1bpe";
    assert_true(place_profiler(&t, &o, &p, over, sizeof(over), &e) < 0);
    /* The directory rendered (the reason after it is the delivery's own message). */
    assert_true(starts(over, "/no\\x1bpe/ (--target-dir): "));
    assert_null(strstr(over, "/tmp/")); /* the operator's choice alone */
    char want[64];
    snprintf(want, sizeof(want), "writable by uid %u", (unsigned)geteuid());
    assert_non_null(strstr(e.hint, want));

    /* The list is cut to the buffer, still a string. */
    o.user_dir = NULL;
    assert_true(place_profiler(&t, &o, &p, over, 40, &e) < 0);
    assert_int_equal(strlen(over), 39);
    assert_true(place_profiler(&t, &o, &p, over, sizeof(over), NULL) < 0);
    target_close(&t);
}

/* In a mount namespace of its own: /tmp mounted read-only in the target's root is refused
 * before any delivery is tried, named by the target's mount table; /var/tmp takes it. */
static int read_only_scenario(void)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/root/tmp", base);
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", path, "tmpfs", MS_RDONLY, NULL) < 0)
        return 10;
    snprintf(path, sizeof(path), "%s/proc/mountinfo", base);
    FILE *f = fopen(path, "w");
    if (!f)
        return 11;
    fputs("600 1 0:50 / / rw - overlay overlay rw\n"
          "602 600 0:52 / /tmp ro,relatime - tmpfs tmpfs ro\n",
          f);
    fclose(f);
    struct target t = fake_target("root", "/tmp/");
    struct profset_build b = build();
    struct place_opts o = {.build = &b, .uid = geteuid()};
    struct placed p;
    char over[512];
    if (place_profiler(&t, &o, &p, over, sizeof(over), NULL) != 0)
        return 12;
    if (strcmp(over, "/tmp/ (TMPDIR): mounted read-only (tmpfs on /tmp)") != 0)
        return 13;
    if (!starts(p.path, "/var/tmp/libclrprobe-"))
        return 14;
    return place_undo(&t, &p) ? 0 : 15;
}

static void test_read_only_refused(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a read-only mount in a mount namespace of its own");
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0)
        _exit(read_only_scenario());
    int status;
    assert_int_equal(waitpid(c, &status, 0), c);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_that_takes_it),
        cmocka_unit_test(test_none_takes_it),
        cmocka_unit_test(test_read_only_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
