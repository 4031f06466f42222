/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounded ELF reader. It runs on the target's executable (/proc/<pid>/exe), which the target
 * controls, so it is written as a parser of hostile bytes: every read goes through rd() with an
 * explicit bounds check, sizes are compared without overflow, loops have caps, and nothing is
 * taken from section headers. It supports both classes and both byte orders so that a foreign
 * file is described correctly rather than misread.
 *
 * The same checks serve a file that is only partly read (elffile.c): each one that admits bytes
 * into a read also asks whether their chunks are present. A chunk that is not ends the parse in
 * -EAGAIN naming it, however the parser went on from the refusal, so a partial parse either asks
 * for more or gives exactly what the whole file gives.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "profset/elfinfo.h"

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
static bool in_file(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    return off <= b->len && size <= b->len - off;
}

static bool chunk_present(const struct elf_buf *b, uint64_t i)
{
    return (b->part->c->present[i / 8] >> (i % 8)) & 1;
}

/* Are the bytes of [off, off + size), inside the file, present? The first absent chunk asked for
 * is remembered: the parse ends in -EAGAIN whatever it made of the refusal. */
static bool present(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    if (!b->part || size == 0)
        return true;
    unsigned shift = b->part->c->shift;
    for (uint64_t i = off >> shift, last = (off + size - 1) >> shift; i <= last; i++) {
        if (!chunk_present(b, i)) {
            if (!b->part->missing) {
                b->part->missing = true;
                b->part->missing_off = i << shift;
            }
            return false;
        }
    }
    return true;
}

/* True when [off, off + size) lies inside the file and is present: what every read needs. */
static bool in_bounds(const struct elf_buf *b, uint64_t off, uint64_t size)
{
    return in_file(b, off, size) && present(b, off, size);
}

/* The first NUL of [off, off + max) (inside the file), or NULL when there is none or an absent
 * chunk comes first: only the chunks up to the terminator need to be present. */
static const char *find_nul(const struct elf_buf *b, uint64_t off, uint64_t max)
{
    const char *base = (const char *)b->p;
    if (!b->part)
        return memchr(base + off, '\0', (size_t)max);
    uint64_t end = off + max, chunk = 1ULL << b->part->c->shift;
    while (off < end) {
        uint64_t stop = (off | (chunk - 1)) + 1;
        if (stop > end)
            stop = end;
        if (!present(b, off, stop - off))
            return NULL;
        const char *nul = memchr(base + off, '\0', (size_t)(stop - off));
        if (nul)
            return nul;
        off = stop;
    }
    return NULL;
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
 * would; only bytes backed by the file (p_filesz) count. Returns 0 or -EPROTO. The range is in
 * the file; whoever reads it asks for the bytes it reads to be present. */
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
        return in_file(b, *ret_off, size) ? 0 : -EPROTO;
    }
    return -EPROTO;
}

/* The dynamic table entries the rest of the reader needs, collected in one pass. */
struct dyn_tags {
    uint64_t needed[ELF_MAX_NEEDED];
    size_t n_needed;
    uint64_t strtab, strsz, symtab, syment, hash, gnu_hash, runpath, rpath, soname;
    bool have_strtab, have_strsz, have_symtab, have_hash, have_gnu_hash, have_runpath, have_rpath,
        have_soname;
};

