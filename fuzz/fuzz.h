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

#endif
