/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/hresult.h"
#include "base/util.h"

/* Texts are shown on one terminal line each and as Markdown table cells. */
#define CAUSE_MAX     200
#define NEXT_STEP_MAX 250
#define DOC_PATH      "docs/hresults.md" /* tests run from the repo root */
#define DOC_MAX       (256 * 1024)

static void test_every_entry_found(void **state)
{
    size_t n;
    const struct hresult_info *t = hresult_table(&n);
    (void)state;

    assert_true(n >= 30);
    for (size_t i = 0; i < n; i++) {
        const struct hresult_info *hi = hresult_lookup(t[i].code);
        assert_ptr_equal(hi, &t[i]);
        assert_int_equal(hi->code, t[i].code);
    }
}

static void test_table_sorted_unique(void **state)
{
    size_t n;
    const struct hresult_info *t = hresult_table(&n);
    (void)state;

    /* Strictly increasing: sorted for the binary search, and no code listed twice. */
    for (size_t i = 1; i < n; i++)
        if (t[i - 1].code >= t[i].code)
            fail_msg("entry %zu (0x%08X) not above entry %zu (0x%08X)", i, t[i].code, i - 1,
                     t[i - 1].code);
}

static void check_text(const char *what, uint32_t code, const char *s, size_t max)
{
    size_t len;

    if (!s)
        fail_msg("0x%08X: %s is NULL", code, what);
    len = strlen(s);
    if (len < 20 || len > max)
        fail_msg("0x%08X: %s has %zu characters (20..%zu allowed)", code, what, len, max);
    /* A Markdown cell and one output line: no '|' and no control characters. */
    for (size_t i = 0; i < len; i++)
        if (s[i] == '|' || iscntrl((unsigned char)s[i]))
            fail_msg("0x%08X: %s has a '|' or control character at %zu", code, what, i);
    if (s[len - 1] != '.')
        fail_msg("0x%08X: %s does not end with '.'", code, what);
}

static void check_entry_texts(const struct hresult_info *hi, uint32_t code)
{
    static const char w32[] = "HRESULT_FROM_WIN32(";
    const char *sym = hi->name;
    size_t symlen;

    assert_non_null(sym);
    /* A Win32 code reads as the macro that makes it: HRESULT_FROM_WIN32(ERROR_...). */
    if (strncmp(sym, w32, strlen(w32)) == 0) {
        sym += strlen(w32);
        symlen = strlen(sym);
        if (symlen < 2 || sym[symlen - 1] != ')' || strncmp(sym, "ERROR_", 6) != 0 ||
            (code >> 16) != 0x8007)
            fail_msg("0x%08X: name '%s' is not HRESULT_FROM_WIN32(ERROR_...)", code, hi->name);
        symlen--;
    } else {
        symlen = strlen(sym);
    }
    assert_true(symlen > 0);
    for (size_t k = 0; k < symlen; k++)
        if (!(isupper((unsigned char)sym[k]) || isdigit((unsigned char)sym[k]) || sym[k] == '_'))
            fail_msg("0x%08X: name '%s' is not an upper-case symbol", code, hi->name);
    check_text("cause", code, hi->cause, CAUSE_MAX);
    check_text("next_step", code, hi->next_step, NEXT_STEP_MAX);
    assert_true(hi->cls >= HRESULT_CLASS_OK && hi->cls <= HRESULT_CLASS_OTHER);
}

static void test_no_empty_texts(void **state)
{
    size_t n;
    const struct hresult_info *t = hresult_table(&n);
    (void)state;

    for (size_t i = 0; i < n; i++) {
        check_entry_texts(&t[i], t[i].code);
        /* The name must not be the generic one, or a known code would read as unknown. */
        assert_string_not_equal(t[i].name, "UNKNOWN");
    }
}

/* Every code of the reference's C.5 (attach HRESULTs) and B.5 (IPC errors) tables. */
static const uint32_t required[] = {
    0x00000000, 0x80004005, 0x80070057, 0x80004002, 0x80004001, 0x8000FFFF, 0x8007000E, 0x8007007E,
    0x8007007F, 0x800705B4, 0x8007045A, 0x80040111, 0x8013135B, 0x80131363, 0x80131367, 0x80131368,
    0x80131369, 0x8013136A, 0x8013136B, 0x8013136C, 0x8013136D, 0x8013136E, 0x8013136F, 0x80131371,
    0x80131372, 0x80131373, 0x80131374, 0x80131375, 0x80131376, 0x80131379, 0x8013137C, 0x80131380,
    0x80131382, 0x80131384, 0x80131385, 0x80131386, 0x80131387, 0x80131515, 0x8007007A, 0x800000CB,
};

