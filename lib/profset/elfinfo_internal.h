/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the bounded ELF reader share (elfinfo.c, elfinfo_dynamic.c, elfinfo_end.c):
 * the buffer and its present chunks, the bounded reads, the program header. Pure: no I/O. */
#ifndef CLRATTACH_ELFINFO_INTERNAL_H
#define CLRATTACH_ELFINFO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "profset/elfinfo.h"
#include "profset/rid.h"

/* Which chunks of a partly read file hold its bytes, and the first absent one a check asked for. */
struct partial {
    const struct elf_chunks *c;
    bool missing;
    uint64_t missing_off;
};

struct elf_buf {
    const uint8_t *p;
    size_t len;
    bool is_64, big_endian;
    struct partial *part; /* NULL: the whole file is present */
};

/* True when [off, off + size) lies inside the file. */
static inline bool in_file(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    return off <= b->len && size <= b->len - off;
}

/* Reads an unsigned integer of `size` bytes at `off`; callers check bounds first. */
static inline uint64_t rd(const struct elf_buf *b, uint64_t off, unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < size; i++) {
        unsigned shift = b->big_endian ? 8 * (size - 1 - i) : 8 * i;
        v |= (uint64_t)b->p[off + i] << shift;
    }
    return v;
}

/* Word-sized field: 4 bytes in ELF32, 8 in ELF64 (addresses, offsets, sizes, d_val). */
static inline uint64_t rdw(const struct elf_buf *b, uint64_t off)
{
    return rd(b, off, b->is_64 ? 8 : 4);
}

struct phdr {
    uint32_t type;
    uint64_t offset, vaddr, filesz;
};

static inline void read_phdr(const struct elf_buf *b, uint64_t off, struct phdr *ph)
{
    ph->type = (uint32_t)rd(b, off, 4);
    if (b->is_64) {
        ph->offset = rd(b, off + 8, 8);
        ph->vaddr = rd(b, off + 16, 8);
        ph->filesz = rd(b, off + 32, 8);
    } else {
        ph->offset = rd(b, off + 4, 4);
        ph->vaddr = rd(b, off + 8, 4);
        ph->filesz = rd(b, off + 16, 4);
    }
}

/* Are the bytes of [off, off + size), inside the file, present? The first absent chunk asked
 * for is remembered: the parse ends in -EAGAIN whatever it made of the refusal. */
bool elfinfo_present(const struct elf_buf *b, uint64_t off, uint64_t size);

/* True when [off, off + size) lies inside the file and is present: what every read needs. */
static inline bool in_bounds(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    return in_file(b, off, size) && elfinfo_present(b, off, size);
}

/* The first NUL of [off, off + max) (inside the file), or NULL when there is none or an absent
 * chunk comes first. */
const char *elfinfo_find_nul(const struct elf_buf *b, uint64_t off, uint64_t max);

/* The libc a DT_NEEDED name or an interpreter path (its last component) points to. */
enum rid_libc elfinfo_libc_of_name(const char *path);

/* Folds one more libc vote into *acc; disagreement sticks as a conflict. */
void elfinfo_vote(enum rid_libc v, enum rid_libc *acc, bool *conflict);

/* Walks the dynamic section `dyn` (elfinfo_dynamic.c): the DT_NEEDED names (each voting on the
 * libc), the run path and SONAME into *info, DT_FLAGS_1's PIE flag into *is_pie, and whether
 * DllGetClassObject is exported. Returns 0, -EAGAIN for an absent chunk, or -EPROTO. */
int elfinfo_parse_dynamic(const struct elf_buf *b, const struct phdr *dyn, const struct phdr *loads,
                          size_t n_loads, struct elf_info *info, enum rid_libc *libc,
                          bool *conflict, bool *is_pie, struct cla_error *e);

#endif
