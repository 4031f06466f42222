/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of process-start-only startup hooks: looked up by assembly name without case (as the
 * runtime compares assembly names), never by a part of it; every row is well formed and cited;
 * the refusal names the vendor, why, and --force.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "profset/hooks.h"

static void test_lookup(void **state)
{
    (void)state;
    const struct hook_start_only *h =
        hooks_find_start_only("OpenTelemetry.AutoInstrumentation.StartupHook");
    assert_non_null(h);
    assert_non_null(strstr(h->vendor, "OpenTelemetry"));
    assert_ptr_equal(hooks_find_start_only("opentelemetry.autoinstrumentation.startuphook"), h);
    assert_null(hooks_find_start_only("OpenTelemetry.AutoInstrumentation"));
    assert_null(hooks_find_start_only("OpenTelemetry.AutoInstrumentation.StartupHook.dll"));
    assert_null(hooks_find_start_only("MyHook"));
    assert_null(hooks_find_start_only(""));
}

static void test_rows(void **state)
{
    (void)state;
    assert_true(hooks_start_only_count >= 1);
    for (size_t i = 0; i < hooks_start_only_count; i++) {
        const struct hook_start_only *h = &hooks_start_only[i];
        assert_true(h->vendor && h->vendor[0] && h->running && h->running[0]);
        assert_true(h->assembly && h->assembly[0] && !strchr(h->assembly, '/'));
        /* "owner/repo path@commit" */
        assert_non_null(h->source);
        assert_non_null(strchr(h->source, '/'));
        assert_non_null(strchr(h->source, '@'));
    }
}

static void test_refuse(void **state)
{
    (void)state;
    struct cla_error e = {0};
    const struct hook_start_only *h =
        hooks_find_start_only("OpenTelemetry.AutoInstrumentation.StartupHook");
    assert_int_equal(hooks_refuse_start_only(h, "otel.dll", &e), -EPERM);
    assert_non_null(strstr(e.msg, "otel.dll is OpenTelemetry"));
    assert_non_null(strstr(e.msg, "process start only"));
    assert_non_null(strstr(e.msg, "Environment.Exit"));
    assert_non_null(strstr(e.hint, "--force"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