static void test_required_codes_known(void **state)
{
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
        const struct hresult_info *hi = hresult_lookup(required[i]);
        if (hi->code != required[i] || strcmp(hi->name, "UNKNOWN") == 0)
            fail_msg("0x%08X is not in the table", required[i]);
    }
}

static void test_key_classes(void **state)
{
    static const struct {
        uint32_t code;
        const char *name;
        enum hresult_class cls;
    } key[] = {
        {0x00000000, "S_OK", HRESULT_CLASS_OK},
        {0x8013136A, "CORPROF_E_PROFILER_ALREADY_ACTIVE", HRESULT_CLASS_ALREADY},
        {0x8007007E, "ERROR_MOD_NOT_FOUND", HRESULT_CLASS_LOAD},
        {0x8007007F, "ERROR_PROC_NOT_FOUND", HRESULT_CLASS_LOAD},
        {0x8007045A, "ERROR_DLL_INIT_FAILED", HRESULT_CLASS_LOAD},
        {0x80131368, "CORPROF_E_PROFILER_NOT_ATTACHABLE", HRESULT_CLASS_LOAD},
        {0x8013136F, "CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER", HRESULT_CLASS_LOAD},
        {0x80040111, "CLASS_E_CLASSNOTAVAILABLE", HRESULT_CLASS_LOAD},
        {0x80004002, "E_NOINTERFACE", HRESULT_CLASS_LOAD},
        {0x8000FFFF, "E_UNEXPECTED", HRESULT_CLASS_LOAD},
        {0x80131375, "CORPROF_E_PROFILER_CANCEL_ACTIVATION", HRESULT_CLASS_LOAD},
        {0x80131379, "CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC", HRESULT_CLASS_LOAD},
        {0x8013135B, "CORPROF_E_NOT_YET_AVAILABLE", HRESULT_CLASS_NOT_READY},
        {0x80131371, "CORPROF_E_RUNTIME_UNINITIALIZED", HRESULT_CLASS_NOT_READY},
        {0x80131384, "CORDIAGIPC_E_BAD_ENCODING", HRESULT_CLASS_PROTOCOL},
        {0x80131385, "CORDIAGIPC_E_UNKNOWN_COMMAND", HRESULT_CLASS_PROTOCOL},
        {0x80131386, "CORDIAGIPC_E_UNKNOWN_MAGIC", HRESULT_CLASS_PROTOCOL},
        {0x80131387, "CORDIAGIPC_E_UNKNOWN_ERROR", HRESULT_CLASS_PROTOCOL},
        {0x80131515, "COR_E_NOTSUPPORTED", HRESULT_CLASS_PROTOCOL},
        {0x80004005, "E_FAIL", HRESULT_CLASS_LOAD},
        {0x80070057, "E_INVALIDARG", HRESULT_CLASS_LOAD},
        {0x8007000E, "E_OUTOFMEMORY", HRESULT_CLASS_OTHER},
        /* What a profiler's file I/O returns, decoded by their Win32 names. */
        {0x80070002, "HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND)", HRESULT_CLASS_LOAD},
        {0x80070003, "HRESULT_FROM_WIN32(ERROR_PATH_NOT_FOUND)", HRESULT_CLASS_LOAD},
        {0x80070005, "HRESULT_FROM_WIN32(ERROR_ACCESS_DENIED)", HRESULT_CLASS_LOAD},
        {0x80070008, "HRESULT_FROM_WIN32(ERROR_NOT_ENOUGH_MEMORY)", HRESULT_CLASS_OTHER},
        {0x80070013, "HRESULT_FROM_WIN32(ERROR_WRITE_PROTECT)", HRESULT_CLASS_LOAD},
        {0x80070070, "HRESULT_FROM_WIN32(ERROR_DISK_FULL)", HRESULT_CLASS_LOAD},
        {0x800700CE, "HRESULT_FROM_WIN32(ERROR_FILENAME_EXCED_RANGE)", HRESULT_CLASS_LOAD},
        /* Named only, with the generic Win32 texts. */
        {0x80070020, "HRESULT_FROM_WIN32(ERROR_SHARING_VIOLATION)", HRESULT_CLASS_LOAD},
        {0x80070490, "HRESULT_FROM_WIN32(ERROR_NOT_FOUND)", HRESULT_CLASS_LOAD},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(key); i++) {
        const struct hresult_info *hi = hresult_lookup(key[i].code);
        if (strcmp(hi->name, key[i].name) != 0)
            fail_msg("0x%08X: name %s, want %s", key[i].code, hi->name, key[i].name);
        if (hi->cls != key[i].cls)
            fail_msg("0x%08X: class %s, want %s", key[i].code, hresult_class_name(hi->cls),
                     hresult_class_name(key[i].cls));
    }
}

