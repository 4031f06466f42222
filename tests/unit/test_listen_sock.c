/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/bounds.h"
#include "base/util.h"
#include "runtime/advert.h"
#include "runtime/listen_sock.h"

static char dir[64];
static char path[96];

static const struct listen_sock_opts opts600 = {.mode = 0600, .uid = (uid_t)-1, .gid = (gid_t)-1};

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/clrattach-listen-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/port.sock", dir);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* A connected client of the socket at `path`; non-blocking, so that a full backlog gives
 * -EAGAIN rather than a wait. */
static int client(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -errno;
    }
    return fd;
}

static void advertise(int fd, uint8_t cookie0, uint64_t pid)
{
    struct advert a = {.pid = pid};
    uint8_t buf[ADVERT_SIZE];
    memset(a.cookie.b, 0x5a, sizeof(a.cookie.b));
    a.cookie.b[0] = cookie0;
    assert_int_equal(advert_encode(&a, buf, sizeof(buf)), ADVERT_SIZE);
    assert_int_equal(write(fd, buf, sizeof(buf)), ADVERT_SIZE);
}

static void test_binds_with_mode(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct stat st;
    (void)state;

    const struct listen_sock_opts o660 = {.mode = 0660, .uid = (uid_t)-1, .gid = (gid_t)-1};
    mode_t old = umask(022);
    assert_int_equal(listen_sock_open(path, &o660, &ls, &e), 0);
    umask(old);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    /* Exactly the mode asked for, whatever our umask (022 would have taken g+w away). */
    assert_int_equal(st.st_mode & 07777, 0660);
    assert_int_equal(listen_sock_check(ls, &e), 0);
    listen_sock_close(ls);
    /* Our socket is removed on close. */
    assert_int_equal(lstat(path, &st), -1);
}

static void test_refuses_what_is_not_ours(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct stat st;
    (void)state;

    /* A regular file, a symlink (even to a stale socket of ours), a directory: left alone. */
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "regular file"));
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    unlink(path);

    char target[96];
    snprintf(target, sizeof(target), "%s/elsewhere.sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", target);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(s); /* stale, ours */
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), -EEXIST);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(target, &st), 0); /* the link's target is untouched too */
    unlink(path);

    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), -EEXIST);
    rmdir(path);

    /* Another uid's stale socket (as root: chown it away). */
    if (geteuid() == 0) {
        s = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(s);
        assert_int_equal(chown(path, 4242, 4242), 0);
        assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), -EEXIST);
        assert_non_null(strstr(e.msg, "uid 4242"));
        assert_int_equal(lstat(path, &st), 0);
        unlink(path);
    }
}

static void test_replaces_only_stale(void **state)
{
    struct listen_sock *ls = NULL, *ls2 = NULL;
    struct cla_error e = {0};
    (void)state;

    /* A live listener (another clrattach) is refused... */
    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), 0);
    assert_int_equal(listen_sock_open(path, &opts600, &ls2, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "live"));
    /* ...and the first one still works. */
    int c = client();
    assert_true(c >= 0);
    close(c);

    /* A stale one of ours (the listener died without cleaning up) is replaced. */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char other[96];
    snprintf(other, sizeof(other), "%s/stale.sock", dir);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", other);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(s);
    assert_int_equal(listen_sock_open(other, &opts600, &ls2, &e), 0);
    c = -1;
    char save[96];
    memcpy(save, path, sizeof(save));
    snprintf(path, sizeof(path), "%s", other);
    c = client();
    assert_true(c >= 0);
    close(c);
    memcpy(path, save, sizeof(save));
    listen_sock_close(ls2);
    listen_sock_close(ls);
}

