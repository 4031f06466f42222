/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime identifier from a target's ProcessInfo3 reply, normalised to pick a profiler
 * build. An accepted RID must name a known libc and arch and yield only bounded bundle names.
 */
#include "fuzz.h"
#include "profset/rid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_strdup(data, size);
    struct rid r;
    if (rid_parse(s, &r) == 0) {
        FUZZ_CHECK(strnlen(r.portable, sizeof(r.portable)) < sizeof(r.portable));
        const char *names[8];
        size_t n = rid_bundle_names(&r, names, 8);
        FUZZ_CHECK(n <= 8);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(names[i] && names[i][0]);
        FUZZ_CHECK(rid_arch_name(r.arch) && rid_libc_name(r.libc));
    }
    free(s);
    return 0;
}