static void test_key_texts_name_the_remedy(void **state)
{
    const struct hresult_info *mod = hresult_lookup(0x8007007E);
    (void)state;

    /* The advice users need most must point at the tool's own flags and checks. */
    assert_non_null(strstr(hresult_lookup(0x8013135B)->next_step, "`--startup`"));
    assert_non_null(strstr(mod->next_step, "`--target-dir`"));
    assert_non_null(strstr(mod->next_step, "`--rid`"));
    assert_non_null(strstr(mod->next_step, "LD_DEBUG=files"));
    assert_non_null(strstr(mod->cause, "noexec"));
    assert_non_null(strstr(mod->cause, "musl"));
    /* A read-only file system hit by the profiler: say so and where to write instead. */
    assert_non_null(strstr(hresult_lookup(0x80070013)->cause, "read-only"));
    assert_non_null(strstr(hresult_lookup(0x80070013)->next_step, "writable path"));
    assert_non_null(strstr(hresult_lookup(0x80070013)->next_step, "emptyDir"));
    assert_non_null(strstr(hresult_lookup(0x80070070)->cause, "full"));
    assert_non_null(strstr(hresult_lookup(0x800700CE)->cause, "too long"));
    assert_non_null(strstr(hresult_lookup(0x8007007F)->cause, "DllGetClassObject"));
    assert_non_null(strstr(hresult_lookup(0x80131515)->cause, "Mono"));
    /* Many profilers' DllGetClassObject answer an unknown CLSID with E_FAIL. */
    assert_non_null(strstr(hresult_lookup(0x80004005)->cause, "wrong `--clsid`"));
    assert_non_null(strstr(hresult_lookup(0x80004005)->next_step, "`--clsid`"));
}

/* Is `code` in the list that `list` gives (hresult_table or hresult_win32_named)? */
static bool in_list(const struct hresult_info *(*list)(size_t *), uint32_t code)
{
    size_t n;
    const struct hresult_info *t = list(&n);

    for (size_t i = 0; i < n; i++)
        if (t[i].code == code)
            return true;
    return false;
}

static bool in_table(uint32_t code)
{
    return in_list(hresult_table, code);
}

static bool in_named(uint32_t code)
{
    return in_list(hresult_win32_named, code);
}

/* The named-only Win32 codes: sorted, Win32, not shadowing a full entry, found by lookup. */
static void test_win32_named(void **state)
{
    size_t n;
    const struct hresult_info *t = hresult_win32_named(&n);
    (void)state;

    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && t[i - 1].code >= t[i].code)
            fail_msg("named entry %zu (0x%08X) not above the one before", i, t[i].code);
        assert_int_equal(t[i].code >> 16, 0x8007);
        assert_false(in_table(t[i].code));
        assert_ptr_equal(hresult_lookup(t[i].code), &t[i]);
        check_entry_texts(&t[i], t[i].code);
        assert_non_null(strstr(t[i].name, "HRESULT_FROM_WIN32(ERROR_"));
    }
}

static void test_unknown_codes(void **state)
{
    static const struct {
        uint32_t code;
        enum hresult_class cls;
    } unknown[] = {
        {0x00000001, HRESULT_CLASS_OTHER}, /* S_FALSE: success, but not what attach answers */
        {0x7FFFFFFF, HRESULT_CLASS_OTHER},
        {0x80070099, HRESULT_CLASS_LOAD}, /* Win32 153, neither in the table nor named */
        {0x8007FFFF, HRESULT_CLASS_LOAD},
        {0x8007007D, HRESULT_CLASS_LOAD}, /* just below a known Win32 code */
        {0x80040154, HRESULT_CLASS_LOAD}, /* REGDB_E_CLASSNOTREG, FACILITY_ITF */
        {0x8013136B + 0x1000, HRESULT_CLASS_OTHER},
        {0x80131370, HRESULT_CLASS_OTHER}, /* a gap inside the CORPROF range */
        {0x80131516, HRESULT_CLASS_OTHER}, /* just above the last entry */
        {0x80004000, HRESULT_CLASS_OTHER}, /* FACILITY_NULL */
        {0x800000CA, HRESULT_CLASS_OTHER},
        {0x80000000, HRESULT_CLASS_OTHER},
        {0xC0000005, HRESULT_CLASS_OTHER}, /* an NTSTATUS-looking value */
        {0xFFFFFFFF, HRESULT_CLASS_OTHER},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(unknown); i++) {
        uint32_t c = unknown[i].code;
        const struct hresult_info *hi;

        assert_false(in_table(c));
        assert_false(in_named(c));
        hi = hresult_lookup(c);
        assert_non_null(hi);
        assert_string_equal(hi->name, "UNKNOWN");
        assert_int_equal(hi->code, 0);
        if (hi->cls != unknown[i].cls)
            fail_msg("0x%08X: class %s, want %s", c, hresult_class_name(hi->cls),
                     hresult_class_name(unknown[i].cls));
        check_entry_texts(hi, c);
    }
    /* Different families get different advice. */
    assert_ptr_not_equal(hresult_lookup(0x80070099), hresult_lookup(0x80131370));
    assert_ptr_not_equal(hresult_lookup(0x80070099), hresult_lookup(0x80040154));
    assert_ptr_not_equal(hresult_lookup(0x00000001), hresult_lookup(0x80004000));
}

