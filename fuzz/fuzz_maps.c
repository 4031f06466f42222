/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/maps of a target: the path column holds any file name the target mapped (spaces,
 * " (deleted)" suffixes, names that look like loaders). Both scanners must stay in bounds and
 * give only their documented results.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "target/proc_maps.h"

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
    /* Fed in pieces (sizes taken from the input itself), the incremental scan agrees with the
     * one-shot one unless a line is longer than its buffer. */
    static struct proc_maps_scan scan;
    scan.have = 0;
    size_t off = 0, step = size > 0 ? (size_t)data[0] * 61 + 1 : 1;
    r = 0;
    while (r == 0) {
        size_t room = sizeof(scan.buf) - scan.have, n = size - off;
        if (n > step)
            n = step;
        if (n > room)
            n = room;
        memcpy(scan.buf + scan.have, buf + off, n);
        off += n;
        r = proc_maps_scan_feed(&scan, n, "clrprobe.so");
        if (n == 0)
            break;
    }
    FUZZ_CHECK(r == -EPROTO || r == proc_maps_has(buf, size, "clrprobe.so"));
    /* The libraries, then what the loader holds (unlinked ones too). */
    char libs[4096];
    for (int k = 0; k < 2; k++) {
        size_t n = k ? proc_maps_loaded(buf, size, libs, sizeof(libs), 64)
                     : proc_maps_libraries(buf, size, libs, sizeof(libs), 64);
        FUZZ_CHECK(n <= 64);
        const char *q = libs;
        for (size_t i = 0; i < n; i++) {
            size_t l = strnlen(q, sizeof(libs) - (size_t)(q - libs));
            FUZZ_CHECK(l > 0 && q + l < libs + sizeof(libs) && q[0] == '/');
            q += l + 1;
        }
    }
    char lib[256];
    r = proc_maps_runtime_library(buf, size, lib, sizeof(lib));
    if (r == 1)
        FUZZ_CHECK(lib[0] == '/' && strnlen(lib, sizeof(lib)) < sizeof(lib));
    return 0;
}
