/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "target/diag_socket.h"

static struct diag_socket_entry ent(const char *name, pid_t pid, uint64_t key, int64_t mtime,
                                 bool sock)
{
    struct diag_socket_entry e = {.pid = pid, .key = key, .mtime_ns = mtime, .is_socket = sock};
    strncpy(e.name, name, sizeof(e.name) - 1);
    return e;
}

static void test_absent(void **state)
{
    (void)state;
    struct diag_socket_entry es[] = {ent("dotnet-diagnostic-7-5-socket", 7, 5, 1, true)};
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 1, 8, 5, &s), SOCKET_ABSENT);
    assert_int_equal(s.candidates, 0);
    assert_int_equal(diag_socket_choose(NULL, 0, 8, 5, &s), SOCKET_ABSENT);
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
    assert_int_equal(diag_socket_choose(es, 3, 1, 100, &s), SOCKET_FOUND);
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
    assert_int_equal(diag_socket_choose(es, 3, 1, 77, &s), SOCKET_FOUND_UNKEYED);
    assert_string_equal(s.name, "dotnet-diagnostic-1-30-socket");
    assert_int_equal(s.stale, 2);
}

static void test_not_a_socket(void **state)
{
    (void)state;
    /* A hostile target plants a regular file or FIFO under the socket's exact name. */
    struct diag_socket_entry es[] = {ent("dotnet-diagnostic-1-100-socket", 1, 100, 10, false)};
    struct diag_socket s;
    assert_int_equal(diag_socket_choose(es, 1, 1, 100, &s), SOCKET_NOT_SOCKET);
}

/* Under qemu-user the key is 1-2 ticks past the kernel's start time: explained as such; a key
 * further off is a time namespace or an earlier process's socket. */
static void test_unkeyed_detail(void **state)
{
    (void)state;
    char buf[160];
    diag_socket_unkeyed_detail(1002, 1000, buf, sizeof(buf));
    assert_string_equal(buf, "start time off by 2 ticks: an emulator (qemu-user) or a time namespace");
    diag_socket_unkeyed_detail(999, 1000, buf, sizeof(buf));
    assert_string_equal(buf, "start time off by 1 tick: an emulator (qemu-user) or a time namespace");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_key_match_beats_newer),
        cmocka_unit_test(test_newest_when_no_key_matches),
        cmocka_unit_test(test_not_a_socket),
        cmocka_unit_test(test_unkeyed_detail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