static void test_advertised_connection_handed_over(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct listen_conn got[4];
    (void)state;

    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), 0);
    int c = client();
    assert_true(c >= 0);
    advertise(c, 0x11, 321);
    int64_t now = util_now_ms();
    assert_int_equal(listen_sock_step(ls, now, got, 4, &e), 1);
    assert_int_equal(got[0].adv.pid, 321);
    assert_int_equal(got[0].adv.cookie.b[0], 0x11);
    assert_int_equal(got[0].peer_uid, geteuid());
    assert_int_equal(got[0].peer_pid, getpid());
    /* The connection is the caller's now, and usable. */
    assert_int_equal(write(got[0].fd, "x", 1), 1);
    char b;
    assert_int_equal(read(c, &b, 1), 1);
    close(got[0].fd);
    close(c);
    assert_int_equal(listen_sock_stats(ls)->advertised, 1);
    listen_sock_close(ls);
}

static void test_hostile_peers_bounded(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct listen_conn got[4];
    (void)state;

    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), 0);
    int64_t now = util_now_ms();

    /* Garbage: 34 bytes that are no advertisement; more than 34 bytes; a zero cookie. */
    int g1 = client(), g2 = client(), g3 = client();
    assert_int_equal(write(g1, "0123456789012345678901234567890123", 34), 34);
    advertise(g2, 1, 5);
    assert_int_equal(write(g2, "!", 1), 1);
    struct advert z = {.pid = 5};
    uint8_t zb[ADVERT_SIZE];
    advert_encode(&z, zb, sizeof(zb));
    assert_int_equal(write(g3, zb, sizeof(zb)), ADVERT_SIZE);
    /* Silent and half-sent: kept until the deadline. */
    int s1 = client(), s2 = client();
    assert_int_equal(write(s2, "ADVR_V1", 7), 7);
    assert_int_equal(listen_sock_step(ls, now, got, 4, &e), 0);
    assert_int_equal(listen_sock_stats(ls)->bad, 3);
    struct pollfd fds[1 + LISTEN_PENDING_MAX];
    assert_int_equal(listen_sock_pollfds(ls, fds, 1 + LISTEN_PENDING_MAX), 3);
    assert_true(listen_sock_next_deadline(ls) <= now + LISTEN_ADVERT_MS);
    /* The bad ones see their connection closed. */
    char b;
    assert_int_equal(read(g1, &b, 1), 0);
    /* Past the deadline the slow ones go. */
    assert_int_equal(listen_sock_step(ls, now + LISTEN_ADVERT_MS, got, 4, &e), 0);
    assert_int_equal(listen_sock_stats(ls)->slow, 2);
    assert_int_equal(listen_sock_next_deadline(ls), INT64_MAX);
    close(g1), close(g2), close(g3), close(s1), close(s2);

    /* A flood: 200 silent connections cost at most LISTEN_PENDING_MAX waiting slots, and a
     * runtime connecting behind them is served. */
    int flood[200];
    int nflood = 0;
    for (int i = 0; i < 200; i++) {
        flood[nflood] = client();
        if (flood[nflood] < 0) { /* the backlog is full: accept some and go on */
            listen_sock_step(ls, now, got, 4, &e);
            i--;
            continue;
        }
        nflood++;
    }
    for (int i = 0; i < 20; i++)
        assert_int_equal(listen_sock_step(ls, now, got, 4, &e), 0);
    assert_true(listen_sock_pollfds(ls, fds, 1 + LISTEN_PENDING_MAX) <= 1 + LISTEN_PENDING_MAX);
    assert_true(listen_sock_stats(ls)->evicted >= 200 - LISTEN_PENDING_MAX);
    int rt = client();
    assert_true(rt >= 0);
    advertise(rt, 0x77, 9);
    assert_int_equal(listen_sock_step(ls, now, got, 4, &e), 1);
    assert_int_equal(got[0].adv.cookie.b[0], 0x77);
    close(got[0].fd);
    close(rt);
    for (int i = 0; i < nflood; i++)
        close(flood[i]);
    listen_sock_close(ls);
}