static int collect_dynamic(const struct elf_buf *b, const struct phdr *dyn, struct dyn_tags *t,
                           bool *is_pie, struct cla_error *e)
{
    unsigned ent = b->is_64 ? 16 : 8;
    size_t n_entries;

    if (!in_file(b, dyn->offset, dyn->filesz))
        return err_set(e, -EPROTO, "elf: PT_DYNAMIC outside the file");
    n_entries = (size_t)(dyn->filesz / ent);
    if (n_entries > ELF_MAX_DYN_ENTRIES)
        n_entries = ELF_MAX_DYN_ENTRIES + 1; /* seen as over the cap below unless DT_NULL */

    for (size_t i = 0; i < n_entries; i++) {
        uint64_t off = dyn->offset + (uint64_t)i * ent;
        uint64_t tag, val;

        if (i == ELF_MAX_DYN_ENTRIES)
            return err_set(e, -EPROTO, "elf: more than %d dynamic entries", ELF_MAX_DYN_ENTRIES);
        if (!present(b, off, ent))
            return -EAGAIN;
        tag = rdw(b, off);
        val = rdw(b, off + ent / 2);
        switch (tag) {
        case DT_NULL: return 0;
        case DT_NEEDED:
            if (t->n_needed == ELF_MAX_NEEDED)
                return err_set(e, -EPROTO, "elf: more than %d DT_NEEDED entries", ELF_MAX_NEEDED);
            t->needed[t->n_needed++] = val;
            break;
        case DT_STRTAB: t->strtab = val, t->have_strtab = true; break;
        case DT_STRSZ: t->strsz = val, t->have_strsz = true; break;
        case DT_SYMTAB: t->symtab = val, t->have_symtab = true; break;
        case DT_SYMENT: t->syment = val; break;
        case DT_HASH: t->hash = val, t->have_hash = true; break;
        case DT_GNU_HASH: t->gnu_hash = val, t->have_gnu_hash = true; break;
        case DT_RUNPATH: t->runpath = val, t->have_runpath = true; break;
        case DT_RPATH: t->rpath = val, t->have_rpath = true; break;
        case DT_SONAME: t->soname = val, t->have_soname = true; break;
        case DT_FLAGS_1: *is_pie = (val & DF_1_PIE) != 0; break;
        default: break;
        }
    }
    /* The loader stops at DT_NULL; a table that runs off its segment without one is corrupt. */
    return err_set(e, -EPROTO, "elf: dynamic section without DT_NULL");
}

/* A string of the dynamic string table (file offset str_off, strsz bytes), or NULL when the
 * offset is outside it or the string does not end inside it. */
static const char *dyn_string(const struct elf_buf *b, uint64_t str_off, uint64_t strsz,
                              uint64_t at)
{
    if (at >= strsz)
        return NULL;
    return find_nul(b, str_off + at, strsz - at) ? (const char *)b->p + str_off + at : NULL;
}

struct symtab {
    const struct elf_buf *b;
    const struct phdr *loads;
    size_t n_loads;
    uint64_t symtab, syment, str_off, strsz;
};

/* Is symbol `idx` a definition of `name` that dlsym() would return? 1 yes, 0 no, -EPROTO when
 * the entry lies outside the file. */
static int sym_matches(const struct symtab *st, uint64_t idx, const char *name)
{
    const struct elf_buf *b = st->b;
    uint64_t off;
    if (idx > (UINT64_MAX - st->syment) / st->syment ||
        vaddr_to_off(b, st->loads, st->n_loads, st->symtab + idx * st->syment, st->syment, &off) <
            0 ||
        !present(b, off, st->syment))
        return -EPROTO;
    uint32_t st_name = (uint32_t)rd(b, off, 4);
    unsigned info = (unsigned)rd(b, off + (b->is_64 ? 4 : 12), 1);
    unsigned other = (unsigned)rd(b, off + (b->is_64 ? 5 : 13), 1);
    unsigned shndx = (unsigned)rd(b, off + (b->is_64 ? 6 : 14), 2);
    unsigned bind = info >> 4, type = info & 0xf, vis = other & 0x3;
    const char *s = dyn_string(b, st->str_off, st->strsz, st_name);
    if (!s)
        return -EPROTO;
    if (strcmp(s, name) != 0 || shndx == SHN_UNDEF)
        return 0;
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
        return 0;
    if (type != STT_FUNC && type != STT_NOTYPE && type != STT_GNU_IFUNC)
        return 0;
    return vis == STV_DEFAULT || vis == STV_PROTECTED;
}

/* Reads a 32-bit word of a hash table at table file offset `base` + 4 * i. */
static int hash_word(const struct elf_buf *b, uint64_t base, uint64_t i, uint32_t *ret)
{
    if (i > UINT64_MAX / 4 - base / 4 || !in_bounds(b, base + 4 * i, 4))
        return -EPROTO;
    *ret = (uint32_t)rd(b, base + 4 * i, 4);
    return 0;
}

