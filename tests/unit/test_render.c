/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "base/render.h"

/* Renders a byte string given with its length (it may hold NULs) with render_text. */
#define TEXT(lit, want)                                                                            \
    do {                                                                                           \
        char out_[256];                                                                            \
        size_t n_ = render_text(lit, sizeof(lit) - 1, out_, sizeof(out_));                         \
        assert_string_equal(out_, want);                                                           \
        assert_int_equal(n_, strlen(want));                                                        \
    } while (0)

static void test_plain_and_utf8_kept(void **state)
{
    (void)state;
    TEXT("dotnet /app/Orders.Api.dll", "dotnet /app/Orders.Api.dll");
    /* é, €, an emoji, our own ellipsis and arrow, U+00A0 (the first code point past C1). */
    TEXT("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xE2\x80\xA6\xE2\x86\x92\xC2\xA0",
         "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xE2\x80\xA6\xE2\x86\x92\xC2\xA0");
    TEXT("", "");
}

static void test_c0_and_del(void **state)
{
    (void)state;
    TEXT("a\x1b[2Jb", "a\\x1b[2Jb");
    TEXT("\x1b]0;t\x07", "\\x1b]0;t\\x07");
    TEXT("\t\n\r\b\x7f", "\\x09\\x0a\\x0d\\x08\\x7f");
    TEXT("a\0b", "a\\x00b");
    TEXT("\x01\x1f", "\\x01\\x1f");
}

static void test_c1(void **state)
{
    (void)state;
    /* A raw byte 0x9B starts no UTF-8 sequence: escaped as a byte. */
    TEXT("x\x9b"
         "31m",
         "x\\x9b31m");
    TEXT("\x80\x9f", "\\x80\\x9f");
    /* U+009B (CSI) and U+0080..U+009F well-formed in UTF-8: escaped as code points. */
    TEXT("x\xC2\x9B"
         "31m",
         "x\\u{009b}31m");
    TEXT("\xC2\x80\xC2\x85\xC2\x9F", "\\u{0080}\\u{0085}\\u{009f}");
}

static void test_bidi(void **state)
{
    (void)state;
    TEXT("a\xE2\x80\xAE"
         "b",
         "a\\u{202e}b");
    TEXT("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD",
         "\\u{202a}\\u{202b}\\u{202c}\\u{202d}");
    TEXT("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9",
         "\\u{2066}\\u{2067}\\u{2068}\\u{2069}");
    TEXT("\xE2\x80\x8E\xE2\x80\x8F\xD8\x9C", "\\u{200e}\\u{200f}\\u{061c}");
    /* Neighbours that are ordinary text stay: U+2010 hyphen, U+2065 (unassigned), U+202F. */
    TEXT("\xE2\x80\x90\xE2\x81\xA5\xE2\x80\xAF", "\xE2\x80\x90\xE2\x81\xA5\xE2\x80\xAF");
}

