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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emulation.h"
#include "guards.h"
#include "root.h"
#include "target/rootfs.h"

/* A fake target root with traps:
 *   root/tmp/            a real directory
 *   root/tmp/file        a real file
 *   root/linkdir -> /etc      absolute link (would escape to OUR /etc)
 *   root/reldir  -> tmp       relative link, still inside
 *   root/tmp/evil -> ../../outside/secret   escapes the root by dot-dot
 *   root/tmp/fifo        a FIFO: opening it for reading waits for a writer, forever
 *   root/tmp/null        a character device (/dev/null's numbers)
 *   root/tmp/sock        a listening unix socket
 *   root/tmp/sub/        a directory
 *   root/tmp/tofifo -> fifo   a link to the FIFO, inside the root
 *   outside/secret       must never be reached
 */
static char base[256];
static int rootfd = -1;
static int sockfd = -1;

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
    snprintf(p, sizeof(p), "%s/root/tmp/fifo", base);
    assert_int_equal(mkfifo(p, 0666), 0);
    /* Only root may make a device node; the one check that needs it skips without. */
    snprintf(p, sizeof(p), "%s/root/tmp/null", base);
    if (geteuid() == 0)
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
    snprintf(p, sizeof(p), "%s/root/tmp/sub", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/root/tmp/tofifo", base);
    assert_int_equal(symlink("fifo", p), 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* base is short (/tmp/clrattach-rootfs.XXXXXX): the socket path fits sun_path. */
    int w = snprintf(sa.sun_path, sizeof(sa.sun_path), "%.64s/root/tmp/sock", base);
    assert_true(w > 0 && (size_t)w < sizeof(sa.sun_path) && strlen(base) <= 64);
    sockfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(sockfd >= 0);
    assert_int_equal(bind(sockfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(sockfd, 1), 0);
    snprintf(p, sizeof(p), "%s/root", base);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(rootfd);
    close(sockfd);
    char cmd[600];
    /* Test-only cleanup of our own temporary tree. */
    snprintf(cmd, sizeof(cmd), "%s/root/tmp/new", base);
    unlink(cmd);
    const char *rel[] = {"root/tmp/evil", "root/tmp/file", "root/tmp/fifo", "root/tmp/null",
                         "root/tmp/sock", "root/tmp/sub",  "root/tmp/tofifo", "root/reldir",
                         "root/linkdir",  "root/tmp",      "root",          "outside/secret",
                         "outside",       ""};
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
    int fd = rootfs_open(rootfd, "/tmp/file", ROOTFS_REG, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "tmp//./file", ROOTFS_REG, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "/", ROOTFS_DIR, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/", ROOTFS_DIR, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
}

static void check_traps(void)
{
    struct cla_error e = {0};
    /* An absolute link in a directory position: refused, never resolved against OUR root. The
     * same errno from both strategies, so a refusal reads the same on every kernel. */
    int r = rootfs_open(rootfd, "/linkdir/passwd", ROOTFS_REG, O_RDONLY, 0, &e);
    assert_int_equal(r, -ELOOP);
    /* Even a link that stays inside is refused: links are never followed. */
    r = rootfs_open(rootfd, "/reldir/file", ROOTFS_REG, O_RDONLY, 0, &e);
    assert_int_equal(r, -ELOOP);
    /* A trailing slash makes the last name a directory position: the link is crossed. */
    assert_int_equal(rootfs_open(rootfd, "/reldir/", ROOTFS_DIR, O_RDONLY, 0, &e), -ELOOP);
    assert_int_equal(rootfs_open(rootfd, "/reldir", ROOTFS_DIR, O_PATH, 0, &e), -ENOTDIR);
    assert_int_equal(rootfs_open(rootfd, "/tmp/file/", ROOTFS_REG, O_RDONLY, 0, &e), -ENOTDIR);
    /* A link as the last component. */
    r = rootfs_open(rootfd, "/tmp/evil", ROOTFS_REG, O_RDONLY, 0, &e);
    assert_int_equal(r, -ELOOP);
    /* O_CREAT through a planted link must not create or open its target. */
    r = rootfs_open(rootfd, "/tmp/evil", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, 0644, &e);
    assert_true(r == -EEXIST || r == -ELOOP);
    r = rootfs_open(rootfd, "/linkdir/x", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, 0644, &e);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    /* Dot-dot is refused outright. */
    assert_int_equal(rootfs_open(rootfd, "/tmp/../../outside/secret", ROOTFS_REG, O_RDONLY, 0, &e), -EINVAL);
    assert_int_equal(rootfs_open(rootfd, "..", ROOTFS_REG, O_RDONLY, 0, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ".."));
}

static void check_create(void)
{
    struct cla_error e = {0};
    int fd = rootfs_open(rootfd, "/tmp/new", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, 0600, &e);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rootfs_open(rootfd, "/tmp/new", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, 0600, &e),
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
    rootfs_force_fallback(true);
    int fd = rootfs_open(rootfd, "/tmp/file", ROOTFS_REG, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
    assert_false(rootfs_last_used_openat2());
    rootfs_force_fallback(false);
    fd = rootfs_open(rootfd, "/tmp/file", ROOTFS_REG, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
    /* This kernel has openat2 (5.6+): the kernel path is the one normally taken. */
    if (!emulation_lacks(SYS_openat2, "openat2", "test_strategy_used: the openat2 path"))
        assert_true(rootfs_last_used_openat2());
}

static void test_too_long(void **state)
{
    (void)state;
    static char path[5000];
    memset(path, 'a', sizeof(path) - 1);
    struct cla_error e = {0};
    assert_int_equal(rootfs_open(rootfd, path, ROOTFS_REG, O_RDONLY, 0, &e), -ENAMETOOLONG);
}

/* Refused at once (a FIFO would block an open for reading forever), with the documented code and
 * a message naming what was found. */
static void expect_refused(const char *path, enum rootfs_type want, int flags, int code,
                           const char *found)
{
    struct cla_error e = {0};
    volatile int r = 0;
    BOUNDED(5, r = rootfs_open(rootfd, path, want, flags, 0600, &e));
    if (r >= 0) {
        close(r);
        fail_msg("'%s' was opened (type %d, flags 0%o)", path, (int)want, (unsigned)flags);
    }
    if (r != code)
        fail_msg("'%s': %d, want %d: %s", path, (int)r, code, e.msg);
    if (found && !strstr(e.msg, found))
        fail_msg("'%s': the message does not name '%s': %s", path, found, e.msg);
}

static void check_types(void)
{
    expect_refused("/tmp/fifo", ROOTFS_REG, O_RDONLY, -ENXIO, "is a FIFO, not a regular file");
    expect_refused("/tmp/fifo", ROOTFS_REG, O_WRONLY, -ENXIO, "FIFO");
    expect_refused("/tmp/null", ROOTFS_REG, O_RDONLY, -ENXIO, "is a character device");
    expect_refused("/tmp/sock", ROOTFS_REG, O_RDONLY, -ENXIO, "is a socket");
    expect_refused("/tmp/sub", ROOTFS_REG, O_RDONLY, -EISDIR, "is a directory");
    expect_refused("/tmp/tofifo", ROOTFS_REG, O_RDONLY, -ELOOP, "is a symbolic link");
    expect_refused("/tmp/fifo", ROOTFS_DIR, O_RDONLY, -ENOTDIR, "is a FIFO, not a directory");
    expect_refused("/tmp/file", ROOTFS_DIR, O_RDONLY, -ENOTDIR, "is a regular file");
    expect_refused("/tmp/tofifo", ROOTFS_DIR, O_PATH, -ENOTDIR, "symbolic link");
    expect_refused("/tmp/fifo", ROOTFS_SOCK, O_PATH, -ENOTSOCK, "is a FIFO, not a socket");
    expect_refused("/tmp/file", ROOTFS_SOCK, O_PATH, -ENOTSOCK, "regular file");
    /* As a path component: never crossed, never opened. */
    expect_refused("/tmp/fifo/x", ROOTFS_REG, O_RDONLY, -ENOTDIR, NULL);
    expect_refused("/tmp/null/x", ROOTFS_REG, O_RDONLY, -ENOTDIR, NULL);
    expect_refused("/tmp/sock/x", ROOTFS_SOCK, O_PATH, -ENOTDIR, NULL);
    expect_refused("/tmp/fifo/x", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, -ENOTDIR, NULL);
    /* A trailing slash asks to follow: the kernel says ELOOP, the walk finds the link. */
    struct cla_error e = {0};
    int r = rootfs_open(rootfd, "/tmp/tofifo/", ROOTFS_DIR, O_RDONLY, 0, &e);
    assert_true(r == -ELOOP || r == -ENOTDIR);
    /* Creation never opens what already holds the name. */
    expect_refused("/tmp/fifo", ROOTFS_REG, O_WRONLY | O_CREAT | O_EXCL, -EEXIST, NULL);
    expect_refused("/tmp/null", ROOTFS_REG, O_RDWR | O_CREAT | O_EXCL, -EEXIST, NULL);
    /* Misuse is refused rather than guessed at. */
    expect_refused("/tmp/file", ROOTFS_REG, O_WRONLY | O_CREAT, -EINVAL, NULL);
    expect_refused("/tmp/x", ROOTFS_DIR, O_RDONLY | O_CREAT | O_EXCL, -EINVAL, NULL);
    expect_refused("/tmp/sock", ROOTFS_SOCK, O_RDONLY, -EINVAL, NULL);
    expect_refused("/tmp/file", ROOTFS_ANY, O_RDONLY, -EINVAL, NULL);
    expect_refused("/tmp/file", ROOTFS_REG, O_PATH | O_RDWR, -EINVAL, NULL);
}

/* What comes back: O_PATH pins for sockets and ANY, real opens (non-blocking, close-on-exec)
 * of the pinned inode for files and directories. */
static void check_pins(void)
{
    struct stat st;
    int fd = rootfs_open(rootfd, "/tmp/sock", ROOTFS_SOCK, O_PATH, 0, NULL);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_true(fcntl(fd, F_GETFL) & O_PATH);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/fifo", ROOTFS_ANY, O_PATH, 0, NULL);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    close(fd);
    /* ANY never follows: the link itself. */
    fd = rootfs_open(rootfd, "/tmp/tofifo", ROOTFS_ANY, O_PATH, 0, NULL);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/file", ROOTFS_REG, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    int fl = fcntl(fd, F_GETFL);
    assert_int_equal(fl & (O_ACCMODE | O_PATH), O_RDONLY);
    assert_true(fl & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char c;
    assert_int_equal(read(fd, &c, 1), 0);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/file", ROOTFS_REG, O_PATH, 0, NULL);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFL) & O_PATH);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/sub", ROOTFS_DIR, O_RDONLY, 0, NULL);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFL) & (O_ACCMODE | O_PATH), O_RDONLY);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    int sub = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(sub >= 0);
    close(sub);
    close(fd);
    fd = rootfs_open(rootfd, "/tmp/new", ROOTFS_REG, O_RDWR | O_CREAT | O_EXCL, 0600, NULL);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    char p[512];
    snprintf(p, sizeof(p), "%s/root/tmp/new", base);
    assert_int_equal(unlink(p), 0);
}

static void test_types(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a character device made with mknod()");
    both(check_types);
}

static void test_pins(void **state)
{
    (void)state;
    both(check_pins);
}

/* Links inside the root are followed by rootfs_open_contained(), but the type is still checked
 * on what they lead to: a link to a FIFO is refused without blocking. */
static void check_contained(void)
{
    struct cla_error e = {0};
    volatile int r = 0;
    BOUNDED(5, r = rootfs_open_contained(rootfd, "/tmp/tofifo", ROOTFS_REG, O_RDONLY, &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "FIFO"));
    int fd = rootfs_open_contained(rootfd, "/reldir/file", ROOTFS_REG, O_RDONLY, &e);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    close(fd);
    assert_int_equal(rootfs_open_contained(rootfd, "/tmp/sub", ROOTFS_REG, O_RDONLY, &e),
                     -EISDIR);
}

static void test_contained(void **state)
{
    (void)state;
    both(check_contained);
}

/* A kubelet-like projected volume and link traps around it, in a root of its own:
 *   sa/..2026_11_23/{token,ca.crt}   the files
 *   sa/..data -> ..2026_11_23        sa/token -> ..data/token (the kubelet's two hops)
 *   sa/abs -> /sa/..data/token       absolute, resolved from the root
 *   sa/up -> ../sa/token             ".." that stays inside
 *   sa/escape -> ../../../out        ".." above the root
 *   sa/absout -> /../out             absolute, then above the root
 *   sa/outside -> <real path of out> absolute path of OUR tree: must resolve inside the root
 *   sa/loop1 -> loop2, loop2 -> loop1
 *   sa/self -> /proc/self/root       no /proc in this root: nothing there
 *   sa/chain -> c1, c1 -> c2 ... c40 -> token: 41 links in all
 *   out                              beside the root: must never be reached
 */
static char sabase[256];
static int saroot = -1;

static void sa_link(const char *target, const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/root/sa/%s", sabase, name);
    assert_int_equal(symlink(target, p), 0);
}

static void sa_setup(void)
{
    snprintf(sabase, sizeof(sabase), "/tmp/clrattach-sa.XXXXXX");
    assert_non_null(mkdtemp(sabase));
    char p[512];
    const char *dirs[] = {"root", "root/sa", "root/sa/..2026_11_23"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", sabase, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    const char *files[] = {"root/sa/..2026_11_23/token", "root/sa/..2026_11_23/ca.crt", "out"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", sabase, files[i]);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
    }
    sa_link("..2026_11_23", "..data");
    sa_link("..data/token", "token");
    sa_link("..data/ca.crt", "ca.crt");
    sa_link("/sa/..data/token", "abs");
    sa_link("../sa/token", "up");
    sa_link("../../../out", "escape");
    sa_link("/../out", "absout");
    snprintf(p, sizeof(p), "%s/out", sabase);
    sa_link(p, "outside");
    sa_link("loop2", "loop1");
    sa_link("loop1", "loop2");
    sa_link("/proc/self/root", "self");
    sa_link("c1", "chain");
    for (int i = 1; i <= 40; i++) {
        char name[16], target[16];
        snprintf(name, sizeof(name), "c%d", i);
        snprintf(target, sizeof(target), i == 40 ? "token" : "c%d", i + 1);
        sa_link(target, name);
    }
    snprintf(p, sizeof(p), "%s/root", sabase);
    saroot = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(saroot >= 0);
}

static void sa_teardown(void)
{
    close(saroot);
    char p[512];
    /* Test-only cleanup of our own temporary tree: links first, then files, then dirs. */
    const char *names[] = {"..data", "token", "ca.crt", "abs",   "up",    "escape",
                           "absout", "outside", "loop1", "loop2", "self", "chain"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/root/sa/%s", sabase, names[i]);
        unlink(p);
    }
    for (int i = 1; i <= 40; i++) {
        snprintf(p, sizeof(p), "%s/root/sa/c%d", sabase, i);
        unlink(p);
    }
    const char *rest[] = {"root/sa/..2026_11_23/token", "root/sa/..2026_11_23/ca.crt", "out",
                          "root/sa/..2026_11_23",       "root/sa",                     "root",
                          ""};
    for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", sabase, rest[i]);
        if (remove(p) < 0 && errno != ENOENT)
            fprintf(stderr, "cleanup %s: %s\n", p, strerror(errno));
    }
}

/* Opens `name` in the projected volume; checks it is the token file when `want_token`. */
static int sa_open(const char *name, struct cla_error *e)
{
    char path[64];
    snprintf(path, sizeof(path), "/sa/%s", name);
    return rootfs_open_contained(saroot, path, ROOTFS_REG, O_RDONLY, e);
}

static void sa_expect_token(const char *name)
{
    struct cla_error e = {0};
    int fd = sa_open(name, &e);
    if (fd < 0)
        fail_msg("%s: %d %s", name, fd, e.msg);
    struct stat st, want;
    char p[512];
    snprintf(p, sizeof(p), "%s/root/sa/..2026_11_23/token", sabase);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(stat(p, &want), 0);
    assert_true(st.st_ino == want.st_ino && st.st_dev == want.st_dev);
    close(fd);
}

static void check_sa_links(void)
{
    struct cla_error e = {0};
    int fd;
    sa_expect_token("token");
    sa_expect_token("abs");
    sa_expect_token("up");
    sa_expect_token("..data/token");
    assert_int_equal(sa_open("token/", &e), -ENOTDIR);
    fd = rootfs_open_contained(saroot, "/sa/..data/", ROOTFS_DIR, O_RDONLY, &e);
    assert_true(fd >= 0);
    close(fd);
    fd = sa_open("ca.crt", &e);
    assert_true(fd >= 0);
    close(fd);

    /* Every trap: refused, and never the file beside the root. openat2 clamps ".." at the
     * root (ENOENT: no /out inside); the walk refuses it (EXDEV). Either way nothing opens. */
    const char *traps[] = {"escape", "absout", "outside", "loop1", "self", "chain"};
    for (size_t i = 0; i < sizeof(traps) / sizeof(traps[0]); i++) {
        err_clear(&e);
        fd = sa_open(traps[i], &e);
        if (fd >= 0)
            fail_msg("%s was opened (%s)", traps[i],
                     rootfs_last_used_openat2() ? "openat2" : "walk");
        assert_true(fd == -ENOENT || fd == -EXDEV || fd == -ELOOP || fd == -ENOTDIR);
    }
    assert_int_equal(sa_open("loop1", &e), -ELOOP);
    assert_int_equal(sa_open("chain", &e), -ELOOP);
    assert_int_equal(sa_open("outside", &e), -ENOENT);

    /* Beneath sa/: relative links that stay below it are followed; an absolute link or one
     * climbing above it is EXDEV, whichever strategy. */
    int sadir = rootfs_open(saroot, "sa", ROOTFS_DIR, O_PATH, 0, &e);
    assert_true(sadir >= 0);
    fd = rootfs_open_beneath(sadir, "token", ROOTFS_REG, O_RDONLY, &e);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rootfs_open_beneath(sadir, "abs", ROOTFS_REG, O_RDONLY, &e), -EXDEV);
    assert_int_equal(rootfs_open_beneath(sadir, "up", ROOTFS_REG, O_RDONLY, &e), -EXDEV);
    assert_int_equal(rootfs_open_beneath(sadir, "escape", ROOTFS_REG, O_RDONLY, &e), -EXDEV);
    assert_int_equal(rootfs_open_beneath(sadir, "loop1", ROOTFS_REG, O_RDONLY, &e), -ELOOP);
    close(sadir);
    if (!rootfs_last_used_openat2()) {
        assert_int_equal(sa_open("escape", &e), -EXDEV);
        assert_non_null(strstr(e.msg, "out of the root"));
        assert_int_equal(sa_open("chain", &e), -ELOOP);
        assert_non_null(strstr(e.msg, "40"));
    }
}

