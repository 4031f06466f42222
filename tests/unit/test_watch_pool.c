/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow/watch.h"

static void test_pool_bounds_and_busy(void **state)
{
    (void)state;
    struct watch_pool *p = watch_pool_new();
    assert_int_equal(watch_pool_count(p), 0);
    assert_true(watch_pool_next_deadline(p) == INT64_MAX);
    int slots[WATCH_POOL_MAX];
    for (int i = 0; i < WATCH_POOL_MAX; i++) {
        assert_true(watch_pool_may_start(p, false));
        slots[i] = watch_pool_add(p, 100 + i, 7, false, 5000 - i);
        assert_in_range(slots[i], 0, WATCH_POOL_MAX - 1);
        assert_true(watch_pool_busy(p, 100 + i, 7));
    }
    /* Full: nothing more starts, whatever it is. */
    assert_int_equal(watch_pool_count(p), WATCH_POOL_MAX);
    assert_false(watch_pool_may_start(p, false));
    assert_false(watch_pool_may_start(p, true));
    assert_int_equal(watch_pool_add(p, 200, 1, false, 0), -EBUSY);
    assert_true(watch_pool_next_deadline(p) == 5000 - (WATCH_POOL_MAX - 1));
    /* Same pid, another instance: not busy (a restarted app is not the one in flight). */
    assert_false(watch_pool_busy(p, 100, 8));
    watch_pool_remove(p, (size_t)slots[1]);
    watch_pool_remove(p, (size_t)slots[1]); /* twice: no effect */
    assert_int_equal(watch_pool_count(p), WATCH_POOL_MAX - 1);
    assert_false(watch_pool_busy(p, 101, 7));
    /* One instance, one attach in flight. */
    assert_int_equal(watch_pool_add(p, 100, 7, false, 0), -EBUSY);
    assert_int_equal(watch_pool_add(p, 101, 7, false, 1), slots[1]);
    assert_true(watch_pool_next_deadline(p) == 1);
    for (int i = 0; i < WATCH_POOL_MAX; i++)
        watch_pool_remove(p, (size_t)slots[i]);
    assert_int_equal(watch_pool_count(p), 0);
    assert_true(watch_pool_next_deadline(p) == INT64_MAX);
    watch_pool_free(p);
}

/* Retries of runtimes that failed (or never answered) never take the last free slot: a new
 * runtime always finds one, however many silent ones are retried. */
static void test_pool_keeps_a_slot_for_new_runtimes(void **state)
{
    (void)state;
    struct watch_pool *p = watch_pool_new();
    for (int i = 0; i < WATCH_POOL_MAX - 1; i++) {
        assert_true(watch_pool_may_start(p, true));
        assert_true(watch_pool_add(p, 10 + i, 1, true, 0) >= 0);
    }
    assert_false(watch_pool_may_start(p, true));
    assert_true(watch_pool_may_start(p, false));
    assert_true(watch_pool_add(p, 99, 1, false, 0) >= 0);
    assert_false(watch_pool_may_start(p, false));
    watch_pool_free(p);
}

static void test_attach_deadline(void **state)
{
    (void)state;
    /* Past both exchanges' own deadlines, never before them. */
    assert_true(watch_attach_deadline_ms(30000) > 2 * 30000);
    assert_true(watch_attach_deadline_ms(1000) == 2 * 1000 + WATCH_ATTACH_SLACK_MS);
}

/* A result crosses from an attach's child to the watcher as bytes: round trip, and a hostile
 * child's bytes made harmless. */
static void test_result_wire_round_trip(void **state)
{
    (void)state;
    size_t n = watch_result_wire_size();
    unsigned char *buf = calloc(1, n + 1);
    struct attach_result *r = calloc(1, sizeof(*r)), *d = calloc(1, sizeof(*d));
    assert_non_null(buf);
    r->outcome = ATTACH_LOAD_FAILED;
    r->pid = 42;
    r->starttime = 4242;
    r->have_hresult = true;
    r->hresult = 0x80131363u;
    r->rid_source = attach_rid_sources[1];
    snprintf(r->command_line, sizeof(r->command_line), "dotnet app.dll");
    snprintf(r->error.msg, sizeof(r->error.msg), "the runtime answered");
    watch_result_encode(r, buf);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_int_equal(d->outcome, ATTACH_LOAD_FAILED);
    assert_int_equal(d->pid, 42);
    assert_true(d->starttime == 4242);
    assert_true(d->have_hresult);
    assert_true(d->hresult == 0x80131363u);
    assert_ptr_equal(d->rid_source, attach_rid_sources[1]);
    assert_string_equal(d->command_line, "dotnet app.dll");
    assert_string_equal(d->error.msg, "the runtime answered");
    /* no pointer travels: one that is not a known name is dropped */
    r->rid_source = "elsewhere";
    watch_result_encode(r, buf);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_null(d->rid_source);
    /* short, long, or without the magic: refused */
    assert_int_equal(watch_result_decode(buf, n - 1, d), -EPROTO);
    assert_int_equal(watch_result_decode(buf, n + 1, d), -EPROTO);
    buf[0] ^= 0xff;
    assert_int_equal(watch_result_decode(buf, n, d), -EPROTO);
    free(buf);
    free(r);
    free(d);
}

static void test_result_wire_hostile_child(void **state)
{
    (void)state;
    size_t n = watch_result_wire_size();
    unsigned char *buf = calloc(1, n);
    struct attach_result *r = calloc(1, sizeof(*r)), *d = calloc(1, sizeof(*d));
    assert_non_null(buf);
    r->outcome = ATTACH_OK;
    watch_result_encode(r, buf);
    /* Everything after the magic and the rid index overwritten: every string unterminated and
     * full of escape bytes, flags that are not 0 or 1, a wild outcome, a wild rid index. */
    memset(buf + 8, 0x1b, n - 8);
    memcpy(buf + 4, &(uint32_t){0xdeadbeefu}, 4);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_int_equal(d->outcome, ATTACH_INTERNAL);
    assert_null(d->rid_source);
    assert_int_equal(strlen(d->command_line), sizeof(d->command_line) - 1);
    assert_null(strchr(d->command_line, 0x1b));
    assert_int_equal(strlen(d->error.hint), sizeof(d->error.hint) - 1);
    assert_null(strchr(d->error.hint, 0x1b));
    assert_null(strchr(d->delivered_path, 0x1b));
    unsigned char b;
    memcpy(&b, &d->mapped, 1);
    assert_int_equal(b, 1);
    memcpy(&b, &d->have_hresult, 1);
    assert_int_equal(b, 1);
    free(buf);
    free(r);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_bounds_and_busy),
        cmocka_unit_test(test_pool_keeps_a_slot_for_new_runtimes),
        cmocka_unit_test(test_attach_deadline),
        cmocka_unit_test(test_result_wire_round_trip),
        cmocka_unit_test(test_result_wire_hostile_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