/* dlsym()'s lookup through DT_GNU_HASH: bloom filter, bucket, then the chain of equal hashes. */
static int lookup_gnu(const struct symtab *st, uint64_t table, const char *name)
{
    const struct elf_buf *b = st->b;
    uint32_t h = 5381, nbuckets, symoffset, bloom_size, bloom_shift, bucket, chain;
    for (const char *p = name; *p; p++)
        h = h * 33 + (uint8_t)*p;
    uint64_t base;
    /* The header, then at least the bloom word we need, all inside one loaded range. */
    if (vaddr_to_off(b, st->loads, st->n_loads, table, 16, &base) < 0 || !present(b, base, 16))
        return -EPROTO;
    nbuckets = (uint32_t)rd(b, base, 4);
    symoffset = (uint32_t)rd(b, base + 4, 4);
    bloom_size = (uint32_t)rd(b, base + 8, 4);
    bloom_shift = (uint32_t)rd(b, base + 12, 4);
    if (nbuckets == 0 || bloom_size == 0 || (bloom_size & (bloom_size - 1)) != 0)
        return -EPROTO;
    unsigned wbits = b->is_64 ? 64 : 32, wbytes = wbits / 8;
    uint64_t bloom = base + 16,
             word_off = bloom + (uint64_t)((h / wbits) & (bloom_size - 1)) * wbytes;
    if (!in_bounds(b, word_off, wbytes))
        return -EPROTO;
    uint64_t word = rd(b, word_off, wbytes);
    uint64_t mask = (1ULL << (h % wbits)) | (1ULL << ((h >> (bloom_shift % 32)) % wbits));
    if ((word & mask) != mask)
        return 0;
    uint64_t buckets = bloom + (uint64_t)bloom_size * wbytes;
    uint64_t chains = buckets + (uint64_t)nbuckets * 4;
    if (hash_word(b, buckets, h % nbuckets, &bucket) < 0)
        return -EPROTO;
    if (bucket == 0)
        return 0;
    if (bucket < symoffset)
        return -EPROTO;
    for (uint64_t i = bucket, steps = 0; steps < ELF_MAX_HASH_STEPS; i++, steps++) {
        if (hash_word(b, chains, i - symoffset, &chain) < 0)
            return -EPROTO;
        if ((chain | 1) == (h | 1)) {
            int m = sym_matches(st, i, name);
            if (m != 0)
                return m;
        }
        if (chain & 1)
            return 0;
    }
    return -EPROTO;
}