/* With our own "/" as the root, a real procfs: /proc/self/root is a magic link, refused by both
 * (openat2 by RESOLVE_NO_MAGICLINKS, the walk by the link's filesystem). */
static void check_magic(void)
{
    int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(slash >= 0);
    struct cla_error e = {0};
    int fd = rootfs_open_contained(slash, "/proc/self/root/etc/passwd", ROOTFS_REG, O_RDONLY, &e);
    assert_int_equal(fd, -ELOOP);
    fd = rootfs_open_contained(slash, "/proc/self/exe", ROOTFS_REG, O_RDONLY, &e);
    assert_int_equal(fd, -ELOOP);
    close(slash);
}

static void test_contained_links(void **state)
{
    (void)state;
    sa_setup();
    if (!emulation_lacks(SYS_openat2, "openat2", "test_contained_links: the openat2 path")) {
        rootfs_force_fallback(false);
        check_sa_links();
        assert_true(rootfs_last_used_openat2());
    }
    rootfs_force_fallback(true);
    check_sa_links();
    assert_false(rootfs_last_used_openat2());
    rootfs_force_fallback(false);
    sa_teardown();
    both(check_magic);
}

/* In a session leader without a terminal (a container's entrypoint): whatever is asked of a pty
 * slave under a name, it never becomes the controlling terminal. Returns 0 when that held. */
