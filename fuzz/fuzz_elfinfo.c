/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ELF headers of the target's own executable (read through its root), which pick the profiler
 * build: a hostile image can point every offset anywhere. The interpreter string and the SONAME
 * must come out terminated within their caps.
 *
 * The same bytes are also parsed as a file read only in part (elfinfo_parse_chunks, as elffile.c
 * drives it), under bitmaps drawn from the input: with every chunk present the result is the
 * whole-buffer parse; with chunks absent it is that same result or -EAGAIN naming an absent chunk,
 * and absent chunks are filled with other bytes, so a read of one shows as a changed result.
 * Loading the chunk named each time must reach the whole-buffer result.
 */
#include <errno.h>

#include "profset/elfinfo.h"
#include "fuzz.h"

/* Chunk i present when bit i of present[] is set. */
static bool has(const uint8_t *present, uint64_t i)
{
    return (present[i / 8] >> (i % 8)) & 1;
}

/* A copy of the input with every absent chunk overwritten. */
static uint8_t *with_holes(const uint8_t *data, size_t size, const uint8_t *present, unsigned shift)
{
    uint8_t *m = calloc(size ? size : 1, 1);
    if (!m)
        abort();
    if (size)
        memcpy(m, data, size);
    for (uint64_t i = 0; i << shift < size; i++) {
        size_t at = (size_t)(i << shift), n = size - at < (1u << shift) ? size - at : 1u << shift;
        if (!has(present, i))
            memset(m + at, 0xa5 ^ (int)i, n);
    }
    return m;
}

/* One partial parse of `data` under `present`: the property above. Returns the parse's code and
 * the missing chunk's offset. */
static int check_partial(const uint8_t *data, size_t size, const uint8_t *present, unsigned shift,
                         int whole_r, const struct elf_info *whole, uint64_t *ret_missing)
{
    struct cla_error e = {0};
    struct elf_info info;
    struct elf_chunks c = {.present = present, .shift = shift};
    uint8_t *m = with_holes(data, size, present, shift);
    int r = elfinfo_parse_chunks(m, size, &c, &info, ret_missing, &e);
    free(m);
    if (r == -EAGAIN) {
        FUZZ_CHECK(*ret_missing < size);
        FUZZ_CHECK((*ret_missing & ((1ULL << shift) - 1)) == 0);
        FUZZ_CHECK(!has(present, *ret_missing >> shift));
        return r;
    }
    FUZZ_CHECK(r == whole_r);
    if (r == 0)
        FUZZ_CHECK(elfinfo_equal(&info, whole));
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct elf_info info;
    int r = elfinfo_parse(data, size, &info, &e);
    FUZZ_CHECK(r == 0 || r == -ENOEXEC || r == -EPROTO);
    if (r == 0) {
        FUZZ_CHECK(strnlen(info.interp, sizeof(info.interp)) <= ELF_INTERP_MAX);
        FUZZ_CHECK(strnlen(info.soname, sizeof(info.soname)) <= ELF_SONAME_MAX);
    }

    /* The bitmaps come from the input itself (a hash of it), so corpus files stay plain ELF. */
    uint64_t seed = 1469598103934665603u;
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 1099511628211u;
    /* Chunks of 16 bytes and up, at most 16 of them: enough holes to matter, few enough parses
     * to keep the fuzzer fast. */
    unsigned shift = 4 + (unsigned)(seed % 3);
    while ((size >> shift) >= 16)
        shift++;
    size_t n_chunks = (size >> shift) + 1, bytes = n_chunks / 8 + 1;
    uint8_t *present = malloc(bytes);
    if (!present)
        abort();
    uint64_t missing;

    memset(present, 0xff, bytes);
    FUZZ_CHECK(check_partial(data, size, present, shift, r, &info, &missing) == r);

    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < bytes; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            present[i] = (uint8_t)(seed >> 33) & (uint8_t)(seed >> 41); /* about a quarter */
        }
        (void)check_partial(data, size, present, shift, r, &info, &missing);
    }

    /* As elffile.c reads: from nothing, one named chunk at a time, until the parse ends. */
    memset(present, 0, bytes);
    for (size_t loaded = 0;; loaded++) {
        FUZZ_CHECK(loaded <= n_chunks);
        if (check_partial(data, size, present, shift, r, &info, &missing) != -EAGAIN)
            break;
        uint64_t i = missing >> shift;
        present[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    free(present);
    return 0;
}