/* The same through the classic DT_HASH table (older linkers, --hash-style=sysv). */
static int lookup_sysv(const struct symtab *st, uint64_t table, const char *name)
{
    const struct elf_buf *b = st->b;
    uint32_t h = 0, nbucket, nchain, idx;
    for (const char *p = name; *p; p++) {
        h = (h << 4) + (uint8_t)*p;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    uint64_t base;
    if (vaddr_to_off(b, st->loads, st->n_loads, table, 8, &base) < 0 || !present(b, base, 8))
        return -EPROTO;
    nbucket = (uint32_t)rd(b, base, 4);
    nchain = (uint32_t)rd(b, base + 4, 4);
    if (nbucket == 0)
        return -EPROTO;
    if (hash_word(b, base + 8, h % nbucket, &idx) < 0)
        return -EPROTO;
    uint64_t chains = base + 8 + (uint64_t)nbucket * 4;
    for (unsigned steps = 0; idx != STN_UNDEF; steps++) {
        if (steps == ELF_MAX_HASH_STEPS || idx >= nchain)
            return -EPROTO;
        int m = sym_matches(st, idx, name);
        if (m != 0)
            return m;
        if (hash_word(b, chains, idx, &idx) < 0)
            return -EPROTO;
    }
    return 0;
}

/* Copies the DT_NEEDED names (each voting on the libc), the run path and the SONAME out of the
 * string table at file offset str_off. */
static int take_names(const struct elf_buf *b, const struct dyn_tags *t, uint64_t str_off,
                      struct elf_info *info, enum rid_libc *libc, bool *conflict,
                      struct cla_error *e)
{
    size_t used = 0;
    for (size_t i = 0; i < t->n_needed; i++) {
        const char *s = dyn_string(b, str_off, t->strsz, t->needed[i]);
        if (!s)
            return err_set(e, -EPROTO, "elf: DT_NEEDED name outside DT_STRSZ or unterminated");
        vote(libc_of_name(s), libc, conflict);
        size_t n = strlen(s) + 1;
        if (n > sizeof(info->needed) - used)
            return err_set(e, -EPROTO, "elf: DT_NEEDED names exceed %d bytes", ELF_NEEDED_BYTES);
        memcpy(info->needed + used, s, n);
        used += n;
        info->n_needed++;
    }
    /* The loader ignores DT_RPATH when DT_RUNPATH is present. */
    if (t->have_runpath || t->have_rpath) {
        const char *s = dyn_string(b, str_off, t->strsz, t->have_runpath ? t->runpath : t->rpath);
        if (!s || strlen(s) > ELF_RUNPATH_MAX)
            return err_set(e, -EPROTO, "elf: %s outside DT_STRSZ or over %d bytes",
                           t->have_runpath ? "DT_RUNPATH" : "DT_RPATH", ELF_RUNPATH_MAX);
        memcpy(info->runpath, s, strlen(s) + 1);
        info->runpath_is_rpath = !t->have_runpath;
    }
    if (t->have_soname) {
        const char *s = dyn_string(b, str_off, t->strsz, t->soname);
        if (!s || strlen(s) > ELF_SONAME_MAX)
            return err_set(e, -EPROTO, "elf: DT_SONAME outside DT_STRSZ or over %d bytes",
                           ELF_SONAME_MAX);
        memcpy(info->soname, s, strlen(s) + 1);
    }
    return 0;
}

/* Does the file export DllGetClassObject as dlsym() would find it? 1 yes, 0 no (or no symbol
 * hash table to look in), -EPROTO for a malformed table. */
static int find_class_factory(const struct elf_buf *b, const struct dyn_tags *t, uint64_t str_off,
                              const struct phdr *loads, size_t n_loads, struct cla_error *e)
{
    if (!t->have_symtab || (!t->have_gnu_hash && !t->have_hash))
        return 0;
    struct symtab st = {.b = b,
                        .loads = loads,
                        .n_loads = n_loads,
                        .symtab = t->symtab,
                        .syment = t->syment ? t->syment : (b->is_64 ? 24 : 16),
                        .str_off = str_off,
                        .strsz = t->strsz};
    if (st.syment != (b->is_64 ? 24u : 16u))
        return err_set(e, -EPROTO, "elf: DT_SYMENT %llu", (unsigned long long)st.syment);
    /* glibc prefers DT_GNU_HASH when both are present; so do we. */
    int r = t->have_gnu_hash ? lookup_gnu(&st, t->gnu_hash, "DllGetClassObject")
                             : lookup_sysv(&st, t->hash, "DllGetClassObject");
    if (r < 0)
        return err_set(e, -EPROTO, "elf: malformed %s symbol hash table",
                       t->have_gnu_hash ? "DT_GNU_HASH" : "DT_HASH");
    return r;
}

/* Walks the dynamic section: DT_NEEDED names vote on the libc and are kept with the run path,
 * DT_FLAGS_1 tells a PIE, the symbol hash tables tell whether DllGetClassObject is exported.
 * Every address in it is a virtual one, read only through the PT_LOAD segments. */
static int parse_dynamic(const struct elf_buf *b, const struct phdr *dyn, const struct phdr *loads,
                         size_t n_loads, struct elf_info *info, enum rid_libc *libc, bool *conflict,
                         bool *is_pie, struct cla_error *e)
{
    struct dyn_tags t = {0};
    uint64_t str_off = 0;
    int r = collect_dynamic(b, dyn, &t, is_pie, e);
    if (r < 0)
        return r;
    bool need_strings = t.n_needed > 0 || t.have_runpath || t.have_rpath || t.have_soname;
    if (!need_strings && !t.have_symtab)
        return 0;
    if (!t.have_strtab || !t.have_strsz) {
        if (!need_strings)
            return 0; /* a symbol table without names cannot export anything */
        return err_set(e, -EPROTO,
                       "elf: DT_NEEDED, DT_RUNPATH or DT_SONAME without DT_STRTAB/DT_STRSZ");
    }
    if (vaddr_to_off(b, loads, n_loads, t.strtab, t.strsz, &str_off) < 0)
        return err_set(e, -EPROTO, "elf: DT_STRTAB 0x%llx+%llu not in a loaded file range",
                       (unsigned long long)t.strtab, (unsigned long long)t.strsz);
    if ((r = take_names(b, &t, str_off, info, libc, conflict, e)) < 0)
        return r;
    if ((r = find_class_factory(b, &t, str_off, loads, n_loads, e)) < 0)
        return r;
    info->exports_class_factory = r == 1;
    return 0;
}

const char *elfinfo_needed(const struct elf_info *info, unsigned i)
{
    if (i >= info->n_needed)
        return NULL;
    const char *p = info->needed;
    for (unsigned k = 0; k < i; k++)
        p += strlen(p) + 1;
    return p;
}

/* Where the program headers are, and what kind of file this is, from the ELF header. */
struct ehdr {
    unsigned type, phentsize, phnum;
    uint64_t phoff;
};

/* Checks the identification bytes and the header; sets the class and byte order in *b that
 * every later read depends on. */
static int parse_header(struct elf_buf *b, struct ehdr *h, struct elf_info *info,
                        struct cla_error *e)
{
    const uint8_t *buf = b->p;
    if (!buf || b->len < EI_NIDENT)
        return err_set(e, -ENOEXEC, "elf: not an ELF file");
    if (!present(b, 0, EI_NIDENT))
        return -EAGAIN;
    if (memcmp(buf, ELFMAG, SELFMAG) != 0)
        return err_set(e, -ENOEXEC, "elf: not an ELF file");
    if (buf[EI_CLASS] != ELFCLASS32 && buf[EI_CLASS] != ELFCLASS64)
        return err_set(e, -EPROTO, "elf: bad class %u", buf[EI_CLASS]);
    if (buf[EI_DATA] != ELFDATA2LSB && buf[EI_DATA] != ELFDATA2MSB)
        return err_set(e, -EPROTO, "elf: bad byte order %u", buf[EI_DATA]);
    if (buf[EI_VERSION] != EV_CURRENT)
        return err_set(e, -EPROTO, "elf: bad version %u", buf[EI_VERSION]);
    b->is_64 = buf[EI_CLASS] == ELFCLASS64;
    b->big_endian = buf[EI_DATA] == ELFDATA2MSB;
    uint64_t ehsize = b->is_64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    if (b->len < ehsize)
        return err_set(e, -EPROTO, "elf: truncated header (%zu bytes)", b->len);
    if (!present(b, 0, ehsize))
        return -EAGAIN;

    h->type = (unsigned)rd(b, 16, 2);
    info->is_64 = b->is_64;
    info->arch = arch_of((uint16_t)rd(b, 18, 2), b->is_64);
    if (h->type != ET_EXEC && h->type != ET_DYN)
        return err_set(e, -EPROTO, "elf: type %u is neither an executable nor a shared object",
                       h->type);
    h->phoff = b->is_64 ? rd(b, 32, 8) : rd(b, 28, 4);
    h->phentsize = (unsigned)rd(b, b->is_64 ? 54 : 42, 2);
    h->phnum = (unsigned)rd(b, b->is_64 ? 56 : 44, 2);
    return 0;
}

/* The segments the reader uses: PT_LOAD (to map addresses to offsets), PT_DYNAMIC, PT_INTERP. */
struct segments {
    struct phdr loads[ELF_MAX_PHDRS];
    size_t n_loads;
    struct phdr dyn, interp;
    bool have_dyn, have_interp;
};

static int read_segments(const struct elf_buf *b, const struct ehdr *h, struct segments *sg,
                         struct cla_error *e)
{
    /* PN_XNUM (0xffff) moves the real count into section 0; no loadable file needs it, and the
     * kernel refuses program headers above 64 KiB anyway. */
    if (h->phnum == 0 || h->phnum > ELF_MAX_PHDRS)
        return err_set(e, -EPROTO, "elf: %u program headers (1..%d allowed)", h->phnum,
                       ELF_MAX_PHDRS);
    if (h->phentsize != (b->is_64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
        return err_set(e, -EPROTO, "elf: program header size %u", h->phentsize);
    if (!in_bounds(b, h->phoff, (uint64_t)h->phnum * h->phentsize))
        return err_set(e, -EPROTO, "elf: program headers outside the file");

    for (unsigned i = 0; i < h->phnum; i++) {
        struct phdr ph;

        read_phdr(b, h->phoff + (uint64_t)i * h->phentsize, &ph);
        if (ph.type == PT_LOAD) {
            sg->loads[sg->n_loads++] = ph;
        } else if (ph.type == PT_DYNAMIC || ph.type == PT_INTERP) {
            /* Two of either is ambiguous (which one does the loader use?): refuse. */
            if (ph.type == PT_DYNAMIC ? sg->have_dyn : sg->have_interp)
                return err_set(e, -EPROTO, "elf: repeated %s",
                               ph.type == PT_DYNAMIC ? "PT_DYNAMIC" : "PT_INTERP");
            if (ph.type == PT_DYNAMIC) {
                sg->dyn = ph;
                sg->have_dyn = true;
            } else {
                sg->interp = ph;
                sg->have_interp = true;
            }
        }
    }
    return 0;
}

/* The interpreter's path, which votes on the libc like a DT_NEEDED name. */
static int take_interp(const struct elf_buf *b, const struct phdr *interp, struct elf_info *info,
                       enum rid_libc *libc, bool *conflict, struct cla_error *e)
{
    if (!in_file(b, interp->offset, interp->filesz) || interp->filesz == 0)
        return err_set(e, -EPROTO, "elf: PT_INTERP outside the file");
    const char *s = (const char *)b->p + interp->offset; /* formed once known to be in bounds */
    const char *nul = find_nul(b, interp->offset, interp->filesz);
    if (!nul)
        return err_set(e, -EPROTO, "elf: unterminated PT_INTERP");
    if (nul == s || (size_t)(nul - s) > ELF_INTERP_MAX)
        return err_set(e, -EPROTO, "elf: PT_INTERP of %zu bytes (1..%d allowed)", (size_t)(nul - s),
                       ELF_INTERP_MAX);
    memcpy(info->interp, s, (size_t)(nul - s));
    vote(libc_of_name(info->interp), libc, conflict);
    return 0;
}

/* The whole parse of `b`; *ret is filled only on success. */
static int parse(struct elf_buf *b, struct elf_info *ret, struct cla_error *e)
{
    struct elf_info info = {0};
    struct ehdr h = {0};
    struct segments sg = {0};
    bool is_pie = false, conflict = false;
    enum rid_libc libc = RID_LIBC_UNKNOWN;
    int r;

    /* The header fixes the class and byte order every later read uses; the program headers
     * locate the rest, and the dynamic section is reached only through the PT_LOAD segments. */
    if ((r = parse_header(b, &h, &info, e)) < 0 || (r = read_segments(b, &h, &sg, e)) < 0)
        return r;
    if (sg.have_interp && (r = take_interp(b, &sg.interp, &info, &libc, &conflict, e)) < 0)
        return r;
    if (sg.have_dyn && (r = parse_dynamic(b, &sg.dyn, sg.loads, sg.n_loads, &info, &libc, &conflict,
                                          &is_pie, e)) < 0)
        return r;

    /* A file asking for both C libraries cannot load under either as built; say "unknown"
     * rather than pick one, so the caller falls back to another source. */
    info.libc = conflict ? RID_LIBC_UNKNOWN : libc;
    info.is_shared_object = h.type == ET_DYN && !sg.have_interp && !is_pie;
    *ret = info;
    return 0;
}

int elfinfo_parse(const uint8_t *buf, size_t len, struct elf_info *ret, struct cla_error *e)
{
    struct elf_buf b = {.p = buf, .len = len};
    struct elf_info info;
    int r = parse(&b, &info, e);
    if (r == 0)
        *ret = info;
    return r;
}

int elfinfo_parse_chunks(const uint8_t *buf, size_t len, const struct elf_chunks *c,
                         struct elf_info *ret, uint64_t *ret_missing, struct cla_error *e)
{
    if (c->shift > ELF_CHUNK_SHIFT_MAX)
        return err_set(e, -EINVAL, "elf: chunks of 2^%u bytes", c->shift);
    struct partial part = {.c = c};
    struct elf_buf b = {.p = buf, .len = len, .part = &part};
    struct elf_info info;
    int r = parse(&b, &info, e);
    if (part.missing) {
        *ret_missing = part.missing_off;
        return err_set(e, -EAGAIN, "elf: the bytes at offset %llu are not read yet",
                       (unsigned long long)part.missing_off);
    }
    if (r == 0)
        *ret = info;
    return r;
}

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

bool elfinfo_equal(const struct elf_info *a, const struct elf_info *b)
{
    size_t needed = 0;
    for (unsigned i = 0; i < a->n_needed; i++)
        needed += strlen(a->needed + needed) + 1;
    return a->arch == b->arch && a->is_64 == b->is_64 &&
           a->is_shared_object == b->is_shared_object && a->libc == b->libc &&
           strcmp(a->interp, b->interp) == 0 && a->n_needed == b->n_needed &&
           memcmp(a->needed, b->needed, needed) == 0 && strcmp(a->runpath, b->runpath) == 0 &&
           a->runpath_is_rpath == b->runpath_is_rpath && strcmp(a->soname, b->soname) == 0 &&
           a->exports_class_factory == b->exports_class_factory;
}
