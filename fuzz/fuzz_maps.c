/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/maps of a target: the path column holds any file name the target mapped (spaces,
 * " (deleted)" suffixes, names that look like loaders). Both scanners must stay in bounds and
 * give only their documented results.
 */
#include "fuzz.h"
#include "proc_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    int r = proc_maps_libc(buf, size);
    FUZZ_CHECK(r >= 0 && r <= 2);
    static const char *const names[] = {"libcoreclr.so", "clrprobe.so", "", "/"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        r = proc_maps_has(buf, size, names[i]);
        FUZZ_CHECK(r == 0 || r == 1);
    }
    char libs[4096];
    size_t n = proc_maps_libraries(buf, size, libs, sizeof(libs), 64);
    FUZZ_CHECK(n <= 64);
    const char *q = libs;
    for (size_t i = 0; i < n; i++) {
        size_t l = strnlen(q, sizeof(libs) - (size_t)(q - libs));
        FUZZ_CHECK(l > 0 && q + l < libs + sizeof(libs) && q[0] == '/');
        q += l + 1;
    }
    char lib[256];
    r = proc_maps_runtime_library(buf, size, lib, sizeof(lib));
    if (r == 1)
        FUZZ_CHECK(lib[0] == '/' && strnlen(lib, sizeof(lib)) < sizeof(lib));
    return 0;
}
