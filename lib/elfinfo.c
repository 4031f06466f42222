/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounded ELF reader. It runs on the target's executable (/proc/<pid>/exe), which the target
 * controls, so it is written as a parser of hostile bytes: every read goes through rd() with an
 * explicit bounds check, sizes are compared without overflow, loops have caps, and nothing is
 * taken from section headers. It supports both classes and both byte orders so that a foreign
 * file is described correctly rather than misread.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "elfinfo.h"

struct elf_buf {
    const uint8_t *p;
    size_t len;
    bool is_64, big_endian;
};

/* True when [off, off + size) lies inside the buffer. */
static bool in_bounds(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    return off <= b->len && size <= b->len - off;
}

/* Reads an unsigned integer of `size` bytes at `off`; callers check bounds first. */
static uint64_t rd(const struct elf_buf *b, uint64_t off, unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < size; i++) {
        unsigned shift = b->big_endian ? 8 * (size - 1 - i) : 8 * i;
        v |= (uint64_t)b->p[off + i] << shift;
    }
    return v;
}

/* Word-sized field: 4 bytes in ELF32, 8 in ELF64 (addresses, offsets, sizes, d_val). */
static uint64_t rdw(const struct elf_buf *b, uint64_t off)
{
    return rd(b, off, b->is_64 ? 8 : 4);
}

struct phdr {
    uint32_t type;
    uint64_t offset, vaddr, filesz;
};

static void read_phdr(const struct elf_buf *b, uint64_t off, struct phdr *ph)
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

static enum rid_arch arch_of(uint16_t machine, bool is_64)
{
    /* A machine paired with the other class (EM_X86_64 in ELFCLASS32 is x32) is not a
     * runtime we ship a build for. */
    switch (machine) {
    case EM_X86_64: return is_64 ? RID_ARCH_X64 : RID_ARCH_UNKNOWN;
    case EM_AARCH64: return is_64 ? RID_ARCH_ARM64 : RID_ARCH_UNKNOWN;
    case EM_ARM: return is_64 ? RID_ARCH_UNKNOWN : RID_ARCH_ARM;
    case EM_386: return is_64 ? RID_ARCH_UNKNOWN : RID_ARCH_X86;
    default: return RID_ARCH_UNKNOWN;
    }
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The libc a DT_NEEDED name or an interpreter path (its last component) points to. glibc's
 * SONAME is libc.so.6 on every architecture we know of; musl's is libc.musl-<arch>.so.1 on
 * Alpine, and plain "libc.so" for anything linked with musl-gcc (which glibc never uses as a
 * SONAME: its libc.so is a linker script). */
static enum rid_libc libc_of_name(const char *path)
{
    const char *name = strrchr(path, '/');

    name = name ? name + 1 : path;
    if (strcmp(name, "libc.so.6") == 0 || has_prefix(name, "ld-linux"))
        return RID_LIBC_GLIBC;
    if (strcmp(name, "libc.so") == 0 || has_prefix(name, "libc.musl-") ||
        has_prefix(name, "ld-musl-"))
        return RID_LIBC_MUSL;
    return RID_LIBC_UNKNOWN;
}

/* Folds one more libc vote into *acc; disagreement sticks as a conflict. */
static void vote(enum rid_libc v, enum rid_libc *acc, bool *conflict)
{
    if (v == RID_LIBC_UNKNOWN)
        return;
    if (*acc != RID_LIBC_UNKNOWN && *acc != v)
        *conflict = true;
    *acc = v;
}

/* Maps a virtual address range to a file offset through the PT_LOAD segments, as the loader
 * would; only bytes backed by the file (p_filesz) count. Returns 0 or -EPROTO. */
static int vaddr_to_off(const struct elf_buf *b, const struct phdr *loads, size_t n_loads,
                        uint64_t vaddr, uint64_t size, uint64_t *ret_off)
{
    for (size_t i = 0; i < n_loads; i++) {
        const struct phdr *ph = &loads[i];
        if (vaddr < ph->vaddr || vaddr - ph->vaddr >= ph->filesz)
            continue;
        if (size > ph->filesz - (vaddr - ph->vaddr))
            return -EPROTO;
        if (ph->offset > UINT64_MAX - (vaddr - ph->vaddr))
            return -EPROTO;
        *ret_off = ph->offset + (vaddr - ph->vaddr);
        return in_bounds(b, *ret_off, size) ? 0 : -EPROTO;
    }
    return -EPROTO;
}

/* Walks the dynamic section: DT_NEEDED names vote on the libc, DT_FLAGS_1 tells a PIE. */
static int parse_dynamic(const struct elf_buf *b, const struct phdr *dyn, const struct phdr *loads,
                         size_t n_loads, enum rid_libc *libc, bool *conflict, bool *is_pie,
                         struct cla_error *e)
{
    uint64_t needed[ELF_MAX_NEEDED];
    size_t n_needed = 0, n_entries;
    uint64_t strtab = 0, strsz = 0, str_off = 0;
    bool have_strtab = false, have_strsz = false, have_null = false;
    unsigned ent = b->is_64 ? 16 : 8;

