/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tar stream on stdin (`--profiler -`): every entry returned must be a regular file or a
 * directory with a relative, normalised, control-free name, its data inside the input, and the
 * walk must end (each step advances) within the input.
 */
#include <errno.h>

#include "fuzz.h"
#include "profset/tarstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    struct tar_entry en;
    struct cla_error e = {0};
    (void)tar_detect(data, size);
    for (unsigned steps = 0;; steps++) {
        size_t before = off;
        int r = tar_next(data, size, &off, &en, &e);
        if (r <= 0) {
            FUZZ_CHECK(r == 0 || r == -EPROTO || r == -EPERM);
            FUZZ_CHECK(r == 0 ? off >= before && off <= size : off == before);
            break;
        }
        FUZZ_CHECK(off > before && off <= size);
        size_t n = strnlen(en.path, sizeof(en.path));
        FUZZ_CHECK(n > 0 && n < sizeof(en.path));
        FUZZ_CHECK(en.path[0] != '/' && en.path[n - 1] != '/');
        FUZZ_CHECK(strstr(en.path, "//") == NULL);
        FUZZ_CHECK(fuzz_no_controls(en.path, n));
        FUZZ_CHECK(strcmp(en.path, "..") != 0 && strncmp(en.path, "../", 3) != 0 &&
                   strstr(en.path, "/../") == NULL);
        if (en.is_dir) {
            FUZZ_CHECK(en.data == NULL && en.size == 0);
        } else {
            FUZZ_CHECK(en.data >= data && en.size <= size &&
                       (size_t)(en.data - data) <= size - en.size);
        }
        FUZZ_CHECK(steps < size);
    }
    return 0;
}
