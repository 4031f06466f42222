/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_FUZZ_H
#define CLRATTACH_FUZZ_H

/*
 * What every fuzz target shares. Each fuzz_<name>.c defines only LLVMFuzzerTestOneInput; clang's
 * -fsanitize=fuzzer supplies main, and fuzz/replay_main.c supplies a plain one for gcc builds
 * that replay the corpus and the saved crashes.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libFuzzer entry point. Returns 0 (other values are reserved by libFuzzer). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the parser promised does not hold: report and abort so the fuzzer keeps the input.
 * abort() rather than assert(): these checks must stay on under -DNDEBUG. */
#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

/* A NUL-terminated heap copy of the input, for APIs that take C strings. The copy is exactly
 * size + 1 bytes so ASan still sees a read past the terminator. Aborts on OOM. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Is [p, p + n) free of bytes below 0x20 and of DEL? Parsers that promise to scrub control
 * bytes from target-controlled text are checked with it. */
static inline int fuzz_no_controls(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

/* Is [p, p + n) strictly well-formed UTF-8 (RFC 3629: no overlong form, no surrogate, nothing
 * past U+10FFFF, nothing truncated) without any character lib/base/render.h promises to escape: C0,
 * DEL, C1 (U+0080..U+009F), bidi controls, invisible format characters, line and paragraph
 * separators? Written apart from lib/base/render.c, from the Unicode tables, so that a mistake in
 * one is not repeated in the other. */
static inline int fuzz_rendered_clean(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        uint32_t cp, min;
        size_t k;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return 0;
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            k = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (i + k >= n)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        if (cp <= 0x9F)                                             /* C1 */
            return 0;
        if (cp == 0x061C || cp == 0x200E || cp == 0x200F ||         /* ALM, LRM, RLM */
            (cp >= 0x202A && cp <= 0x202E) ||                       /* LRE..RLO */
            (cp >= 0x2066 && cp <= 0x2069))                         /* LRI..PDI */
            return 0;
        if ((cp >= 0x200B && cp <= 0x200D) || cp == 0xFEFF ||       /* ZWSP, ZWNJ, ZWJ, BOM */
            (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x206A && cp <= 0x206F))
            return 0;
        if (cp == 0x2028 || cp == 0x2029)
            return 0;
        i += k + 1;
    }
    return 1;
}

#endif
