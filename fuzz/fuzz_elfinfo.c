/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ELF headers of the target's own executable (read through its root), which pick the profiler
 * build: a hostile image can point every offset anywhere. The interpreter string must come out
 * terminated within its cap.
 */
#include <errno.h>

#include "profset/elfinfo.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct elf_info info;
    int r = elfinfo_parse(data, size, &info, &e);
    FUZZ_CHECK(r == 0 || r == -ENOEXEC || r == -EPROTO);
    if (r == 0)
        FUZZ_CHECK(strnlen(info.interp, sizeof(info.interp)) <= ELF_INTERP_MAX);
    return 0;
}
