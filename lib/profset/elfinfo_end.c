/* SPDX-License-Identifier: Apache-2.0 */
/* Where an ELF file ends, told from its headers as its first bytes arrive: the program headers'
 * file bytes, and the walk of the section header table and each section's bytes. */
#include "profset/elfinfo_internal.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#include "profset/elfinfo.h"

/* max(*end, off + size), saturating: a sum past the cap stays past it. */
static void extend(uint64_t *end, uint64_t off, uint64_t size)
{
    uint64_t e = off > UINT64_MAX - size ? UINT64_MAX : off + size;
    if (e > *end)
        *end = e;
}

/* A table not yet all read: wait for it, unless it reaches past the cap, where the read stops
 * anyway and need not wait. */
static int past_cap(uint64_t end, uint64_t *ret_end)
{
    if (end <= PROFILER_MAX_SIZE)
        return 0;
    *ret_end = end;
    return 1;
}

int elfinfo_file_end(const uint8_t *buf, size_t len, uint64_t *ret_end)
{
    struct elf_buf b = {.p = buf, .len = len};
    if (len < EI_NIDENT)
        return len >= SELFMAG && memcmp(buf, ELFMAG, SELFMAG) != 0 ? -ENOEXEC : 0;
    if (memcmp(buf, ELFMAG, SELFMAG) != 0)
        return -ENOEXEC;
    if ((buf[EI_CLASS] != ELFCLASS32 && buf[EI_CLASS] != ELFCLASS64) ||
        (buf[EI_DATA] != ELFDATA2LSB && buf[EI_DATA] != ELFDATA2MSB))
        return -EPROTO;
    b.is_64 = buf[EI_CLASS] == ELFCLASS64;
    b.big_endian = buf[EI_DATA] == ELFDATA2MSB;
    uint64_t end = b.is_64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    if (len < end)
        return 0;
    uint64_t phoff = b.is_64 ? rd(&b, 32, 8) : rd(&b, 28, 4);
    uint64_t shoff = b.is_64 ? rd(&b, 40, 8) : rd(&b, 32, 4);
    unsigned phentsize = (unsigned)rd(&b, b.is_64 ? 54 : 42, 2);
    unsigned phnum = (unsigned)rd(&b, b.is_64 ? 56 : 44, 2);
    unsigned shentsize = (unsigned)rd(&b, b.is_64 ? 58 : 46, 2);
    uint64_t shnum = rd(&b, b.is_64 ? 60 : 48, 2);
    unsigned ph_want = b.is_64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
    unsigned sh_want = b.is_64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

    /* PN_XNUM or a foreign entry size: the parser refuses such a file, and so no end is told. */
    if (phnum > ELF_MAX_PHDRS || (phnum && phentsize != ph_want))
        return -EPROTO;
    extend(&end, phoff, (uint64_t)phnum * phentsize);
    if (phnum && !in_file(&b, phoff, (uint64_t)phnum * phentsize))
        return past_cap(end, ret_end);
    for (unsigned i = 0; i < phnum; i++) {
        struct phdr ph;
        read_phdr(&b, phoff + (uint64_t)i * phentsize, &ph);
        extend(&end, ph.offset, ph.filesz);
    }
    if (shoff != 0) {
        if (shentsize != sh_want)
            return -EPROTO;
        /* SHN_UNDEF in e_shnum: the count is in section 0's sh_size (over 65279 sections). */
        if (shnum == 0) {
            extend(&end, shoff, sh_want);
            if (!in_file(&b, shoff, sh_want))
                return past_cap(end, ret_end);
            shnum = b.is_64 ? rd(&b, shoff + 32, 8) : rd(&b, shoff + 20, 4);
            if (shnum == 0)
                shnum = 1;
        }
        /* At most 2^32 entries of 64 bytes: the product cannot overflow. */
        if (shnum > UINT32_MAX)
            return -EPROTO;
        extend(&end, shoff, shnum * sh_want);
        if (!in_file(&b, shoff, shnum * sh_want))
            return past_cap(end, ret_end);
        for (uint64_t i = 0; i < shnum; i++) {
            uint64_t sh = shoff + i * sh_want;
            if (rd(&b, sh + 4, 4) == SHT_NOBITS)
                continue;
            extend(&end, b.is_64 ? rd(&b, sh + 24, 8) : rd(&b, sh + 16, 4),
                   b.is_64 ? rd(&b, sh + 32, 8) : rd(&b, sh + 20, 4));
        }
    }
    *ret_end = end;
    return 1;
}
