/* SPDX-License-Identifier: Apache-2.0 */
/* The dynamic section's readers: its tags collected, the DT_NEEDED names, run path and SONAME
 * copied from its string table, and DllGetClassObject looked up through the symbol hash tables
 * as dlsym() would; every address reached only through the PT_LOAD segments. */
#include "profset/elfinfo_internal.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

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
        if (!elfinfo_present(b, off, ent))
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
    return elfinfo_find_nul(b, str_off + at, strsz - at) ? (const char *)b->p + str_off + at : NULL;
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
        !elfinfo_present(b, off, st->syment))
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
    if (vaddr_to_off(b, st->loads, st->n_loads, table, 16, &base) < 0 ||
        !elfinfo_present(b, base, 16))
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
    if (vaddr_to_off(b, st->loads, st->n_loads, table, 8, &base) < 0 ||
        !elfinfo_present(b, base, 8))
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
        elfinfo_vote(elfinfo_libc_of_name(s), libc, conflict);
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
int elfinfo_parse_dynamic(const struct elf_buf *b, const struct phdr *dyn, const struct phdr *loads,
                          size_t n_loads, struct elf_info *info, enum rid_libc *libc,
                          bool *conflict, bool *is_pie, struct cla_error *e)
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
