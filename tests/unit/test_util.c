/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: the decimal parser's bounds, whole-file reads against their cap, writes through a pipe
 * that takes little at a time, and the cleanup and hand-off helpers every module leans on.
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"

static void test_parse_u64(void **state)
{
    uint64_t v = 7;
    (void)state;

    assert_int_equal(util_parse_u64("0", 1, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(util_parse_u64("4096", 4, 4096, &v), 0);
    assert_int_equal(v, 4096);
    /* Only `len` bytes count: the rest of the buffer is not read. */
    assert_int_equal(util_parse_u64("12x", 2, 100, &v), 0);
    assert_int_equal(v, 12);
    assert_int_equal(util_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);

    v = 7;
    assert_int_equal(util_parse_u64("4097", 4, 4096, &v), -ERANGE);
    assert_int_equal(util_parse_u64("18446744073709551616", 20, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(util_parse_u64("99999999999999999999", 20, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(util_parse_u64("000000000000000000001", 21, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64("", 0, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64(NULL, 1, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64("-1", 2, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64("+1", 2, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64(" 1", 2, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64("1 ", 2, 10, &v), -EINVAL);
    assert_int_equal(util_parse_u64("0x1", 3, 10, &v), -EINVAL);
    /* ret_ is never written on failure. */
    assert_int_equal(v, 7);
}

static void test_now_ms_monotonic(void **state)
{
    (void)state;
    int64_t a = util_now_ms();
    usleep(20000);
    int64_t b = util_now_ms();
    assert_true(a > 0);
    assert_true(b - a >= 20);
}

/* A pipe holding `len` bytes of `c`, its writer closed. */
static int pipe_with(size_t len, char c)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    memset(buf, c, len);
    assert_int_equal(util_write_all(p[1], buf, len), 0);
    free(buf);
    close(p[1]);
    return p[0];
}

static void test_read_all(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 99;

    /* Empty: a buffer all the same, NUL-terminated. */
    int fd = pipe_with(0, 'a');
    assert_int_equal(util_read_all(fd, 16, &buf, &len), 0);
    close(fd);
    assert_non_null(buf);
    assert_int_equal(len, 0);
    assert_int_equal(buf[0], '\0');
    free(buf);

    /* Exactly the cap. */
    fd = pipe_with(16, 'b');
    assert_int_equal(util_read_all(fd, 16, &buf, &len), 0);
    close(fd);
    assert_int_equal(len, 16);
    assert_int_equal(strlen(buf), 16);
    assert_int_equal(buf[15], 'b');
    free(buf);

    /* One byte over the cap: refused, nothing handed out. */
    buf = NULL;
    len = 99;
    fd = pipe_with(17, 'c');
    assert_int_equal(util_read_all(fd, 16, &buf, &len), -E2BIG);
    close(fd);
    assert_null(buf);
    assert_int_equal(len, 99);

    /* Larger than the first allocation, across several reallocations. */
    fd = pipe_with(40000, 'd');
    assert_int_equal(util_read_all(fd, 65536, &buf, &len), 0);
    close(fd);
    assert_int_equal(len, 40000);
    assert_int_equal(buf[39999], 'd');
    assert_int_equal(buf[40000], '\0');
    free(buf);

    /* From the current offset, and the read error itself. */
    char path[] = "/tmp/test_util.XXXXXX";
    fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(util_write_all(fd, "headtail", 8), 0);
    assert_int_equal(lseek(fd, 4, SEEK_SET), 4);
    assert_int_equal(util_read_all(fd, 64, &buf, &len), 0);
    assert_string_equal(buf, "tail");
    free(buf);
    close(fd);
    assert_int_equal(util_read_all(fd, 64, &buf, &len), -EBADF);
}

/* A writer faster than its reader: the pipe takes one page at a time while a child drains it
 * slowly, so write() returns short counts that util_write_all() must carry on from. */
static void test_write_all_short_writes(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0);
    const size_t total = 256 * 1024;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(p[1]);
        /* Sums what arrives and exits 0 only for every byte, each in its place. */
        char buf[1000];
        size_t got = 0;
        int bad = 0;
        for (;;) {
            ssize_t n = read(p[0], buf, sizeof(buf));
            if (n <= 0)
                break;
            for (ssize_t i = 0; i < n; i++)
                bad |= buf[i] != (char)((got + (size_t)i) % 251);
            got += (size_t)n;
        }
        _exit(got == total && !bad ? 0 : 1);
    }
    close(p[0]);
    char *buf = malloc(total);
    assert_non_null(buf);
    for (size_t i = 0; i < total; i++)
        buf[i] = (char)(i % 251);
    assert_int_equal(util_write_all(p[1], buf, total), 0);
    free(buf);
    close(p[1]);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* A reader that has gone: EPIPE (SIGPIPE ignored, as clrattach's own sends use
     * MSG_NOSIGNAL). */
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(util_write_all(p[1], "x", 1), -EPIPE);
    signal(SIGPIPE, SIG_DFL);
    close(p[1]);
}

static void test_file_type_name(void **state)
{
    (void)state;
    assert_string_equal(util_file_type_name(S_IFREG | 0644), "regular file");
    assert_string_equal(util_file_type_name(S_IFDIR | 0755), "directory");
    assert_string_equal(util_file_type_name(S_IFLNK | 0777), "symbolic link");
    assert_string_equal(util_file_type_name(S_IFIFO), "FIFO");
    assert_string_equal(util_file_type_name(S_IFSOCK), "socket");
    assert_string_equal(util_file_type_name(S_IFCHR), "character device");
    assert_string_equal(util_file_type_name(S_IFBLK), "block device");
    assert_string_equal(util_file_type_name(0), "file of unknown type");
}

static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

static void test_closep_leaves_minus_one(void **state)
{
    (void)state;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    errno = EXDEV;
    util_closep(&fd);
    assert_int_equal(fd, -1);
    assert_int_equal(errno, EXDEV);
    /* A second call (a close function, then a cleanup) finds nothing to close. */
    util_closep(&fd);
    assert_int_equal(fd, -1);

    /* The number freed may be handed out again at once: the stale copy must not close it. */
    int a = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int stale = a;
    util_closep(&a);
    int b = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_int_equal(b, stale);
    util_closep(&a);
    assert_true(fd_is_open(b));
    close(b);
}

static int scope_fd = -1;

static void open_in_scope(void)
{
    _cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    scope_fd = fd;
}

static int take_in_scope(void)
{
    _cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    return util_take_fd(&fd);
}

static char *take_ptr_in_scope(void)
{
    _cleanup_free_ char *p = strdup("kept");
    assert_non_null(p);
    return util_take_ptr(&p);
}

static void test_cleanup_scopes(void **state)
{
    (void)state;
    open_in_scope();
    assert_true(scope_fd >= 0);
    assert_false(fd_is_open(scope_fd));

    int fd = take_in_scope();
    assert_true(fd_is_open(fd));
    int keep = fd;
    assert_int_equal(util_take_fd(&fd), keep);
    assert_int_equal(fd, -1);
    close(keep);

    /* The taken pointer outlives the scope whose cleanup would have freed it (ASan and valgrind
     * would see a use after free otherwise). */
    char *s = take_ptr_in_scope();
    assert_string_equal(s, "kept");
    free(s);
}

struct pair {
    int a, b;
};

static void test_take_ptr_typed(void **state)
{
    (void)state;
    struct pair *p = malloc(sizeof(*p));
    assert_non_null(p);
    p->a = 1;
    p->b = 2;
    struct pair **pp = &p;
    int calls = 0;
    /* The result has the pointer's own type (a struct's field is reachable without a cast)
     * and the argument is evaluated once. */
    struct pair *q = util_take_ptr((calls++, pp));
    assert_int_equal(calls, 1);
    assert_null(p);
    assert_int_equal(q->b, 2);
    _Static_assert(__builtin_types_compatible_p(__typeof__(util_take_ptr(&q)), struct pair *),
                   "util_take_ptr keeps the type");
    free(q);

    /* errno survives util_freep, even when it frees something. */
    char *s = strdup("x");
    errno = ENOSPC;
    util_freep(&s);
    assert_int_equal(errno, ENOSPC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64),      cmocka_unit_test(test_now_ms_monotonic),
        cmocka_unit_test(test_read_all),       cmocka_unit_test(test_write_all_short_writes),
        cmocka_unit_test(test_file_type_name), cmocka_unit_test(test_closep_leaves_minus_one),
        cmocka_unit_test(test_cleanup_scopes), cmocka_unit_test(test_take_ptr_typed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
