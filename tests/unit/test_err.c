/* SPDX-License-Identifier: Apache-2.0 */
/*
 * err: the one error object. What each setter replaces and keeps, NULL accepted everywhere,
 * errno kept, and messages that stay NUL-terminated within their buffers however long the
 * context chain grows.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"

static void test_set_and_hint(void **state)
{
    (void)state;
    struct cla_error e = {0};
    assert_int_equal(err_set(&e, -EPROTO, "ipc: bad %s of %d", "size", 7), -EPROTO);
    assert_int_equal(e.code, -EPROTO);
    assert_string_equal(e.msg, "ipc: bad size of 7");
    assert_string_equal(e.hint, "");

    assert_int_equal(err_hint(&e, "run as uid %u", 1000u), -EPROTO);
    assert_string_equal(e.hint, "run as uid 1000");
    assert_int_equal(err_hint(&e, "another"), -EPROTO);
    assert_string_equal(e.hint, "another");

    /* A new error replaces the message and clears the earlier hint: it belonged to the old
     * cause. */
    assert_int_equal(err_set(&e, -ENOENT, "gone"), -ENOENT);
    assert_string_equal(e.msg, "gone");
    assert_string_equal(e.hint, "");

    err_clear(&e);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.msg, "");
    assert_string_equal(e.hint, "");
}

static void test_setsys(void **state)
{
    (void)state;
    struct cla_error e = {0};
    assert_int_equal(err_setsys(&e, -ELOOP, "deliver: openat2 '%s'", "tmp/x.so"), -ELOOP);
    char want[CLA_ERR_MSG_MAX];
    snprintf(want, sizeof(want), "deliver: openat2 'tmp/x.so': %s (ELOOP)", strerror(ELOOP));
    assert_string_equal(e.msg, want);

    /* An errno without a symbolic name in the table: only the description. */
    assert_int_equal(err_setsys(&e, -EDOM, "math"), -EDOM);
    snprintf(want, sizeof(want), "math: %s", strerror(EDOM));
    assert_string_equal(e.msg, want);
}

static void test_prefix_chain(void **state)
{
    (void)state;
    struct cla_error e = {0};
    err_set(&e, -EACCES, "open 'token'");
    err_hint(&e, "run as uid 1000");
    assert_int_equal(err_prefix(&e, "service account of pid %d", 42), -EACCES);
    assert_int_equal(err_prefix(&e, "report"), -EACCES);
    assert_string_equal(e.msg, "report: service account of pid 42: open 'token'");
    /* Context on the way up keeps the code and the next step. */
    assert_int_equal(e.code, -EACCES);
    assert_string_equal(e.hint, "run as uid 1000");
}

static void test_long_messages_truncate(void **state)
{
    (void)state;
    struct cla_error e;
    memset(&e, 'Z', sizeof(e));
    char big[2 * CLA_ERR_MSG_MAX];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';

    err_set(&e, -E2BIG, "%s", big);
    assert_int_equal(strlen(e.msg), CLA_ERR_MSG_MAX - 1);
    err_hint(&e, "%s", big);
    assert_int_equal(strlen(e.hint), CLA_ERR_HINT_MAX - 1);
    err_setsys(&e, -E2BIG, "%s", big);
    assert_int_equal(strlen(e.msg), CLA_ERR_MSG_MAX - 1);

    /* A prefix keeps the head's context first; the innermost cause is cut at the end. */
    err_set(&e, -EIO, "inner cause");
    for (int i = 0; i < 100; i++)
        err_prefix(&e, "layer %d", i);
    assert_true(strlen(e.msg) <= CLA_ERR_MSG_MAX - 1);
    assert_true(strncmp(e.msg, "layer 99: layer 98: ", 20) == 0);
    assert_null(strstr(e.msg, "inner cause"));
    assert_int_equal(e.code, -EIO);

    /* A head longer than the whole buffer: still terminated, nothing written past it. */
    err_set(&e, -EIO, "cause");
    err_prefix(&e, "%s", big);
    assert_int_equal(strlen(e.msg), CLA_ERR_MSG_MAX - 1);
    assert_int_equal(e.msg[0], 'a');
}

static void test_null_and_errno(void **state)
{
    (void)state;
    /* Every setter accepts NULL (a caller that wants only the code), and the code survives the
     * usual chain `err_set(e, ...); return err_hint(e, ...);`: a 0 there would read as success. */
    assert_int_equal(err_set(NULL, -EPERM, "x"), -EPERM);
    assert_int_equal(err_prefix(NULL, "x"), -EPERM);
    assert_int_equal(err_hint(NULL, "x"), -EPERM);
    assert_int_equal(err_setsys(NULL, -ENOENT, "x"), -ENOENT);
    assert_int_equal(err_hint(NULL, "x"), -ENOENT);
    err_clear(NULL);

    /* errno survives, so a cleanup path can still report the original cause. */
    struct cla_error e = {0};
    errno = EXDEV;
    err_set(&e, -EPERM, "x");
    err_setsys(&e, -ENOENT, "y");
    err_prefix(&e, "z");
    err_hint(&e, "w");
    assert_int_equal(errno, EXDEV);
}

static void test_errno_names(void **state)
{
    (void)state;
    assert_string_equal(err_errno_name(ELOOP), "ELOOP");
    assert_string_equal(err_errno_name(EPROTO), "EPROTO");
    assert_string_equal(err_errno_name(ETIMEDOUT), "ETIMEDOUT");
    assert_string_equal(err_errno_name(ECONNREFUSED), "ECONNREFUSED");
    assert_null(err_errno_name(0));
    assert_null(err_errno_name(-1));
    assert_null(err_errno_name(EDOM));
    /* Each name is the macro's own spelling: checked against a table built from the macros. */
    static const struct {
        int v;
        const char *n;
    } names[] = {
#define N(x) {x, #x}
        N(EPERM),    N(ENOENT),          N(ESRCH),        N(EINTR),      N(EIO),      N(E2BIG),
        N(EBADF),    N(EAGAIN),          N(ENOMEM),       N(EACCES),     N(EEXIST),   N(EXDEV),
        N(ENOTDIR),  N(EISDIR),          N(EINVAL),       N(EMFILE),     N(ENOSPC),   N(EROFS),
        N(EPIPE),    N(ERANGE),          N(ENAMETOOLONG), N(ENOSYS),     N(EBADMSG),  N(EOVERFLOW),
        N(ENOTSOCK), N(EPROTONOSUPPORT), N(EOPNOTSUPP),   N(ECONNRESET), N(EALREADY), N(ESTALE),
        N(ENODATA),  N(ENOEXEC),         N(ECHILD),       N(EBUSY),      N(ETXTBSY),  N(EFBIG),
        N(ENXIO),
#undef N
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *got = err_errno_name(names[i].v);
        assert_non_null(got);
        assert_string_equal(got, names[i].n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_hint),   cmocka_unit_test(test_setsys),
        cmocka_unit_test(test_prefix_chain),   cmocka_unit_test(test_long_messages_truncate),
        cmocka_unit_test(test_null_and_errno), cmocka_unit_test(test_errno_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
