/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files the operator names for clrattach to write (lib/base/opfile.c: --termination-log,
 * --ready-file). What can be planted under the name is refused and left as it was: a symbolic
 * link (its target never emptied), a hard link, a FIFO (at once, with or without a reader), a
 * socket, a device, a directory. A regular file is opened in blocking mode and emptied only
 * after those checks; a new one is created.
 */
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
#include <sys/un.h>
#include <unistd.h>

#include "guards.h"
#include "shell.h"

#include "base/opfile.h"
#include "base/util.h"

static char base[64];

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-opfile-XXXXXX");
    assert_non_null(mkdtemp(base));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", base);
    return 0;
}

static const char *at(const char *rel)
{
    static char p[4][128];
    static unsigned k;
    char *out = p[k++ % 4];
    snprintf(out, sizeof(p[0]), "%s/%s", base, rel);
    return out;
}

/* The whole content of `rel` ("" when empty), for comparing before and after. */
static char *content(const char *rel)
{
    _cleanup_close_ int fd = open(at(rel), O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    char *buf;
    size_t len;
    assert_int_equal(util_read_all(fd, 4096, &buf, &len), 0);
    return buf;
}

static int open_w(const char *rel, struct cla_error *e)
{
    return opfile_open_for_write(at(rel), "--log", O_CREAT | O_TRUNC, 0644, e);
}

/* A link to a file only root may write: refused, the file neither emptied nor written; a
 * dangling link is not followed to create what it names either. */
static void test_symlink(void **state)
{
    (void)state;
    struct cla_error e = {0};
    sh("printf 'secret\\n' >%s/secret && chmod 600 %s/secret && ln -s secret %s/link && "
       "ln -s nothing-yet %s/dangling",
       base, base, base, base);
    assert_int_equal(open_w("link", &e), -ELOOP);
    assert_non_null(strstr(e.msg, "--log '"));
    assert_non_null(strstr(e.msg, "/link' is a symbolic link"));
    assert_non_null(strstr(e.hint, "regular file"));
    _cleanup_free_ char *after = content("secret");
    assert_string_equal(after, "secret\n");
    assert_int_equal(open_w("dangling", &e), -ELOOP);
    assert_int_equal(access(at("nothing-yet"), F_OK), -1);
    /* Without an error object the code alone comes back. */
    assert_int_equal(open_w("link", NULL), -ELOOP);
}

/* A second name for a file (where fs.protected_hardlinks is off, anyone may make one): refused
 * before anything is emptied. An open with O_TRUNC would have emptied the file already. */
static void test_hard_link(void **state)
{
    (void)state;
    struct cla_error e = {0};
    sh("printf 'secret\\n' >%s/other && ln %s/other %s/hard", base, base, base);
    assert_int_equal(open_w("hard", &e), -EMLINK);
    assert_non_null(strstr(e.msg, "2 names"));
    _cleanup_free_ char *after = content("other");
    assert_string_equal(after, "secret\n");
}

/* A FIFO is refused at once: without a reader (the open would wait for one for ever) and with
 * one (the open succeeds, the fd's type refuses it). */
static void test_fifo(void **state)
{
    (void)state;
    struct cla_error e = {0};
    volatile int r = 0;
    sh("mkfifo %s/fifo", base);
    BOUNDED(10, r = open_w("fifo", &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "/fifo' is a FIFO, not a regular file"));
    _cleanup_close_ int reader = open(at("fifo"), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(reader >= 0);
    BOUNDED(10, r = open_w("fifo", &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "is a FIFO"));
}

/* A directory, a socket and a device are not written to either. */
static void test_other_types(void **state)
{
    (void)state;
    struct cla_error e = {0};
    sh("mkdir %s/dir", base);
    assert_int_equal(open_w("dir", &e), -EISDIR);
    assert_non_null(strstr(e.msg, "is a directory"));

    _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("sock"));
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(open_w("sock", &e), -ENXIO);
    assert_non_null(strstr(e.msg, "is a socket"));

    assert_int_equal(opfile_open_for_write("/dev/null", "--log", O_TRUNC, 0, &e), -ENXIO);
    assert_non_null(strstr(e.msg, "is a character device"));
}

/* A regular file: opened, emptied, blocking, close-on-exec; kept whole without O_TRUNC; created
 * when absent with O_CREAT, and an error naming the path without it. */
static void test_regular(void **state)
{
    (void)state;
    struct cla_error e = {0};
    sh("printf 'an earlier, longer result\\n' >%s/log", base);
    int fd = opfile_open_for_write(at("log"), "--log", 0, 0, &e);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 26);
    close(fd);

    fd = open_w("log", &e);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(fcntl(fd, F_GETFL) & (O_NONBLOCK | O_ACCMODE), O_WRONLY);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(write(fd, "ok\n", 3), 3);
    close(fd);
    _cleanup_free_ char *after = content("log");
    assert_string_equal(after, "ok\n");

    mode_t old = umask(022);
    fd = open_w("new", &e);
    umask(old);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0644);
    close(fd);

    assert_int_equal(opfile_open_for_write(at("absent"), "--log", O_TRUNC, 0, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "--log '"));
    assert_non_null(strstr(e.msg, "/absent': No such file"));
    assert_int_equal(access(at("absent"), F_OK), -1);
    /* Flags the opener does not know are the caller's mistake, not a file's. */
    assert_int_equal(opfile_open_for_write(at("log"), "--log", O_APPEND, 0, &e), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlink), cmocka_unit_test(test_hard_link),
        cmocka_unit_test(test_fifo),    cmocka_unit_test(test_other_types),
        cmocka_unit_test(test_regular),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