    if (!in_bounds(b, dyn->offset, dyn->filesz))
        return err_set(e, -EPROTO, "elf: PT_DYNAMIC outside the file");
    n_entries = (size_t)(dyn->filesz / ent);
    if (n_entries > ELF_MAX_DYN_ENTRIES)
        n_entries = ELF_MAX_DYN_ENTRIES + 1; /* seen as over the cap below unless DT_NULL */

    for (size_t i = 0; i < n_entries; i++) {
        uint64_t off = dyn->offset + (uint64_t)i * ent;
        uint64_t tag, val;

        if (i == ELF_MAX_DYN_ENTRIES)
            return err_set(e, -EPROTO, "elf: more than %d dynamic entries", ELF_MAX_DYN_ENTRIES);
        tag = rdw(b, off);
        val = rdw(b, off + ent / 2);
        if (tag == DT_NULL) {
            have_null = true;
            break;
        }
        switch (tag) {
        case DT_NEEDED:
            if (n_needed == ELF_MAX_NEEDED)
                return err_set(e, -EPROTO, "elf: more than %d DT_NEEDED entries", ELF_MAX_NEEDED);
            needed[n_needed++] = val;
            break;
        case DT_STRTAB:
            strtab = val;
            have_strtab = true;
            break;
        case DT_STRSZ:
            strsz = val;
            have_strsz = true;
            break;
        case DT_FLAGS_1: *is_pie = (val & DF_1_PIE) != 0; break;
        default: break;
        }
    }
    /* The loader stops at DT_NULL; a table that runs off its segment without one is corrupt. */
    if (!have_null)
        return err_set(e, -EPROTO, "elf: dynamic section without DT_NULL");
    if (n_needed == 0)
        return 0;
    if (!have_strtab || !have_strsz)
        return err_set(e, -EPROTO, "elf: DT_NEEDED without DT_STRTAB/DT_STRSZ");
    if (vaddr_to_off(b, loads, n_loads, strtab, strsz, &str_off) < 0)
        return err_set(e, -EPROTO, "elf: DT_STRTAB 0x%llx+%llu not in a loaded file range",
                       (unsigned long long)strtab, (unsigned long long)strsz);