static int pty_scenario(int ptsdir, const char *name)
{
    alarm(10);
    if (setsid() < 0 || own_tty_nr() != 0)
        return 10;
    for (int fallback = 0; fallback < 2; fallback++) {
        rootfs_force_fallback(fallback);
        struct cla_error e = {0};
        const int flags[] = {O_RDONLY, O_WRONLY, O_RDWR};
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
            int r = rootfs_open(ptsdir, name, ROOTFS_REG, flags[i], 0, &e);
            if (r != -ENXIO || !strstr(e.msg, "character device")) {
                fprintf(stderr, "pty as a file: %d: %s\n", r, e.msg);
                return 20;
            }
        }
        int fd = rootfs_open(ptsdir, name, ROOTFS_ANY, O_PATH, 0, &e);
        if (fd < 0)
            return 21;
        close(fd);
        if (own_tty_nr() != 0) {
            fprintf(stderr, "the pty became our controlling terminal\n");
            return 22;
        }
    }
    return 0;
}

static void test_pty_never_ctty(void **state)
{
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    const char *slave = ptsname(master);
    assert_non_null(slave);
    const char *name = strrchr(slave, '/') + 1;
    int ptsdir = open("/dev/pts", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(ptsdir >= 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(pty_scenario(ptsdir, name));
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    close(ptsdir);
    close(master);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("pty scenario: %s %d", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),         cmocka_unit_test(test_traps),
        cmocka_unit_test(test_create),        cmocka_unit_test(test_strategy_used),
        cmocka_unit_test(test_too_long),      cmocka_unit_test(test_types),
        cmocka_unit_test(test_pins),          cmocka_unit_test(test_contained),
        cmocka_unit_test(test_contained_links),
        cmocka_unit_test(test_pty_never_ctty),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
