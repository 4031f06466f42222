/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Event series cache (lib/report/k8s_series.c) on its own: its lifecycle and what
 * k8s_report_event_dedup refuses before any request. Which report PATCHes and which creates is
 * played against the test API server in tests/k8s/run.sh (series-* scenarios).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "report/k8s_series.h"

/* A configuration whose token file does not exist: a report that gets past its own checks
 * stops at the token, before anything is sent. */
static struct k8s_config config(void)
{
    struct k8s_config cfg = {.connect_timeout_ms = 100,
                             .total_timeout_ms = 100,
                             .max_attempts = 1,
                             .retry_budget_ms = 100};
    snprintf(cfg.api_url, sizeof(cfg.api_url), "https://127.0.0.1:1");
    snprintf(cfg.token_path, sizeof(cfg.token_path), "/nonexistent-for-test/token");
    snprintf(cfg.ca_path, sizeof(cfg.ca_path), "/nonexistent-for-test/ca.crt");
    snprintf(cfg.namespace_, sizeof(cfg.namespace_), "shop");
    return cfg;
}

static struct k8s_event_spec spec(void)
{
    return (struct k8s_event_spec){.reason = "ProfilerAttached",
                                   .type = "Normal",
                                   .action = "AttachProfiler",
                                   .event_time = {.tv_sec = 1790000000}};
}

static void test_cache_lifecycle(void **state)
{
    (void)state;
    struct k8s_series_cache *c = k8s_series_cache_new();
    assert_non_null(c);
    k8s_series_cache_free(c);
    k8s_series_cache_free(NULL);
}

static void test_dedup_refuses_bad_keys(void **state)
{
    (void)state;
    struct k8s_config cfg = config();
    struct k8s_pod_ref pod = {.name = "orders-api-1"};
    struct k8s_event_spec ev = spec();
    struct k8s_series_cache *c = k8s_series_cache_new();
    assert_non_null(c);
    char longest[K8S_SERIES_KEY_MAX + 2];
    memset(longest, 'k', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    const char *const bad[] = {NULL, "", longest};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct k8s_report_outcome out;
        memset(&out, 0x5a, sizeof(out));
        struct cla_error e = {0};
        assert_int_equal(k8s_report_event_dedup(&cfg, &pod, &ev, bad[i], c, &out, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "series key must be 1 to 512 bytes"));
        /* Refused before anything was sent, with the outcome cleared. */
        assert_int_equal(out.attempts, 0);
        assert_int_equal(out.n_log, 0);
        assert_false(out.patched);
    }
    struct k8s_report_outcome out;
    struct cla_error e = {0};
    assert_int_equal(k8s_report_event_dedup(&cfg, &pod, &ev, "k", NULL, &out, &e), -EINVAL);

    /* The longest key allowed passes the check: the report then stops at the missing token,
     * having filled the pod's namespace from the configuration, as the client does. */
    longest[K8S_SERIES_KEY_MAX] = '\0';
    err_clear(&e);
    assert_int_equal(k8s_report_event_dedup(&cfg, &pod, &ev, longest, c, &out, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent-for-test/token"));
    assert_int_equal(out.attempts, 0);
    assert_string_equal(pod.namespace_, "shop");
    k8s_series_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_lifecycle),
        cmocka_unit_test(test_dedup_refuses_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
