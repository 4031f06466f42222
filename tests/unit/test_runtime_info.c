/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "runtime/runtime_info.h"

static void test_plain_answer_kept(void **state)
{
    (void)state;
    struct ipc_process_info pi = {.version = 3,
                                  .os = "Linux",
                                  .arch = "X64",
                                  .clr_product_version = "8.0.11+abc",
                                  .runtime_identifier = "linux-musl-x64"};
    struct runtime_info ri;
    runtime_info_from(&pi, &ri);
    assert_string_equal(ri.version, "8.0.11+abc");
    assert_string_equal(ri.rid, "linux-musl-x64");
    assert_string_equal(ri.os, "Linux");
    assert_string_equal(ri.arch, "X64");
}

/* ProcessInfo (version 1) names neither version nor RID: shown empty, not left as garbage. */
static void test_missing_strings_empty(void **state)
{
    (void)state;
    struct ipc_process_info pi = {.version = 1};
    struct runtime_info ri;
    memset(&ri, 'x', sizeof(ri));
    runtime_info_from(&pi, &ri);
    assert_string_equal(ri.version, "");
    assert_string_equal(ri.rid, "");
    assert_string_equal(ri.os, "");
    assert_string_equal(ri.arch, "");
}

/* The strings are the target's: a terminal escape or a bidi control is shown escaped. */
static void test_hostile_text_rendered(void **state)
{
    (void)state;
    struct ipc_process_info pi = {.os = "\x1b[2J",
                                  .arch = "x64\xE2\x80\xAE",
                                  .clr_product_version = "8.0\n",
                                  .runtime_identifier = "linux\\x64"};
    struct runtime_info ri;
    runtime_info_from(&pi, &ri);
    assert_string_equal(ri.os, "\\x1b[2J");
    assert_string_equal(ri.arch, "x64\\u{202e}");
    assert_string_equal(ri.version, "8.0\\x0a");
    assert_string_equal(ri.rid, "linux\\\\x64");
}

/* A string longer than its field is cut with the mark, and terminated. */
static void test_long_text_cut(void **state)
{
    (void)state;
    char longer[200];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    struct ipc_process_info pi = {
        .os = longer, .arch = longer, .clr_product_version = longer, .runtime_identifier = longer};
    struct runtime_info ri;
    runtime_info_from(&pi, &ri);
    assert_int_equal(strlen(ri.version), sizeof(ri.version) - 1);
    assert_string_equal(ri.version + sizeof(ri.version) - 4, "...");
    assert_int_equal(strlen(ri.rid), sizeof(ri.rid) - 1);
    assert_int_equal(strlen(ri.os), sizeof(ri.os) - 1);
    assert_string_equal(ri.arch, "aaaaaaaaaaaa...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_answer_kept),
        cmocka_unit_test(test_missing_strings_empty),
        cmocka_unit_test(test_hostile_text_rendered),
        cmocka_unit_test(test_long_text_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
