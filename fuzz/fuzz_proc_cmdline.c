/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/cmdline rendered for a person (render_cmdline, as target.c does): the arguments are
 * the target's own bytes. The output must be terminated within `size` and hold nothing render.h
 * promises to escape (controls, C1, bidi, invisible characters, invalid UTF-8), at every output
 * size, the tiny ones included.
 */
#include "fuzz.h"
#include "base/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t sizes[] = {1, 2, 4, 5, 16, 80, 512, 4096};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t osz = sizes[i];
        /* Exactly osz bytes on the heap: a write one past the end is an ASan report. */
        char *out = malloc(osz);
        if (!out)
            abort();
        size_t n = render_cmdline((const char *)data, size, out, osz);
        FUZZ_CHECK(n < osz && strnlen(out, osz) == n);
        FUZZ_CHECK(fuzz_rendered_clean(out, n));
        free(out);
    }
    return 0;
}