static void test_invisible_and_separators(void **state)
{
    (void)state;
    TEXT("a\xE2\x80\x8B"
         "b",
         "a\\u{200b}b");
    TEXT("\xE2\x80\x8C\xE2\x80\x8D\xE2\x81\xA0\xEF\xBB\xBF",
         "\\u{200c}\\u{200d}\\u{2060}\\u{feff}");
    TEXT("\xE2\x81\xA4\xE2\x81\xAA\xE2\x81\xAF", "\\u{2064}\\u{206a}\\u{206f}");
    TEXT("\xE2\x80\xA8\xE2\x80\xA9", "\\u{2028}\\u{2029}");
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    /* Overlong NUL and '/', a surrogate, past U+10FFFF, an F5 lead byte, a lone continuation. */
    TEXT("\xC0\x80", "\\xc0\\x80");
    TEXT("\xE0\x80\xAF", "\\xe0\\x80\\xaf");
    TEXT("\xED\xA0\x80", "\\xed\\xa0\\x80");
    TEXT("\xF4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
    TEXT("\xF5\xBF", "\\xf5\\xbf");
    /* Truncated sequences: at the end, and followed by ASCII. */
    TEXT("a\xF0\x9F\x98", "a\\xf0\\x9f\\x98");
    TEXT("\xC3(", "\\xc3(");
    TEXT("\xFF\xFE", "\\xff\\xfe");
}

static void test_backslash_unambiguous(void **state)
{
    (void)state;
    /* A target that writes the escape's text itself is told apart from the escaped byte. */
    TEXT("\\x9b", "\\\\x9b");
    TEXT("\\u{202e}", "\\\\u{202e}");
    TEXT("a\\\x9b", "a\\\\\\x9b");
}

static void test_cut(void **state)
{
    (void)state;
    char out[8];
    /* Fits exactly: no mark. */
    assert_int_equal(render_text("1234567", 7, out, sizeof(out)), 7);
    assert_string_equal(out, "1234567");
    /* One more: cut, and the mark takes the last three bytes. */
    assert_int_equal(render_text("12345678", 8, out, sizeof(out)), 7);
    assert_string_equal(out, "1234...");
    /* An escape is never split: "\x1b" does not fit before the mark, so it is left out. */
    assert_int_equal(render_text("12\x1b"
                                 "45678",
                                 8, out, sizeof(out)),
                     5);
    assert_string_equal(out, "12...");
    /* Nor a UTF-8 character. */
    assert_int_equal(render_text("123\xE2\x82\xAC"
                                 "5678",
                                 10, out, sizeof(out)),
                     6);
    assert_string_equal(out, "123...");
    /* Tiny buffers: terminated, as much of the mark as fits. */
    assert_int_equal(render_text("abc", 3, out, 1), 0);
    assert_string_equal(out, "");
    assert_int_equal(render_text("abc", 3, out, 2), 1);
    assert_string_equal(out, ".");
    assert_int_equal(render_text("abc", 3, out, 3), 2);
    assert_string_equal(out, "..");
    assert_int_equal(render_text("abc", 3, out, 4), 3);
    assert_string_equal(out, "abc");
    out[0] = 'x';
    assert_int_equal(render_text("abc", 3, out, 0), 0);
    assert_int_equal(out[0], 'x');
}

static void test_cmdline(void **state)
{
    (void)state;
    char out[64];
    static const char a[] = "dotnet\0app.dll\0--x\0";
    render_cmdline(a, sizeof(a) - 1, out, sizeof(out));
    assert_string_equal(out, "dotnet app.dll --x");
    static const char esc[] = "a\x1b[31m\0b\n\0\0";
    render_cmdline(esc, sizeof(esc) - 1, out, sizeof(out));
    assert_string_equal(out, "a\\x1b[31m b\\x0a");
    static const char c1[] = "a\xC2\x9B"
                             "31m\0\xE2\x80\xAE"
                             "exe\x9b";
    render_cmdline(c1, sizeof(c1) - 1, out, sizeof(out));
    assert_string_equal(out, "a\\u{009b}31m \\u{202e}exe\\x9b");
    static const char lng[] = "0123456789012345678901234567890123456789"
                              "0123456789012345678901234567890123456789";
    render_cmdline(lng, sizeof(lng) - 1, out, sizeof(out));
    assert_int_equal(strlen(out), sizeof(out) - 1);
    assert_string_equal(out + sizeof(out) - 4, "...");
}

static void test_message_keeps_rendered_text(void **state)
{
    (void)state;
    char out[128], twice[128];
    /* Our text with our own UTF-8 and already-rendered target text: unchanged. */
    static const char ours[] = "deliver: '/tmp/a\\\\b\\u{202e}' \xE2\x86\x92 x\xE2\x80\xA6";
    assert_int_equal(render_message(ours, sizeof(ours) - 1, out, sizeof(out)), sizeof(ours) - 1);
    assert_string_equal(out, ours);
    /* A forgotten call site: raw controls are still escaped, the backslash kept. */
    static const char raw[] = "pid 1 (\x1b[2J\xE2\x80\xAE\xC2\x9B\x9b\\)";
    render_message(raw, sizeof(raw) - 1, out, sizeof(out));
    assert_string_equal(out, "pid 1 (\\x1b[2J\\u{202e}\\u{009b}\\x9b\\)");
    /* Idempotent. */
    render_message(out, strlen(out), twice, sizeof(twice));
    assert_string_equal(twice, out);
}

static void test_find(void **state)
{
    (void)state;
    size_t at = 99;
    uint32_t cp = 0;
    assert_int_equal(render_find("/tmp/a\\b", 8, &at, &cp), RENDER_SAFE);
    assert_int_equal(at, 99);
    assert_int_equal(render_find("/tmp/\xE2\x80\xAE", 8, &at, &cp), RENDER_BIDI);
    assert_int_equal(at, 5);
    assert_int_equal(cp, 0x202E);
    assert_int_equal(render_find("/t\xC2\x9B", 4, &at, &cp), RENDER_C1);
    assert_int_equal(at, 2);
    assert_int_equal(cp, 0x9B);
    assert_int_equal(render_find("/t\x9b", 3, &at, &cp), RENDER_INVALID);
    assert_int_equal(at, 2);
    assert_int_equal(cp, 0x9B);
    assert_int_equal(render_find("ab\x1b", 3, &at, &cp), RENDER_C0);
    assert_int_equal(cp, 0x1B);
    assert_int_equal(render_find("\x7f", 1, &at, &cp), RENDER_DEL);
    assert_int_equal(render_find("a\xE2\x80\x8B", 4, &at, &cp), RENDER_INVISIBLE);
    assert_int_equal(cp, 0x200B);
    assert_int_equal(render_find("a\xE2\x80\xA8", 4, &at, &cp), RENDER_SEPARATOR);
    assert_int_equal(render_find("\xC3\xA9\xE2\x80\xA6", 5, &at, &cp), RENDER_SAFE);
    assert_string_equal(render_class_name(RENDER_BIDI), "a bidi control");
    assert_string_equal(render_class_name(RENDER_INVALID), "invalid UTF-8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_utf8_kept),
        cmocka_unit_test(test_c0_and_del),
        cmocka_unit_test(test_c1),
        cmocka_unit_test(test_bidi),
        cmocka_unit_test(test_invisible_and_separators),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_backslash_unambiguous),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_cmdline),
        cmocka_unit_test(test_message_keeps_rendered_text),
        cmocka_unit_test(test_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
