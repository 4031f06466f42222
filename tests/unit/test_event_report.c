/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/event_report.h"
#include "base/util.h"

static char dir[] = "/tmp/test_event_report.XXXXXX";

static int setup(void **state)
{
    (void)state;
    /* The pod is named by the options in these tests; the environment must not add to it. */
    static const char *const vars[] = {"CLRATTACH_POD_NAME",
                                       "CLRATTACH_POD_NAMESPACE",
                                       "CLRATTACH_POD_UID",
                                       "CLRATTACH_CONTAINER_NAME",
                                       "POD_NAME",
                                       "POD_NAMESPACE",
                                       "POD_UID",
                                       "HOSTNAME"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s/log", dir);
    unlink(path);
    return rmdir(dir);
}

static struct attach_result attached(void)
{
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 4242, .nspid = 1, .uid = 1000};
    snprintf(r.runtime_version, sizeof(r.runtime_version), "10.0.12");
    snprintf(r.delivered_path, sizeof(r.delivered_path), "/tmp/libclrprobe-0123.so");
    return r;
}

static struct ipc_guid clsid(void)
{
    struct ipc_guid g;
    assert_int_equal(ipc_guid_parse("{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}", &g), 0);
    return g;
}

static void test_off_still_opens_the_termination_log(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s/log", dir);
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.mode = EVENT_MODE_OFF;
    rep.termination_log = path;
    struct cla_error e = {0}, w = {0};
    assert_int_equal(event_report_prepare(&rep, &w, &e), 0);
    assert_true(rep.termination_fd >= 0);
    assert_false(rep.enabled);
    assert_string_equal(w.msg, "");
    event_report_close(&rep);
    assert_int_equal(rep.termination_fd, -1);
    event_report_close(&rep); /* a second close is harmless */
}

static void test_bad_termination_log_stops(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.mode = EVENT_MODE_OFF;
    rep.termination_log = "/nonexistent-dir-for-test/log";
    struct cla_error e = {0};
    assert_int_equal(event_report_prepare(&rep, NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "--termination-log '/nonexistent-dir-for-test/log'"));
    event_report_close(&rep);
}

static void test_nothing_due_when_not_enabled(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    struct attach_result r = attached();
    struct ipc_guid g = clsid();
    struct event_report_sent sent;
    assert_int_equal(event_report_send(&rep, &r, "p.so", &g, &sent, NULL), 0);
    assert_false(sent.sent);
    rep.mode = EVENT_MODE_REQUIRED;
    assert_int_equal(event_report_send(&rep, &r, "p.so", &g, &sent, NULL), -ENOENT);
    assert_false(sent.sent);
}

static void test_dry_run_builds_the_event(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.dry_run = true;
    rep.pod_name = "orders-api-1";
    rep.container = "app";
    struct cla_error e = {0};
    assert_int_equal(event_report_prepare(&rep, NULL, &e), 0);
    assert_true(rep.enabled);
    assert_string_equal(rep.pod.namespace_, "default");
    struct attach_result r = attached();
    struct ipc_guid g = clsid();
    struct event_report_sent sent;
    assert_int_equal(event_report_send(&rep, &r, "/opt/p/libclrprobe.so", &g, &sent, &e), 0);
    assert_true(sent.sent);
    assert_true(sent.dry_run);
    assert_string_equal(sent.reason, "ProfilerAttached");
    assert_non_null(sent.body);
    assert_non_null(strstr(sent.body, "\"name\":\"orders-api-1\""));
    assert_non_null(strstr(sent.body, "\"reason\":\"ProfilerAttached\""));
    free(sent.body);
    event_report_close(&rep);
}

static size_t read_log(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    assert_true(n >= 0);
    buf[n] = '\0';
    return (size_t)n;
}

static void test_termination_log_keeps_only_the_latest(void **state)
{
    (void)state;
    char path[256], buf[8192];
    snprintf(path, sizeof(path), "%s/log", dir);
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.mode = EVENT_MODE_OFF;
    rep.termination_log = path;
    assert_int_equal(event_report_prepare(&rep, NULL, NULL), 0);
    struct attach_result r = attached();
    assert_int_equal(event_report_termination_log(&rep, &r, "{\"first\":\"a longer one\"}", 0), 0);
    assert_int_equal(event_report_termination_log(&rep, &r, "{\"b\":1}", 0), 0);
    /* No ftruncate under the sandbox: the shorter message is padded over the longer. */
    size_t n = read_log(path, buf, sizeof(buf));
    assert_int_equal(n, strlen("{\"first\":\"a longer one\"}"));
    assert_memory_equal(buf, "{\"b\":1}", 7);
    for (size_t i = 7; i < n; i++)
        assert_int_equal(buf[i], ' ');
    event_report_close(&rep);
}

