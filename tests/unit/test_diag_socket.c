/* SPDX-License-Identifier: Apache-2.0 */
/*
 * diag_socket: the choice among listed names (pure), and the listing and the open against a real
 * process chrooted into a fixture root: a TMPDIR reached through a link inside that root, and
 * sockets of another user under the process's name, refused whoever that user is.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "root.h"
#include "shell.h"
#include "target/diag_socket.h"
#include "target/rootfs.h"
#include "target/target.h"

static struct diag_socket_entry ent(const char *name, pid_t pid, uint64_t key, int64_t mtime,
                                    bool sock)
{
    struct diag_socket_entry e = {.pid = pid, .key = key, .mtime_ns = mtime, .is_socket = sock};
    strncpy(e.name, name, sizeof(e.name) - 1);
    return e;
}

static struct diag_socket_entry owned(struct diag_socket_entry e, uid_t owner)
{
    e.owner = owner;
    return e;
}

static void test_absent(void **state)
{
    (void)state;
    struct diag_socket_entry es[] = {ent("dotnet-diagnostic-7-5-socket", 7, 5, 1, true)};
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 1, 8, 5, 0, &s), SOCKET_ABSENT);
    assert_int_equal(s.candidates, 0);
    assert_int_equal(diag_socket_choose(NULL, 0, 8, 5, 0, &s), SOCKET_ABSENT);
}

static void test_key_match_beats_newer(void **state)
{
    (void)state;
    struct diag_socket_entry es[] = {
        ent("dotnet-diagnostic-1-100-socket", 1, 100, 10, true),
        ent("dotnet-diagnostic-1-999-socket", 1, 999, 50, true), /* newer, but stale key */
        ent("dotnet-diagnostic-2-100-socket", 2, 100, 60, true),
    };
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 3, 1, 100, 0, &s), SOCKET_FOUND);
    assert_string_equal(s.name, "dotnet-diagnostic-1-100-socket");
    assert_int_equal(s.candidates, 2);
    assert_int_equal(s.stale, 1);
}

static void test_newest_when_no_key_matches(void **state)
{
    (void)state;
    /* In a time namespace the start time we read differs from the target's: newest wins. */
    struct diag_socket_entry es[] = {
        ent("dotnet-diagnostic-1-10-socket", 1, 10, 10, true),
        ent("dotnet-diagnostic-1-30-socket", 1, 30, 30, true),
        ent("dotnet-diagnostic-1-20-socket", 1, 20, 20, true),
    };
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 3, 1, 77, 0, &s), SOCKET_FOUND_UNKEYED);
    assert_string_equal(s.name, "dotnet-diagnostic-1-30-socket");
    assert_int_equal(s.stale, 2);
}

static void test_not_a_socket(void **state)
{
    (void)state;
    /* A hostile target plants a regular file or FIFO under the socket's exact name. */
    struct diag_socket_entry es[] = {ent("dotnet-diagnostic-1-100-socket", 1, 100, 10, false)};
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 0, &s), SOCKET_NOT_SOCKET);
}

/* Under qemu-user the key is 1-2 ticks past the kernel's start time: explained as such; a key
 * further off is a time namespace or an earlier process's socket. */
static void test_unkeyed_detail(void **state)
{
    (void)state;
    char buf[160];
    diag_socket_unkeyed_detail(1002, 1000, buf, sizeof(buf));
    assert_string_equal(buf,
                        "start time off by 2 ticks: an emulator (qemu-user) or a time namespace");
    diag_socket_unkeyed_detail(999, 1000, buf, sizeof(buf));
    assert_string_equal(buf,
                        "start time off by 1 tick: an emulator (qemu-user) or a time namespace");
    diag_socket_unkeyed_detail(1003, 1000, buf, sizeof(buf));
    assert_non_null(strstr(buf, "key 1003 is not the start time 1000"));
    assert_non_null(strstr(buf, "earlier process"));
    diag_socket_unkeyed_detail(0, UINT64_MAX, buf, sizeof(buf));
    assert_null(strstr(buf, "off by"));
    /* Cut to the caller's buffer, still terminated. */
    char small[8];
    diag_socket_unkeyed_detail(1001, 1000, small, sizeof(small));
    assert_string_equal(small, "start t");
}

