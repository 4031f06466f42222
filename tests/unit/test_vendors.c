/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of profilers whose attach does nothing: a row matches on its CLSID and entry file
 * name together, never on one alone (a CLSID is shared by forks and templates, a name is
 * anyone's), the CLSID without case, the name exactly; and every verified row is well formed.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/util.h"
#include "profset/vendors.h"

/* A table of the test's own: the lookup's rules do not depend on which vendors are listed. */
static const struct vendor_noop test_table[] = {
    {.vendor = "A", .entry = "libA.so", .clsid = "{11111111-2222-3333-4444-555555555555}"},
    {.vendor = "B", .entry = "libB.so", .clsid = "{11111111-2222-3333-4444-555555555555}"},
    {.vendor = "C", .entry = "libA.so", .clsid = "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"},
};

static const struct vendor_noop *find(const char *entry, const char *clsid)
{
    return vendors_find_noop(test_table, ARRAY_SIZE(test_table), entry, clsid);
}

static void test_both_must_match(void **state)
{
    (void)state;
    const struct vendor_noop *v = find("libA.so", "{11111111-2222-3333-4444-555555555555}");
    assert_non_null(v);
    assert_string_equal(v->vendor, "A");
    /* The same CLSID under another vendor's name is that vendor's row. */
    v = find("libB.so", "{11111111-2222-3333-4444-555555555555}");
    assert_non_null(v);
    assert_string_equal(v->vendor, "B");
    v = find("libA.so", "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}");
    assert_non_null(v);
    assert_string_equal(v->vendor, "C");
    /* A CLSID alone, or a name alone, is nobody's. */
    assert_null(find("libmine.so", "{11111111-2222-3333-4444-555555555555}"));
    assert_null(find("libB.so", "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"));
    assert_null(find("libA.so", "{00000000-0000-0000-0000-000000000000}"));
}

static void test_case_and_form(void **state)
{
    (void)state;
    /* GUIDs are written in either case; file names are what the loader opens, exactly. */
    assert_non_null(find("libA.so", "{aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee}"));
    assert_null(find("LIBA.SO", "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"));
    assert_null(find("libA.so.1", "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"));
    assert_null(find("dir/libA.so", "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"));
    assert_null(find("libA.so", "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"));
    assert_null(find("", ""));
    assert_null(find(NULL, "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"));
    assert_null(find("libA.so", NULL));
    assert_null(vendors_find_noop(test_table, 0, "libA.so", test_table[0].clsid));
}

/* Every row of the real table: a braced upper-case GUID, a bare ".so" name, a cited source, and
 * each row findable by its own pair. */
static void test_real_rows(void **state)
{
    (void)state;
    assert_true(vendors_noop_count >= 4);
    for (size_t i = 0; i < vendors_noop_count; i++) {
        const struct vendor_noop *v = &vendors_noop[i];
        assert_int_equal(strlen(v->clsid), 38);
        assert_int_equal(v->clsid[0], '{');
        assert_int_equal(v->clsid[37], '}');
        for (size_t k = 1; k < 37; k++) {
            if (k == 9 || k == 14 || k == 19 || k == 24)
                assert_int_equal(v->clsid[k], '-');
            else
                assert_true(isxdigit((unsigned char)v->clsid[k]) &&
                            !islower((unsigned char)v->clsid[k]));
        }
        assert_null(strchr(v->entry, '/'));
        size_t n = strlen(v->entry);
        assert_true(n > 3 && strcmp(v->entry + n - 3, ".so") == 0);
        assert_true(v->vendor[0] && v->on_attach[0] && v->startup[0]);
        assert_non_null(strchr(v->source, '@')); /* a commit is cited */
        assert_ptr_equal(vendors_find_noop(vendors_noop, vendors_noop_count, v->entry, v->clsid),
                         v);
    }
    /* OpenTelemetry's, the one the issue reproduced. */
    assert_non_null(vendors_find_noop(vendors_noop, vendors_noop_count,
                                      "OpenTelemetry.AutoInstrumentation.Native.so",
                                      "{918728dd-259f-4a6a-ac2b-b85e1b658318}"));
    /* ProcDump's profiler shares the clr-samples template's CLSID and really works on attach. */
    assert_null(vendors_find_noop(vendors_noop, vendors_noop_count, "ProcDumpProfiler.so",
                                  "{CF0D821E-299B-5307-A3D8-B283C03916DD}"));
}

/* A known vendor's startup settings go after the operator's --env, whose names win; the names
 * added are listed; past the cap is refused. */
static void test_startup_env(void **state)
{
    (void)state;
    const struct vendor_noop *otel = vendors_find_noop(
        vendors_noop, vendors_noop_count, "OpenTelemetry.AutoInstrumentation.Native.so",
        "{918728DD-259F-4A6A-AC2B-B85E1B658318}");
    assert_non_null(otel);
    assert_non_null(otel->startup_env);
    assert_non_null(strchr(otel->startup_env_source, '@'));
    const char *user[] = {"OTEL_SERVICE_NAME=orders", "OTEL_DOTNET_AUTO_HOME=/opt/otel"};
    const char *out[8];
    char added[160];
    int n = vendors_startup_env(otel, user, 2, out, 8, added, sizeof(added));
    assert_int_equal(n, 6);
    assert_string_equal(out[0], "OTEL_SERVICE_NAME=orders");
    assert_string_equal(out[1], "OTEL_DOTNET_AUTO_HOME=/opt/otel");
    assert_string_equal(out[2], "CORECLR_ENABLE_PROFILING=1");
    assert_string_equal(out[3], "CORECLR_PROFILER={918728DD-259F-4A6A-AC2B-B85E1B658318}");
    assert_string_equal(out[4], "CORECLR_PROFILER_PATH={entry}");
    /* Blank: the runtime fails to load it and takes the env loader; OpenTelemetry skips it. */
    assert_string_equal(out[5], "CORECLR_PROFILER_PATH_64= ");
    assert_string_equal(added, "CORECLR_ENABLE_PROFILING, CORECLR_PROFILER, CORECLR_PROFILER_PATH, "
                               "CORECLR_PROFILER_PATH_64");
    /* No row, or a row without settings: the operator's alone. */
    n = vendors_startup_env(NULL, user, 2, out, 8, added, sizeof(added));
    assert_int_equal(n, 2);
    assert_string_equal(added, "");
    n = vendors_startup_env(&test_table[0], user, 1, out, 8, added, sizeof(added));
    assert_int_equal(n, 1);
    /* A prefix is not the name: CORECLR_PROFILER_PATH does not stand for CORECLR_PROFILER. */
    const char *path_only[] = {"CORECLR_PROFILER_PATH=/x.so"};
    n = vendors_startup_env(otel, path_only, 1, out, 8, added, sizeof(added));
    assert_int_equal(n, 5);
    assert_string_equal(added, "CORECLR_ENABLE_PROFILING, CORECLR_PROFILER, "
                               "CORECLR_PROFILER_PATH_64, OTEL_DOTNET_AUTO_HOME");
    assert_int_equal(vendors_startup_env(otel, user, 2, out, 5, added, sizeof(added)), -E2BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_env),
        cmocka_unit_test(test_both_must_match),
        cmocka_unit_test(test_case_and_form),
        cmocka_unit_test(test_real_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