static void test_no_termination_log_is_no_error(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    struct attach_result r = attached();
    assert_int_equal(event_report_termination_log(&rep, &r, "{}", 0), 0);
}

static void test_watch_needs_a_token_of_its_own(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.from_target = true;
    rep.mode = EVENT_MODE_REQUIRED;
    struct cla_error e = {0}, w = {0};
    assert_int_equal(event_report_for_watch(&rep, &w, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "--events=required"));
    assert_non_null(strstr(e.hint, "automountServiceAccountToken"));

    rep.mode = EVENT_MODE_AUTO;
    err_clear(&e);
    assert_int_equal(event_report_for_watch(&rep, &w, &e), 0);
    assert_false(rep.from_target);
    assert_null(rep.series);
    assert_non_null(strstr(w.msg, "Events off: this container has no service-account token"));
}

static void test_watch_keeps_a_series_cache(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.enabled = true;
    assert_int_equal(event_report_for_watch(&rep, NULL, NULL), 0);
    assert_non_null(rep.series);
    event_report_close(&rep);
    assert_null(rep.series);

    /* A dry run sends nothing, so has no series to keep. */
    struct event_reporter dry = EVENT_REPORTER_INIT;
    dry.enabled = dry.dry_run = true;
    assert_int_equal(event_report_for_watch(&dry, NULL, NULL), 0);
    assert_null(dry.series);
    event_report_close(&dry);
}

/* watch: a flood of results is bounded (event_limit.h), and the next Event let through says how
 * many were not reported. One-shot commands are never limited. */
static void test_watch_rate_limit(void **state)
{
    (void)state;
    struct event_reporter rep = EVENT_REPORTER_INIT;
    rep.dry_run = true;
    rep.pod_name = "orders-api-1";
    struct cla_error e = {0};
    assert_int_equal(event_report_prepare(&rep, NULL, &e), 0);
    struct attach_result r = attached();
    struct ipc_guid g = clsid();
    assert_true(event_report_admit(&rep, &r, "p.so")); /* not watch: no limit */
    assert_int_equal(event_report_suppressed(&rep), 0);
    assert_int_equal(event_report_for_watch(&rep, NULL, &e), 0);
    unsigned passed = 0;
    for (unsigned i = 0; i < 200; i++) {
        r.have_hresult = true;
        r.hresult = 0x80000000u + i; /* a peer's made-up answers: a series each */
        passed += event_report_admit(&rep, &r, "p.so");
    }
    assert_int_equal(passed, EVENT_LIMIT_SOURCE_BURST);
    assert_int_equal(event_report_suppressed(&rep), 200 - EVENT_LIMIT_SOURCE_BURST);
    struct event_report_sent sent;
    assert_int_equal(event_report_send(&rep, &r, "p.so", &g, &sent, &e), 0);
    assert_non_null(sent.body);
    char want[64];
    snprintf(want, sizeof(want), "%d earlier result(s) were not reported: rate limit",
             200 - EVENT_LIMIT_SOURCE_BURST);
    assert_non_null(strstr(sent.body, want));
    free(sent.body);
    /* Said once. */
    assert_int_equal(event_report_send(&rep, &r, "p.so", &g, &sent, &e), 0);
    assert_null(strstr(sent.body, "not reported"));
    free(sent.body);
    event_report_close(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_still_opens_the_termination_log),
        cmocka_unit_test(test_bad_termination_log_stops),
        cmocka_unit_test(test_nothing_due_when_not_enabled),
        cmocka_unit_test(test_dry_run_builds_the_event),
        cmocka_unit_test(test_termination_log_keeps_only_the_latest),
        cmocka_unit_test(test_no_termination_log_is_no_error),
        cmocka_unit_test(test_watch_needs_a_token_of_its_own),
        cmocka_unit_test(test_watch_keeps_a_series_cache),
        cmocka_unit_test(test_watch_rate_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
