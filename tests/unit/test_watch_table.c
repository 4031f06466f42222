/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow/watch.h"

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
                                    ATTACH_PERMISSION, ATTACH_NOT_FOUND};
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
    watch_table_seen(t, 7, 7, 0, 0);
    watch_table_seen(t, 8, 999, 0, 0); /* same pid, other instance: not this one */
    assert_int_equal(watch_table_sweep(t), 999);
    assert_int_equal(watch_table_size(t), 1);
    assert_true(watch_table_final(t, 7, 7));
    assert_false(watch_table_final(t, 8, 8));
    watch_table_free(t);
}

static void test_idle_young_then_seldom(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 50000;
    /* Started 3 s ago: looked at every scan for 7 s more, then every WATCH_IDLE_LOOK_MS. */
    watch_table_idle(t, 40, 4, 0xAB, 3000, now);
    assert_true(watch_table_due(t, 40, 4, now));
    watch_table_idle(t, 40, 4, 0xAB, 6999 + 3000, now + 6999);
    assert_true(watch_table_due(t, 40, 4, now + 6999));
    watch_table_idle(t, 40, 4, 0xAB, 10000, now + 7000);
    assert_false(watch_table_due(t, 40, 4, now + 7000 + WATCH_IDLE_LOOK_MS - 1));
    assert_true(watch_table_due(t, 40, 4, now + 7000 + WATCH_IDLE_LOOK_MS));
    assert_false(watch_table_final(t, 40, 4));
    /* Found already old (the watcher started after it): seldom from the first look. */
    watch_table_idle(t, 41, 4, 0xAB, 3600000, now);
    assert_false(watch_table_due(t, 41, 4, now + 1));
    /* Idle entries are not "tracked instances", but they are entries, and swept alike. */
    assert_int_equal(watch_table_size(t), 0);
    assert_int_equal(watch_table_entries(t), 2);
    watch_table_begin(t);
    watch_table_seen(t, 41, 4, 0xAB, now);
    assert_int_equal(watch_table_sweep(t), 1);
    assert_int_equal(watch_table_entries(t), 1);
    watch_table_free(t);
}

static void test_exec_starts_over(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 1000;
    /* An old shell, idle and seldom looked at, execs dotnet: due at once, and young again. */
    watch_table_idle(t, 7, 70, 0x1111, 3600000, now);
    assert_false(watch_table_due(t, 7, 70, now + 10));
    watch_table_seen(t, 7, 70, 0x2222, now + 10);
    assert_true(watch_table_due(t, 7, 70, now + 10));
    watch_table_idle(t, 7, 70, 0x2222, 3600000, now + 20);
    assert_true(watch_table_due(t, 7, 70, now + 30));
    /* Attached, then the runtime execs another program: a new instance, attached again. */
    assert_true(watch_table_record(t, 7, 70, ATTACH_OK, now + 40));
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0x2222, now + 50); /* same image: still final */
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0, now + 50); /* unknown: no news */
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0x3333, now + 60);
    assert_false(watch_table_final(t, 7, 70));
    assert_true(watch_table_due(t, 7, 70, now + 60));
    assert_int_equal(watch_table_size(t), 0);
    assert_true(watch_table_record(t, 7, 70, ATTACH_OK, now + 70)); /* reported anew */
    /* A table entry made by record() learns its image on the next scan without a reset. */
    watch_table_record(t, 9, 90, ATTACH_OK, now);
    watch_table_seen(t, 9, 90, 0x4444, now + 1);
    assert_true(watch_table_final(t, 9, 90));
    watch_table_free(t);
}

static void test_exec_fp(void **state)
{
    (void)state;
    struct proc_stat a = {.exec_marks = {0, 0, 0, 0}}, b = {.exec_marks = {1, 2, 3, 4}},
                     c = {.exec_marks = {1, 2, 3, 5}};
    assert_int_equal(watch_exec_fp(&a), 0);
    assert_int_not_equal(watch_exec_fp(&b), 0);
    assert_int_not_equal(watch_exec_fp(&b), watch_exec_fp(&c));
    assert_int_equal(watch_exec_fp(&b),
                     watch_exec_fp(&(struct proc_stat){.exec_marks = {1, 2, 3, 4}}));
}

