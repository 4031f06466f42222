/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/cmdline rendered for a person: the arguments are the target's own bytes. The
 * output must be terminated within `size`, hold no control byte and be valid UTF-8 (the header
 * promises invalid sequences become '?'), at every output size, the tiny ones included.
 */
#include "fuzz.h"
#include "proc_parse.h"

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. C1 controls
 * (U+0080..U+009F) are refused too: terminals may act on a UTF-8 encoded CSI (U+009B), and
 * ipc.c already replaces them in the runtime's own strings. */
static int valid_utf8_no_c1(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
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
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp <= 0x9F)
            return 0;
        i += k + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t sizes[] = {1, 2, 4, 5, 16, 80, 4096};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t osz = sizes[i];
        /* Exactly osz bytes on the heap: a write one past the end is an ASan report. */
        char *out = malloc(osz);
        if (!out)
            abort();
        proc_cmdline_render((const char *)data, size, out, osz);
        size_t n = strnlen(out, osz);
        FUZZ_CHECK(n < osz);
        FUZZ_CHECK(fuzz_no_controls(out, n));
        FUZZ_CHECK(valid_utf8_no_c1((const unsigned char *)out, n));
        free(out);
    }
    return 0;
}