static void test_format(void **state)
{
    char buf[16];
    (void)state;

    hresult_format(0x8007007E, buf, sizeof(buf));
    assert_string_equal(buf, "0x8007007E");
    hresult_format(0, buf, sizeof(buf));
    assert_string_equal(buf, "0x00000000");
    hresult_format(0xFFFFFFFF, buf, sizeof(buf));
    assert_string_equal(buf, "0xFFFFFFFF");
    hresult_format(0x1A, buf, sizeof(buf));
    assert_string_equal(buf, "0x0000001A");

    /* Exactly 11 bytes fits; nothing is written past `size`. */
    memset(buf, 'X', sizeof(buf));
    hresult_format(0x8013136A, buf, 11);
    assert_string_equal(buf, "0x8013136A");
    assert_int_equal(buf[11], 'X');

    memset(buf, 'X', sizeof(buf));
    hresult_format(0x8013136A, buf, 5);
    assert_string_equal(buf, "0x80");
    assert_int_equal(buf[5], 'X');

    memset(buf, 'X', sizeof(buf));
    hresult_format(0x8013136A, buf, 0);
    assert_int_equal(buf[0], 'X');
}

static void test_class_names(void **state)
{
    (void)state;

    for (int a = HRESULT_CLASS_OK; a <= HRESULT_CLASS_OTHER; a++) {
        const char *na = hresult_class_name((enum hresult_class)a);
        assert_non_null(na);
        assert_true(na[0] != '\0');
        for (int b = a + 1; b <= HRESULT_CLASS_OTHER; b++)
            assert_string_not_equal(na, hresult_class_name((enum hresult_class)b));
    }
    assert_string_equal(hresult_class_name(HRESULT_CLASS_LOAD), "load");
    assert_string_equal(hresult_class_name(HRESULT_CLASS_NOT_READY), "not_ready");
}

static void test_docs_match_table(void **state)
{
    _cleanup_close_ int fd = -1;
    _cleanup_free_ char *doc = NULL;
    size_t len, n;
    const struct hresult_info *t = hresult_table(&n);
    (void)state;

    fd = open(DOC_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open %s (run the tests from the repo root)", DOC_PATH);
    assert_int_equal(util_read_all(fd, DOC_MAX, &doc, &len), 0);
    assert_int_equal(strlen(doc), len);

    /* Each row must be present as a whole line, exactly as the table renders it, so the page
     * cannot drift from what the tool prints. */
    for (size_t i = 0; i < n; i++) {
        char code[16];
        char *row;

        hresult_format(t[i].code, code, sizeof(code));
        if (asprintf(&row, "\n| %s | %s | %s | %s | %s |\n", code, t[i].name,
                     hresult_class_name(t[i].cls), t[i].cause, t[i].next_step) < 0)
            fail_msg("out of memory");
        if (!strstr(doc, row)) {
            free(row);
            fail_msg("%s: row missing or different in %s", code, DOC_PATH);
        }
        free(row);
    }
    /* The named-only Win32 codes are listed as "| 0x80070020 | HRESULT_FROM_WIN32(...) |". */
    t = hresult_win32_named(&n);
    for (size_t i = 0; i < n; i++) {
        char code[16];
        char *row;

        hresult_format(t[i].code, code, sizeof(code));
        if (asprintf(&row, "\n| %s | %s |\n", code, t[i].name) < 0)
            fail_msg("out of memory");
        if (!strstr(doc, row)) {
            free(row);
            fail_msg("%s: named Win32 row missing or different in %s", code, DOC_PATH);
        }
        free(row);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_entry_found), cmocka_unit_test(test_table_sorted_unique),
        cmocka_unit_test(test_no_empty_texts),    cmocka_unit_test(test_required_codes_known),
        cmocka_unit_test(test_key_classes),       cmocka_unit_test(test_key_texts_name_the_remedy),
        cmocka_unit_test(test_unknown_codes),     cmocka_unit_test(test_format),
        cmocka_unit_test(test_class_names),       cmocka_unit_test(test_docs_match_table),
        cmocka_unit_test(test_win32_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
