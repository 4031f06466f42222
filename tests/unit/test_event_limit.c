/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rate limit of results and Events (lib/report/event_limit.c): the source's burst and its
 * refill, a series' own bucket, the count of what was suppressed, the table of series bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "report/event_limit.h"

static void test_source_burst_then_refill(void **state)
{
    (void)state;
    struct event_limit *l = event_limit_new();
    assert_non_null(l);
    int64_t t = 1000;
    /* A flood of made-up instances, each its own series (an HRESULT of the peer's choosing):
     * the source's burst passes, then nothing until its refill. */
    int passed = 0;
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof(key), "failed|%08x", i);
        passed += event_limit_take(l, key, t + i);
    }
    assert_int_equal(passed, EVENT_LIMIT_SOURCE_BURST);
    assert_int_equal(event_limit_suppressed_total(l), 1000 - EVENT_LIMIT_SOURCE_BURST);
    /* One token back per period, no more however long the wait was partly. */
    t += 1000 + EVENT_LIMIT_SOURCE_MS;
    assert_true(event_limit_take(l, "good", t));
    assert_false(event_limit_take(l, "good", t + 1));
    /* What the next report says of the suppressed ones, then zero. */
    assert_int_equal(event_limit_take_note(l), 1000 - EVENT_LIMIT_SOURCE_BURST + 1);
    assert_int_equal(event_limit_take_note(l), 0);
    /* A long quiet time fills the bucket to its burst, not beyond. */
    t += 100 * (int64_t)EVENT_LIMIT_SOURCE_MS;
    passed = 0;
    for (int i = 0; i < 2 * EVENT_LIMIT_SOURCE_BURST; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        passed += event_limit_take(l, key, t);
    }
    assert_int_equal(passed, EVENT_LIMIT_SOURCE_BURST);
    event_limit_free(l);
}

static void test_series_bucket(void **state)
{
    (void)state;
    struct event_limit *l = event_limit_new();
    int64_t t = 5;
    /* One series repeated: its own burst, while another series still passes. */
    int passed = 0;
    for (int i = 0; i < 2 * EVENT_LIMIT_SERIES_BURST; i++)
        passed += event_limit_take(l, "same", t);
    assert_int_equal(passed, EVENT_LIMIT_SERIES_BURST);
    assert_true(event_limit_take(l, "other", t));
    /* The series refills on its own period. */
    assert_false(event_limit_take(l, "same", t + EVENT_LIMIT_SERIES_MS - 1));
    assert_true(event_limit_take(l, "same", t + EVENT_LIMIT_SERIES_MS));
    /* A clock that goes back takes nothing and gives nothing. */
    assert_false(event_limit_take(l, "same", t));
    event_limit_free(l);
}

static void test_series_table_bounded(void **state)
{
    (void)state;
    struct event_limit *l = event_limit_new();
    /* More series than the table holds, spread over time so the source never runs dry: every
     * new series starts full, the least recently seen one making room. */
    int64_t t = 0;
    for (int i = 0; i < 4 * EVENT_LIMIT_SERIES_MAX; i++) {
        char key[32];
        snprintf(key, sizeof(key), "s%d", i);
        t += EVENT_LIMIT_SOURCE_MS;
        assert_true(event_limit_take(l, key, t));
    }
    /* A key longer than what counts is cut, consistently. */
    char big[2000];
    memset(big, 'k', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    t += EVENT_LIMIT_SOURCE_MS;
    assert_true(event_limit_take(l, big, t));
    big[1500] = '\0'; /* the same first 512 bytes: the same series */
    for (int i = 1; i < EVENT_LIMIT_SERIES_BURST; i++)
        assert_true(event_limit_take(l, big, t));
    assert_false(event_limit_take(l, big, t));
    event_limit_free(NULL);
    event_limit_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_burst_then_refill),
        cmocka_unit_test(test_series_bucket),
        cmocka_unit_test(test_series_table_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
