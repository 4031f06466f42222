/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "watch.h"

static void test_once_per_instance(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    assert_true(watch_table_due(t, 10, 100, 0));
    assert_true(watch_table_record(t, 10, 100, ATTACH_OK, 0));
    assert_false(watch_table_due(t, 10, 100, 1000000));
    assert_true(watch_table_final(t, 10, 100));
    /* Same pid, new start time: a restarted app is a new instance. */
    assert_true(watch_table_due(t, 10, 200, 0));
    watch_table_free(t);
}

static void test_final_outcomes_not_retried(void **state)
{
    (void)state;
    enum attach_outcome finals[] = {ATTACH_OK, ATTACH_ALREADY_ACTIVE, ATTACH_LOAD_FAILED,
                                    ATTACH_PERMISSION, ATTACH_DELIVERY, ATTACH_NOT_FOUND};
    for (size_t i = 0; i < sizeof(finals) / sizeof(finals[0]); i++) {
        struct watch_table *t = watch_table_new();
        watch_table_record(t, 1, 1, finals[i], 0);
        assert_false(watch_table_due(t, 1, 1, 10000000));
        watch_table_free(t);
    }
}

static void test_transient_backoff_then_give_up(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 0;
    assert_true(watch_table_record(t, 5, 9, ATTACH_NOT_READY, now));
    assert_false(watch_table_due(t, 5, 9, now + 999));
    assert_true(watch_table_due(t, 5, 9, now + 1000));
    /* The same outcome again is not new: no second report. */
    now += 1000;
    assert_false(watch_table_record(t, 5, 9, ATTACH_NOT_READY, now));
    assert_false(watch_table_due(t, 5, 9, now + 1999));
    assert_true(watch_table_due(t, 5, 9, now + 2000));
    /* A different outcome is new. */
    now += 2000;
    assert_true(watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now));
    now += 4000;
    watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now);
    now += 8000;
    watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now);
    /* Five attempts: given up, never again. */
    assert_true(watch_table_final(t, 5, 9));
    assert_false(watch_table_due(t, 5, 9, now + 100000000));
    watch_table_free(t);
}

static void test_sweep_drops_dead(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    for (int i = 1; i <= 1000; i++)
        watch_table_record(t, i, (uint64_t)i, ATTACH_OK, 0);
    assert_int_equal(watch_table_size(t), 1000);
    watch_table_begin(t);
    watch_table_seen(t, 7, 7);
    watch_table_seen(t, 8, 999); /* same pid, other instance: not this one */
    assert_int_equal(watch_table_sweep(t), 999);
    assert_int_equal(watch_table_size(t), 1);
    assert_true(watch_table_final(t, 7, 7));
    assert_false(watch_table_final(t, 8, 8));
    watch_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_once_per_instance),
        cmocka_unit_test(test_final_outcomes_not_retried),
        cmocka_unit_test(test_transient_backoff_then_give_up),
        cmocka_unit_test(test_sweep_drops_dead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
