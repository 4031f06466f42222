/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "deliver/placement.h"

static const struct proc_mount mounts[] = {
    {"/", "overlay", true, false},       {"/tmp", "tmpfs", false, true},
    {"/var/tmp", "ext4", false, false},  {"/dev/shm", "tmpfs", false, true},
    {"/scratch", "tmpfs", false, false},
};

/* What statfs would say of each candidate in a target with the mounts above. */
static void judge_all(struct placement *p, size_t n, const struct proc_mount *table, size_t tn)
{
    for (size_t i = 0; i < n; i++) {
        const struct proc_mount *m = proc_mount_for_path(mounts, 5, p[i].dir);
        placement_judge(&p[i], m->noexec, m->read_only, table, tn);
    }
}

static void test_order_and_rejections(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", NULL, p);
    assert_int_equal(n, 3); /* TMPDIR=/tmp/ and the default /tmp/ are one */
    for (size_t i = 0; i < n; i++)
        assert_string_equal(p[i].rejected, ""); /* nothing judged yet */
    judge_all(p, n, mounts, 5);
    assert_string_equal(p[0].dir, "/tmp/");
    assert_string_equal(p[0].source, "TMPDIR");
    assert_string_equal(p[0].rejected, "mounted noexec (tmpfs on /tmp)");
    assert_string_equal(p[1].dir, "/var/tmp/");
    assert_string_equal(p[1].rejected, "");
    assert_string_equal(p[2].dir, "/dev/shm/");
    assert_non_null(strstr(p[2].rejected, "noexec"));
}

static void test_read_only_root(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/app/tmp", NULL, p);
    assert_int_equal(n, 4);
    judge_all(p, n, mounts, 5);
    assert_string_equal(p[0].dir, "/app/tmp/");
    assert_string_equal(p[0].rejected, "mounted read-only (overlay on /)");
}

static void test_user_dir_only(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", "/scratch", p);
    assert_int_equal(n, 1);
    judge_all(p, n, mounts, 5);
    assert_string_equal(p[0].dir, "/scratch/");
    assert_string_equal(p[0].source, "--target-dir");
    assert_string_equal(p[0].rejected, "");
    n = placement_candidates("/tmp/", "/tmp/x", p);
    assert_int_equal(n, 1);
    judge_all(p, n, mounts, 5);
    assert_non_null(strstr(p[0].rejected, "noexec"));
}

/* The verdict is statfs's; the table only names the mount, and only when it agrees. */
static void test_without_or_against_the_table(void **state)
{
    (void)state;
    struct placement p[PLACEMENT_MAX];
    size_t n = placement_candidates("/tmp/", NULL, p);
    assert_int_equal(n, 3);
    assert_false(placement_judge(&p[1], false, false, mounts, 5));
    assert_string_equal(p[1].rejected, "");
    assert_true(placement_judge(&p[0], true, false, NULL, 0));
    assert_string_equal(p[0].rejected, "mounted noexec");
    /* /var/tmp is exec-able in the table, but statfs (through a link, say) found noexec. */
    assert_true(placement_judge(&p[1], true, false, mounts, 5));
    assert_string_equal(p[1].rejected, "mounted noexec");
    assert_true(placement_judge(&p[2], false, true, mounts, 5));
    assert_string_equal(p[2].rejected, "mounted read-only");
    assert_int_equal(placement_candidates("rel", "relative", p), 0);
    assert_int_equal(placement_candidates("rel", NULL, p), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_rejections),
        cmocka_unit_test(test_read_only_root),
        cmocka_unit_test(test_user_dir_only),
        cmocka_unit_test(test_without_or_against_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
