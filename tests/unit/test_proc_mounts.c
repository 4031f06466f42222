/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "target/proc_mounts.h"

static void test_mountinfo(void **state)
{
    (void)state;
    size_t len, n;
    struct proc_mount *m;
    char *b = slurp("tests/fixtures/proc/mountinfo.container", &len);
    assert_int_equal(proc_parse_mountinfo(b, len, &m, &n, NULL), 0);
    assert_int_equal(n, 8);
    assert_true(m[0].read_only);
    assert_string_equal(m[2].mount_point, "/tmp");
    assert_true(m[2].noexec);
    assert_false(m[2].read_only);
    assert_true(m[3].read_only); /* read-only superblock under a rw mount */
    assert_string_equal(m[5].mount_point, "/my dir");
    assert_string_equal(m[5].fstype, "tmpfs");
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmp/"), &m[2]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmp/exec/x.so"), &m[6]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmpx/"), &m[0]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/"), &m[0]);
    /* Line 8 is stacked on "/" after the process's root was set: invisible to it. */
    assert_ptr_equal(proc_mount_for_path(m, n, "/etc/x"), &m[0]);
    assert_ptr_equal(proc_mount_for_path(m, 0, "/"), NULL);
    free(m);
    b = slurp("tests/fixtures/proc/mountinfo.host", &len);
    assert_int_equal(proc_parse_mountinfo(b, len, &m, &n, NULL), 0);
    assert_true(n > 0);
    free(m);
}

static void test_mountinfo_malformed(void **state)
{
    (void)state;
    struct proc_mount *m;
    size_t n;
    struct cla_error e = {0};
    const char *bad[] = {
        "1 2 0:1 / / rw - ext4\n",                 /* no source */
        "1 2 0:1 / / rw master:1\n",               /* no separator */
        "1 2 0:1 / rel rw - ext4 /dev/x rw\n",     /* relative mount point */
        "1 2 0:1 / /a\\09 rw - ext4 /dev/x rw\n",  /* bad escape */
        "1 2 0:1 / /a\\000 rw - ext4 /dev/x rw\n", /* NUL escape */
        "1 2\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(proc_parse_mountinfo(bad[i], strlen(bad[i]), &m, &n, &e), -EPROTO);
    assert_int_equal(proc_parse_mountinfo("", 0, &m, &n, &e), 0);
    assert_int_equal(n, 0);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_mountinfo_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
