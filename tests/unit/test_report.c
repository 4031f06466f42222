/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "report.h"

static struct ipc_guid clsid(void)
{
    struct ipc_guid g;
    ipc_guid_parse("{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}", &g);
    return g;
}

static const struct timespec when = {1790000000, 123456789};

static void test_attached(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 4242, .nspid = 1, .uid = 1000,
                              .duration_ms = 7};
    snprintf(r.runtime_version, sizeof(r.runtime_version), "10.0.12");
    snprintf(r.delivered_path, sizeof(r.delivered_path), "/tmp/libclrprobe-0123.so");
    struct ipc_guid g = clsid();
    struct report_event ev;
    report_event_from_result(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttached");
    assert_string_equal(ev.spec.type, "Normal");
    assert_string_equal(ev.spec.action, "AttachProfiler");
    assert_non_null(strstr(ev.note, "libclrprobe.so {5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}"));
    assert_non_null(strstr(ev.note, ".NET pid 1 (node-side pid 4242, uid 1000, .NET 10.0.12)"));
    assert_non_null(strstr(ev.note, "/tmp/libclrprobe-0123.so"));
    assert_int_equal(ev.spec.event_time.tv_nsec, 123456789);
}

static void test_already_active_is_normal(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_ALREADY_ACTIVE, .pid = 5, .nspid = 5,
                              .have_hresult = true, .hresult = 0x8013136A};
    snprintf(r.error.msg, sizeof(r.error.msg), "a profiler is loaded");
    struct ipc_guid g = clsid();
    struct report_event ev;
    report_event_from_result(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAlreadyActive");
    assert_string_equal(ev.spec.type, "Normal");
    assert_non_null(strstr(ev.note, "CORPROF_E_PROFILER_ALREADY_ACTIVE 0x8013136A"));
}

static void test_failure_is_warning_with_next_step(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_LOAD_FAILED, .pid = 9, .nspid = 1,
                              .have_hresult = true, .hresult = 0x8007007E};
    snprintf(r.error.msg, sizeof(r.error.msg), "the runtime could not load it");
    snprintf(r.error.hint, sizeof(r.error.hint), "check the libc");
    struct ipc_guid g = clsid();
    struct report_event ev;
    report_event_from_result(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttachFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "load_failed"));
    assert_non_null(strstr(ev.note, "0x8007007E"));
    assert_non_null(strstr(ev.note, "Next step: check the libc"));
}

static void test_note_cut_to_1024_on_utf8(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 1, .nspid = 1};
    /* A delivered path of 2-byte characters, longer than the 1024-byte note: the cut must not
     * split a character. */
    size_t o = 0;
    r.delivered_path[o++] = '/';
    while (o + 2 < 1500) {
        r.delivered_path[o++] = (char)0xC3;
        r.delivered_path[o++] = (char)0xA9;
    }
    r.delivered_path[o] = '\0';
    struct ipc_guid g = clsid();
    struct report_event ev;
    report_event_from_result(&r, "p.so", &g, &when, &ev);
    size_t n = strlen(ev.note);
    assert_true(n <= 1024 && n > 1000);
    /* Every 0xC3 lead byte is followed by its continuation byte. */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ev.note[i] == 0xC3)
            assert_int_equal((unsigned char)ev.note[i + 1], 0xA9);
}

static void test_termination_message(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 3};
    char out[REPORT_TERMINATION_LOG_MAX + 1];
    assert_int_equal(report_termination_message(&r, "{\"a\":1}", out), 7);
    assert_string_equal(out, "{\"a\":1}");
    static char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    r.outcome = ATTACH_DELIVERY;
    snprintf(r.error.msg, sizeof(r.error.msg), "no directory");
    size_t n = report_termination_message(&r, big, out);
    assert_true(n <= REPORT_TERMINATION_LOG_MAX);
    assert_non_null(strstr(out, "outcome=delivery_failed exit_code=6 pid=3"));
    assert_non_null(strstr(out, "error=no directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attached),
        cmocka_unit_test(test_already_active_is_normal),
        cmocka_unit_test(test_failure_is_warning_with_next_step),
        cmocka_unit_test(test_note_cut_to_1024_on_utf8),
        cmocka_unit_test(test_termination_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
