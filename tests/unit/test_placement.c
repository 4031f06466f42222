/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "placement.h"

static const struct proc_mount mounts[] = {
    {"/", "overlay", true, false},
    {"/tmp", "tmpfs", false, true},
    {"/var/tmp", "ext4", false, false},
    {"/dev/shm", "tmpfs", false, true},
    {"/scratch", "tmpfs", false, false},
};

static void test_order_and_rejections(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", NULL, mounts, 5, p);
    assert_int_equal(n, 3); /* TMPDIR=/tmp/ and the default /tmp/ are one */
    assert_string_equal(p[0].dir, "/tmp/");
    assert_string_equal(p[0].source, "TMPDIR");
    assert_non_null(strstr(p[0].rejected, "noexec"));
    assert_string_equal(p[1].dir, "/var/tmp/");
    assert_string_equal(p[1].rejected, "");
    assert_string_equal(p[2].dir, "/dev/shm/");
    assert_non_null(strstr(p[2].rejected, "noexec"));
}

static void test_read_only_root(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/app/tmp", NULL, mounts, 5, p);
    assert_int_equal(n, 4);
    assert_string_equal(p[0].dir, "/app/tmp/");
    assert_non_null(strstr(p[0].rejected, "read-only"));
}

static void test_user_dir_only(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", "/scratch", mounts, 5, p);
    assert_int_equal(n, 1);
    assert_string_equal(p[0].dir, "/scratch/");
    assert_string_equal(p[0].source, "--target-dir");
    assert_string_equal(p[0].rejected, "");
    n = placement_candidates("/tmp/", "/tmp/x", mounts, 5, p);
    assert_int_equal(n, 1);
    assert_non_null(strstr(p[0].rejected, "noexec"));
}

static void test_no_mount_table(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", NULL, NULL, 0, p);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(p[i].rejected, "");
    assert_int_equal(placement_candidates("rel", "relative", NULL, 0, p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_rejections),
        cmocka_unit_test(test_read_only_root),
        cmocka_unit_test(test_user_dir_only),
        cmocka_unit_test(test_no_mount_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