/* A name bound by another user is never the process's socket: the rule is equality with its
 * effective uid, root on either side included. */
static void test_foreign_owner(void **state)
{
    (void)state;
    struct diag_socket s;
    struct diag_socket_entry es[] = {
        owned(ent("dotnet-diagnostic-1-100-socket", 1, 100, 10, true), 1000)};
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 2000, &s), SOCKET_FOREIGN);
    assert_int_equal(s.owner, 1000);
    assert_string_equal(s.name, "dotnet-diagnostic-1-100-socket");
    /* Another uid's socket for a root process, root's for a non-root one. */
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 0, &s), SOCKET_FOREIGN);
    es[0].owner = 0;
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 1000, &s), SOCKET_FOREIGN);
    assert_int_equal(s.owner, 0);
    /* Its own, root's or not. */
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 0, &s), SOCKET_FOUND);
    es[0].owner = 1000;
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 1000, &s), SOCKET_FOUND);
    /* A planted file is still named for what it is. */
    es[0].is_socket = false;
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, 2000, &s), SOCKET_NOT_SOCKET);
}

/* Names another user planted, keyed or newer, never hide the process's own socket. */
static void test_own_beats_foreign(void **state)
{
    (void)state;
    struct diag_socket_entry es[] = {
        owned(ent("dotnet-diagnostic-1-100-socket", 1, 100, 90, true), 1000), /* keyed */
        owned(ent("dotnet-diagnostic-1-55-socket", 1, 55, 10, true), 2000),   /* own, older */
        owned(ent("dotnet-diagnostic-1-66-socket", 1, 66, 99, true), 1000),   /* newest */
    };
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 3, 1, 100, 2000, &s), SOCKET_FOUND_UNKEYED);
    assert_string_equal(s.name, "dotnet-diagnostic-1-55-socket");
    assert_int_equal(s.owner, 2000);
    assert_int_equal(s.candidates, 3);
    assert_int_equal(s.stale, 2);
}

/* The fixture: <base>/root is the process's root, with /var/run -> /run (absolute, as in
 * Debian images) and its TMPDIR /run/app, a directory anyone may write. */
static char base[64], root[96];

/* A process chrooted into the fixture, as `uid`, pinned as attach pins its target. */
struct app {
    pid_t pid;
    int proc;
    struct target t;
};

