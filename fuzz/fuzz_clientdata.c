/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample profiler's client data: whatever any diagnostics client sent in AttachProfiler,
 * parsed inside the target process. A success must honour every documented rule.
 */
#include <errno.h>

#include "../profiler/clientdata.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct clientdata cd;
    memset(&cd, 0xA5, sizeof(cd));
    int r = clientdata_parse(size ? data : NULL, size, &cd);
    FUZZ_CHECK(r == 0 || r == -E2BIG || r == -EINVAL || r == -ERANGE);
    if (r == 0) {
        size_t n = strnlen(cd.out, sizeof(cd.out));
        FUZZ_CHECK(n <= CLRPROBE_OUT_PATH_MAX);
        FUZZ_CHECK(n == 0 || cd.out[0] == '/');
        FUZZ_CHECK(fuzz_no_controls(cd.out, n));
        FUZZ_CHECK(cd.detach_after_s <= CLRPROBE_DETACH_AFTER_MAX);
        FUZZ_CHECK(size <= CLRPROBE_CLIENT_DATA_MAX + 1);
    } else {
        /* *ret is left alone on failure (the header's promise). */
        const unsigned char *p = (const unsigned char *)&cd;
        for (size_t i = 0; i < sizeof(cd); i++)
            FUZZ_CHECK(p[i] == 0xA5);
    }
    return 0;
}