    for (size_t i = 0; i < n_needed; i++) {
        const char *s;
        size_t max;

        if (needed[i] >= strsz)
            return err_set(e, -EPROTO, "elf: DT_NEEDED offset %llu beyond DT_STRSZ",
                           (unsigned long long)needed[i]);
        s = (const char *)b->p + str_off + needed[i];
        /* The name must end inside the string table: memchr never looks past it. */
        max = (size_t)(strsz - needed[i]);
        if (!memchr(s, '\0', max))
            return err_set(e, -EPROTO, "elf: unterminated DT_NEEDED name");
        vote(libc_of_name(s), libc, conflict);
    }
    return 0;
}

int elfinfo_parse(const uint8_t *buf, size_t len, struct elf_info *ret, struct cla_error *e)
{
    struct elf_buf b = {.p = buf, .len = len};
    struct elf_info info = {0};
    struct phdr loads[ELF_MAX_PHDRS], dyn = {0}, interp = {0};
    size_t n_loads = 0;
    bool have_dyn = false, have_interp = false, is_pie = false, conflict = false;
    uint64_t phoff, ehsize;
    unsigned phentsize, phnum, type;
    enum rid_libc libc = RID_LIBC_UNKNOWN;
    int r;

    if (!buf || len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0)
        return err_set(e, -ENOEXEC, "elf: not an ELF file");
    if (buf[EI_CLASS] != ELFCLASS32 && buf[EI_CLASS] != ELFCLASS64)
        return err_set(e, -EPROTO, "elf: bad class %u", buf[EI_CLASS]);
    if (buf[EI_DATA] != ELFDATA2LSB && buf[EI_DATA] != ELFDATA2MSB)
        return err_set(e, -EPROTO, "elf: bad byte order %u", buf[EI_DATA]);
    if (buf[EI_VERSION] != EV_CURRENT)
        return err_set(e, -EPROTO, "elf: bad version %u", buf[EI_VERSION]);
    b.is_64 = buf[EI_CLASS] == ELFCLASS64;
    b.big_endian = buf[EI_DATA] == ELFDATA2MSB;
    ehsize = b.is_64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    if (len < ehsize)
        return err_set(e, -EPROTO, "elf: truncated header (%zu bytes)", len);

    type = (unsigned)rd(&b, 16, 2);
    info.is_64 = b.is_64;
    info.arch = arch_of((uint16_t)rd(&b, 18, 2), b.is_64);
    if (type != ET_EXEC && type != ET_DYN)
        return err_set(e, -EPROTO, "elf: type %u is neither an executable nor a shared object",
                       type);
    phoff = b.is_64 ? rd(&b, 32, 8) : rd(&b, 28, 4);
    phentsize = (unsigned)rd(&b, b.is_64 ? 54 : 42, 2);
    phnum = (unsigned)rd(&b, b.is_64 ? 56 : 44, 2);

    /* PN_XNUM (0xffff) moves the real count into section 0; no loadable file needs it, and the
     * kernel refuses program headers above 64 KiB anyway. */
    if (phnum == 0 || phnum > ELF_MAX_PHDRS)
        return err_set(e, -EPROTO, "elf: %u program headers (1..%d allowed)", phnum, ELF_MAX_PHDRS);
    if (phentsize != (b.is_64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
        return err_set(e, -EPROTO, "elf: program header size %u", phentsize);
    if (!in_bounds(&b, phoff, (uint64_t)phnum * phentsize))
        return err_set(e, -EPROTO, "elf: program headers outside the file");

    for (unsigned i = 0; i < phnum; i++) {
        struct phdr ph;

        read_phdr(&b, phoff + (uint64_t)i * phentsize, &ph);
        if (ph.type == PT_LOAD) {
            loads[n_loads++] = ph;
        } else if (ph.type == PT_DYNAMIC || ph.type == PT_INTERP) {
            /* Two of either is ambiguous (which one does the loader use?): refuse. */
            if (ph.type == PT_DYNAMIC ? have_dyn : have_interp)
                return err_set(e, -EPROTO, "elf: repeated %s",
                               ph.type == PT_DYNAMIC ? "PT_DYNAMIC" : "PT_INTERP");
            if (ph.type == PT_DYNAMIC) {
                dyn = ph;
                have_dyn = true;
            } else {
                interp = ph;
                have_interp = true;
            }
        }
    }

    if (have_interp) {
        const char *s, *nul;

        if (!in_bounds(&b, interp.offset, interp.filesz) || interp.filesz == 0)
            return err_set(e, -EPROTO, "elf: PT_INTERP outside the file");
        s = (const char *)buf + interp.offset; /* only formed once known to be in bounds */
        nul = memchr(s, '\0', (size_t)interp.filesz);
        if (!nul)
            return err_set(e, -EPROTO, "elf: unterminated PT_INTERP");
        if (nul == s || (size_t)(nul - s) > ELF_INTERP_MAX)
            return err_set(e, -EPROTO, "elf: PT_INTERP of %zu bytes (1..%d allowed)",
                           (size_t)(nul - s), ELF_INTERP_MAX);
        memcpy(info.interp, s, (size_t)(nul - s));
        vote(libc_of_name(info.interp), &libc, &conflict);
    }
    if (have_dyn) {
        r = parse_dynamic(&b, &dyn, loads, n_loads, &libc, &conflict, &is_pie, e);
        if (r < 0)
            return r;
    }

    /* A file asking for both C libraries cannot load under either as built; say "unknown"
     * rather than pick one, so the caller falls back to another source. */
    info.libc = conflict ? RID_LIBC_UNKNOWN : libc;
    info.is_shared_object = type == ET_DYN && !have_interp && !is_pie;
    *ret = info;
    return 0;
}