static void app_start(struct app *a, uid_t uid, const char *tmpdir)
{
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    fflush(NULL);
    a->pid = fork();
    assert_true(a->pid >= 0);
    if (a->pid == 0) {
        /* Gone with the test even when a failed check ends it before app_close(): the death
         * signal is set after the uid change, which clears it. */
        if (chroot(root) < 0 || chdir("/") < 0 ||
            (uid && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)) ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            _exit(1);
        (void)!write(ready[1], "y", 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    a->proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(a->proc >= 0);
    struct cla_error e = {0};
    if (target_open(a->proc, a->pid, &a->t, &e) < 0)
        fail_msg("target_open: %s", e.msg);
    /* What target_open reads from TMPDIR=... in the environment (ours, inherited). */
    snprintf(a->t.tmpdir, sizeof(a->t.tmpdir), "%s", tmpdir);
}

static void app_close(struct app *a)
{
    kill(a->pid, SIGKILL);
    waitpid(a->pid, NULL, 0);
    target_close(&a->t);
    close(a->proc);
}

/* Binds a socket named for the app (key: its start time + `key_off`) in `dir` of the fixture
 * (a path of ours), owned by `owner`. Returns nothing: the name stays as a stale socket. */
static void plant(const struct app *a, const char *dir, uint64_t key_off, uid_t owner,
                  char *ret_name, size_t size)
{
    snprintf(ret_name, size, "dotnet-diagnostic-%d-%llu-socket", (int)a->t.status.nspid,
             (unsigned long long)(a->t.stat.starttime + key_off));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, ret_name);
    assert_true(n > 0 && (size_t)n < sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    assert_int_equal(chown(sa.sun_path, owner, owner), 0);
}

static int fixture_up(void **state)
{
    (void)state;
    if (geteuid() != 0)
        return 0; /* the tests below skip (root.h) */
    snprintf(base, sizeof(base), "/tmp/test_diag_socket.XXXXXX");
    assert_non_null(mkdtemp(base));
    snprintf(root, sizeof(root), "%s/root", base);
    sh("mkdir -p '%s/var' '%s/run/app' '%s/host' && chmod 0777 '%s/run/app' && "
       "ln -s /run '%s/var/run'",
       root, root, base, root, root);
    return 0;
}

static int fixture_down(void **state)
{
    (void)state;
    if (base[0])
        sh("rm -rf '%s'", base);
    return 0;
}

static void empty_app_dir(void)
{
    sh("rm -f '%s/run/app/'* '%s/host/'*", root, base);
}

/* The app's socket directory, a path of ours. */
static void app_dir(char *buf, size_t size)
{
    snprintf(buf, size, "%s/run/app", root);
}

/* The listing shows the app's only socket as another user's (`owner`), and the open of the
 * chosen name refuses it naming that owner. */
static void assert_foreign(struct app *a, uid_t owner, struct diag_socket *ret, struct cla_error *e)
{
    assert_int_equal(diag_socket_find(&a->t, NULL, ret, e), 0);
    assert_int_equal(ret->state, SOCKET_FOREIGN);
    assert_int_equal(ret->owner, owner);
    assert_int_equal(diag_socket_open(&a->t, ret, e), -EPERM);
    char want[48];
    snprintf(want, sizeof(want), "belongs to uid %u, but pid", (unsigned)owner);
    assert_non_null(strstr(e->msg, want));
    assert_true(e->hint[0] != '\0');
}

/* TMPDIR=/var/run/app with /var/run -> /run: the runtime resolves the link in its own root, and
 * so does the listing (the index's too) and the open, with openat2 and with the walk. */
static void test_tmpdir_through_link(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot");
    for (int fallback = 0; fallback < 2; fallback++) {
        rootfs_force_fallback(fallback);
        struct app a;
        app_start(&a, 0, "/var/run/app/");
        char dir[160], name[96];
        app_dir(dir, sizeof(dir));
        plant(&a, dir, 0, 0, name, sizeof(name));
        struct diag_socket s;
        struct cla_error e = {0};
        assert_int_equal(diag_socket_find(&a.t, NULL, &s, &e), 0);
        assert_int_equal(s.state, SOCKET_FOUND);
        assert_string_equal(s.name, name);
        int fd = diag_socket_open(&a.t, &s, &e);
        if (fd < 0)
            fail_msg("diag_socket_open: %s", e.msg);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISSOCK(st.st_mode));
        close(fd);

        /* A cache entry made for that TMPDIR answers the same. */
        struct diag_socket_cache *c = diag_socket_cache_new();
        assert_int_equal(diag_socket_find(&a.t, c, &s, &e), 0);
        assert_int_equal(s.state, SOCKET_FOUND);
        diag_socket_cache_free(c);
        app_close(&a);
        empty_app_dir();
    }
    rootfs_force_fallback(false);
}

/* A link whose text is a directory of OURS holding a socket named for the process: resolved in
 * the process's root, where that path does not exist, never in ours. */
static void test_tmpdir_link_stays_in_root(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot");
    sh("ln -sfn '%s/host' '%s/var/out'", base, root);
    for (int fallback = 0; fallback < 2; fallback++) {
        rootfs_force_fallback(fallback);
        struct app a;
        app_start(&a, 0, "/var/out/");
        char dir[160], name[96];
        snprintf(dir, sizeof(dir), "%s/host", base);
        plant(&a, dir, 0, 0, name, sizeof(name));
        struct diag_socket s;
        struct cla_error e = {0};
        assert_int_equal(diag_socket_find(&a.t, NULL, &s, &e), 0);
        assert_int_equal(s.state, SOCKET_DIR_ERROR);
        assert_int_equal(s.dir_errno, ENOENT);
        struct diag_socket by_name = {.state = SOCKET_FOUND};
        snprintf(by_name.name, sizeof(by_name.name), "%s", name);
        assert_int_equal(diag_socket_open(&a.t, &by_name, &e), -ENOENT);
        app_close(&a);
        empty_app_dir();
    }
    rootfs_force_fallback(false);
    sh("rm -f '%s/var/out'", root);
}

/* Another user's socket under a root process's exact name: listed as foreign, and the open
 * refuses it naming both uids. The process's own socket, even unkeyed, is chosen over it. */
static void test_foreign_socket_refused(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot, chown");
    struct app a;
    app_start(&a, 0, "/var/run/app/");
    char dir[160], name[96], own[96];
    app_dir(dir, sizeof(dir));
    plant(&a, dir, 0, 1000, name, sizeof(name));
    struct diag_socket s;
    struct cla_error e = {0};
    assert_foreign(&a, 1000, &s, &e);
    assert_non_null(strstr(e.msg, "runs as uid 0"));
    assert_non_null(strstr(e.msg, name));

    plant(&a, dir, 7, 0, own, sizeof(own));
    assert_int_equal(diag_socket_find(&a.t, NULL, &s, &e), 0);
    assert_int_equal(s.state, SOCKET_FOUND_UNKEYED);
    assert_string_equal(s.name, own);
    app_close(&a);
    empty_app_dir();
}

/* A process of uid 1000: root's socket under its name is not its own; its own uid's is. */
static void test_root_socket_for_user_refused(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot, setuid, chown");
    struct app a;
    app_start(&a, 1000, "/var/run/app/");
    char dir[160], name[96], path[300];
    app_dir(dir, sizeof(dir));
    plant(&a, dir, 0, 0, name, sizeof(name));
    struct diag_socket s;
    struct cla_error e = {0};
    assert_foreign(&a, 0, &s, &e);

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(chown(path, 1000, 1000), 0);
    assert_int_equal(diag_socket_find(&a.t, NULL, &s, &e), 0);
    assert_int_equal(s.state, SOCKET_FOUND);
    int fd = diag_socket_open(&a.t, &s, &e);
    assert_true(fd >= 0);
    close(fd);

    /* The owner is read from the inode opened, not from the listing: a name that changes hands
     * after it was listed is refused. */
    assert_int_equal(chown(path, 2000, 2000), 0);
    assert_int_equal(diag_socket_open(&a.t, &s, &e), -EPERM);
    assert_non_null(strstr(e.msg, "belongs to uid 2000"));
    app_close(&a);
    empty_app_dir();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_key_match_beats_newer),
        cmocka_unit_test(test_newest_when_no_key_matches),
        cmocka_unit_test(test_not_a_socket),
        cmocka_unit_test(test_unkeyed_detail),
        cmocka_unit_test(test_foreign_owner),
        cmocka_unit_test(test_own_beats_foreign),
        cmocka_unit_test(test_tmpdir_through_link),
        cmocka_unit_test(test_tmpdir_link_stays_in_root),
        cmocka_unit_test(test_foreign_socket_refused),
        cmocka_unit_test(test_root_socket_for_user_refused),
    };
    return cmocka_run_group_tests(tests, fixture_up, fixture_down);
}