/* --socket-owner: the socket is given away, and still ours to remove on close; a dead one of
 * that owner is replaced on the next start (a clrattach killed before its cleanup). */
static void test_socket_owner(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct stat st;
    const struct listen_sock_opts given = {.mode = 0600, .uid = 4242, .gid = 4243};
    (void)state;

    if (geteuid() != 0)
        skip();
    assert_int_equal(listen_sock_open(path, &given, &ls, &e), 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_uid, 4242);
    assert_int_equal(st.st_gid, 4243);
    assert_int_equal(listen_sock_check(ls, &e), 0);
    listen_sock_close(ls);
    assert_int_equal(lstat(path, &st), -1);

    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(s);
    assert_int_equal(chown(path, 4242, 4242), 0);
    assert_int_equal(listen_sock_open(path, &given, &ls, &e), 0);
    listen_sock_close(ls);
}

static void test_check_sees_replacement(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    struct stat st;
    (void)state;

    assert_int_equal(listen_sock_open(path, &opts600, &ls, &e), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    assert_int_equal(listen_sock_check(ls, &e), -ESTALE);
    assert_non_null(strstr(e.msg, "symbolic link"));
    /* Closing leaves the app's link alone. */
    listen_sock_close(ls);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    unlink(path);
}

static void test_path_forms(void **state)
{
    struct listen_sock *ls = NULL;
    struct cla_error e = {0};
    char p[300];
    (void)state;

    assert_int_equal(listen_sock_open("/tmp/", &opts600, &ls, &e), -EINVAL);
    snprintf(p, sizeof(p), "%s/..", dir);
    assert_int_equal(listen_sock_open(p, &opts600, &ls, &e), -EINVAL);
    snprintf(p, sizeof(p), "%s/nodir/x.sock", dir);
    assert_int_equal(listen_sock_open(p, &opts600, &ls, &e), -ENOENT);
    /* A path longer than sun_path allows: refused before anything is opened. */
    memset(p, 'a', sizeof(p));
    int n = snprintf(p, sizeof(p), "%s/", dir);
    p[n] = 'a';
    p[n + 120] = '\0';
    assert_int_equal(listen_sock_open(p, &opts600, &ls, &e), -ENAMETOOLONG);
    assert_non_null(strstr(e.msg, "sun_path"));
    /* One that fits, whose name is too long with the /proc/self/fd/N/ prefix (refused before
     * anything is made at it). */
    memset(p, 'b', sizeof(p));
    p[0] = '/';
    p[LISTEN_PATH_MAX] = '\0';
    e = (struct cla_error){0};
    assert_int_equal(listen_sock_open(p, &opts600, &ls, &e), -ENAMETOOLONG);
    assert_non_null(strstr(e.msg, "/proc/self/fd/N/"));
}

/* The limit is sun_path's: 107 bytes fit, 108 do not, and the refusal says so. */
static void test_path_fits(void **state)
{
    struct cla_error e = {0};
    char p[200];
    (void)state;

    memset(p, 'x', sizeof(p));
    p[0] = '/';
    p[LISTEN_PATH_MAX] = '\0';
    assert_int_equal(listen_sock_path_fits(p, "--listen", &e), 0);
    p[LISTEN_PATH_MAX] = 'x';
    p[LISTEN_PATH_MAX + 1] = '\0';
    assert_int_equal(listen_sock_path_fits(p, "--listen", &e), -ENAMETOOLONG);
    assert_non_null(strstr(e.msg, "--listen '/xxx"));
    assert_non_null(strstr(e.msg, "is 108 bytes, over the 107"));
    assert_non_null(strstr(e.hint, "shorter path"));
    assert_int_equal(listen_sock_path_fits("", "--listen", &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_binds_with_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_what_is_not_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaces_only_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advertised_connection_handed_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_peers_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_sees_replacement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_forms, setup, teardown),
        cmocka_unit_test(test_path_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