/* Entries arrive in any pid order (a wrapped pid counter): lookups stay exact. */
static void test_many_unordered(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    uint32_t x = 12345;
    pid_t pids[3000];
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        pids[i] = (pid_t)(i * 7919 % 30011) + 1;
        watch_table_idle(t, pids[i], x % 3, 1, 3600000, 0);
        watch_table_record(t, pids[i], 100, i % 2 ? ATTACH_OK : ATTACH_NOT_READY, 0);
    }
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(watch_table_final(t, pids[i], 100), i % 2 == 1);
        assert_false(watch_table_final(t, pids[i], 101));
    }
    assert_int_equal(watch_table_size(t), 3000);
    watch_table_free(t);
}

/* A runtime that lets every exchange time out costs a whole attempt each time: its next attempt
 * waits as long as the last one took when that is longer than the backoff. */
static void test_timeout_backs_off_by_its_cost(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 100000;
    assert_false(watch_table_tried(t, 3, 33));
    /* 10 s spent in a silent attach: not due for 10 s, although the first backoff is 1 s. */
    assert_true(watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 10000, now));
    assert_true(watch_table_tried(t, 3, 33));
    assert_false(watch_table_final(t, 3, 33));
    assert_false(watch_table_due(t, 3, 33, now + WATCH_RETRY_FIRST_MS));
    assert_false(watch_table_due(t, 3, 33, now + 9999));
    assert_true(watch_table_due(t, 3, 33, now + 10000));
    /* A quick failure keeps the plain doubling backoff (2 s at the second attempt). */
    now += 10000;
    assert_false(watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 5, now));
    assert_false(watch_table_due(t, 3, 33, now + 1999));
    assert_true(watch_table_due(t, 3, 33, now + 2000));
    /* Given up after WATCH_RETRY_ATTEMPTS like any transient outcome. */
    for (int i = 2; i < WATCH_RETRY_ATTEMPTS; i++) {
        now += 60000;
        watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 30000, now);
    }
    assert_true(watch_table_final(t, 3, 33));
    /* An interrupted attach (the watcher stopping) is never final. */
    assert_false(watch_outcome_final(ATTACH_INTERRUPTED));
    watch_table_free(t);
}

/* A delivery conflict (the content-addressed name taken by a file of another uid) is not the
 * target's last word: retried with backoff, doubling up to its own cap, and never given up. */
static void test_delivery_failure_retried(void **state)
{
    (void)state;
    assert_false(watch_outcome_final(ATTACH_DELIVERY));
    struct watch_table *t = watch_table_new();
    int64_t now = 0, delay = WATCH_RETRY_FIRST_MS;
    assert_true(watch_table_record_attempt(t, 4, 44, ATTACH_DELIVERY, 20, now));
    for (int i = 1; i <= 3 * WATCH_RETRY_ATTEMPTS; i++) {
        assert_false(watch_table_final(t, 4, 44));
        assert_false(watch_table_due(t, 4, 44, now + delay - 1));
        assert_true(watch_table_due(t, 4, 44, now + delay));
        now += delay;
        /* The same conflict again is not reported again, and is still retried. */
        assert_false(watch_table_record_attempt(t, 4, 44, ATTACH_DELIVERY, 20, now));
        delay = delay * 2 > WATCH_DELIVERY_RETRY_MAX_MS ? WATCH_DELIVERY_RETRY_MAX_MS : delay * 2;
    }
    assert_int_equal(delay, WATCH_DELIVERY_RETRY_MAX_MS);
    assert_false(watch_table_final(t, 4, 44));
    /* Once delivered, the next outcome decides as usual. */
    now += delay;
    assert_true(watch_table_record(t, 4, 44, ATTACH_OK, now));
    assert_true(watch_table_final(t, 4, 44));
    watch_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_once_per_instance),
        cmocka_unit_test(test_final_outcomes_not_retried),
        cmocka_unit_test(test_transient_backoff_then_give_up),
        cmocka_unit_test(test_sweep_drops_dead),
        cmocka_unit_test(test_idle_young_then_seldom),
        cmocka_unit_test(test_exec_starts_over),
        cmocka_unit_test(test_exec_fp),
        cmocka_unit_test(test_many_unordered),
        cmocka_unit_test(test_timeout_backs_off_by_its_cost),
        cmocka_unit_test(test_delivery_failure_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
