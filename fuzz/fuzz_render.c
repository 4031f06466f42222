/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lib/base/render.c: any bytes a target holds, rendered for a terminal. At every output size (the
 * tiny ones included) the output is terminated within its buffer and holds nothing a terminal
 * or log viewer would act upon or hide (fuzz_rendered_clean, an independent checker). With room
 * enough, render_text reads back to exactly its input (the escapes are unambiguous), and
 * render_message leaves an already-rendered text unchanged.
 */
#include "fuzz.h"
#include "base/render.h"

static int hexv(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Appends code point cp as UTF-8. */
static size_t put_cp(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
}

/* Reverses render_text's escapes (\\, \xHH, \u{hhhh}) into out; returns the length, or
 * (size_t)-1 for a backslash that starts no escape. */
static size_t unrender(const char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            out[o++] = (unsigned char)s[i++];
            continue;
        }
        if (i + 1 < n && s[i + 1] == '\\') {
            out[o++] = '\\';
            i += 2;
        } else if (i + 3 < n && s[i + 1] == 'x' && hexv(s[i + 2]) >= 0 && hexv(s[i + 3]) >= 0) {
            out[o++] = (unsigned char)(hexv(s[i + 2]) << 4 | hexv(s[i + 3]));
            i += 4;
        } else if (i + 7 < n && s[i + 1] == 'u' && s[i + 2] == '{' && s[i + 7] == '}') {
            uint32_t cp = 0;
            for (int k = 3; k < 7; k++) {
                if (hexv(s[i + k]) < 0)
                    return (size_t)-1;
                cp = cp << 4 | (uint32_t)hexv(s[i + k]);
            }
            o += put_cp(out + o, cp);
            i += 8;
        } else {
            return (size_t)-1;
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    static const size_t sizes[] = {1, 2, 3, 4, 5, 9, 16, 80};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t osz = sizes[i];
        /* Exactly osz bytes on the heap: a write one past the end is an ASan report. */
        char *out = malloc(osz);
        if (!out)
            abort();
        size_t (*const fns[])(const char *, size_t, char *, size_t) = {render_text, render_cmdline,
                                                                       render_message};
        for (size_t f = 0; f < 3; f++) {
            size_t n = fns[f](in, size, out, osz);
            FUZZ_CHECK(n < osz && strnlen(out, osz) == n);
            FUZZ_CHECK(fuzz_rendered_clean(out, n));
        }
        free(out);
    }

    /* Room for the worst case: nothing is cut, and the escapes read back to the input. */
    size_t big = RENDER_SIZE_MAX(size);
    char *out = malloc(big);
    unsigned char *back = malloc(size + 1);
    char *again = malloc(big);
    if (!out || !back || !again)
        abort();
    size_t n = render_text(in, size, out, big);
    FUZZ_CHECK(strnlen(out, big) == n && fuzz_rendered_clean(out, n));
    FUZZ_CHECK(unrender(out, n, back) == size && (size == 0 || memcmp(back, data, size) == 0));
    /* The last line of defence changes nothing that is already rendered. */
    size_t m = render_message(out, n, again, big);
    FUZZ_CHECK(m == n && memcmp(again, out, n) == 0);
    n = render_cmdline(in, size, out, big);
    FUZZ_CHECK(strnlen(out, big) == n && fuzz_rendered_clean(out, n));

    /* render_find agrees with the rendering: nothing found means nothing but backslashes
     * escaped, so render_message copies the input unchanged. */
    size_t at;
    uint32_t cp;
    enum render_class c = render_find(in, size, &at, &cp);
    m = render_message(in, size, again, big);
    if (c == RENDER_SAFE)
        FUZZ_CHECK(m == size && (size == 0 || memcmp(again, data, size) == 0));
    else
        FUZZ_CHECK(at < size && m > size);
    free(out);
    free(back);
    free(again);
    return 0;
}
