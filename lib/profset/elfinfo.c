/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounded ELF reader. It runs on the target's executable (/proc/<pid>/exe), which the target
 * controls, so it is written as a parser of hostile bytes: every read goes through rd() with an
 * explicit bounds check, sizes are compared without overflow, loops have caps, and nothing is
 * taken from section headers. It supports both classes and both byte orders so that a foreign
 * file is described correctly rather than misread. This file holds the reads and the ELF and
 * program headers; the dynamic section's readers are elfinfo_dynamic.c, and the section walk
 * that tells where a file ends is elfinfo_end.c.
 *
 * The same checks serve a file that is only partly read (elffile.c): each one that admits bytes
 * into a read also asks whether their chunks are present. A chunk that is not ends the parse in
 * -EAGAIN naming it, however the parser went on from the refusal, so a partial parse either asks
 * for more or gives exactly what the whole file gives.
 */
#include "profset/elfinfo_internal.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "profset/elfinfo.h"

static bool chunk_present(const struct elf_buf *b, uint64_t i)
{
    return (b->part->c->present[i / 8] >> (i % 8)) & 1;
}

/* Are the bytes of [off, off + size), inside the file, present? The first absent chunk asked for
 * is remembered: the parse ends in -EAGAIN whatever it made of the refusal. */
bool elfinfo_present(const struct elf_buf *b, uint64_t off, uint64_t size)
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

/* The first NUL of [off, off + max) (inside the file), or NULL when there is none or an absent
 * chunk comes first: only the chunks up to the terminator need to be present. */
const char *elfinfo_find_nul(const struct elf_buf *b, uint64_t off, uint64_t max)
{
    const char *base = (const char *)b->p;
    if (!b->part)
        return memchr(base + off, '\0', (size_t)max);
    uint64_t end = off + max, chunk = 1ULL << b->part->c->shift;
    while (off < end) {
        uint64_t stop = (off | (chunk - 1)) + 1;
        if (stop > end)
            stop = end;
        if (!elfinfo_present(b, off, stop - off))
            return NULL;
        const char *nul = memchr(base + off, '\0', (size_t)(stop - off));
        if (nul)
            return nul;
        off = stop;
    }
    return NULL;
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
enum rid_libc elfinfo_libc_of_name(const char *path)
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
void elfinfo_vote(enum rid_libc v, enum rid_libc *acc, bool *conflict)
{
    if (v == RID_LIBC_UNKNOWN)
        return;
    if (*acc != RID_LIBC_UNKNOWN && *acc != v)
        *conflict = true;
    *acc = v;
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
    if (!elfinfo_present(b, 0, EI_NIDENT))
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
    if (!elfinfo_present(b, 0, ehsize))
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
    const char *nul = elfinfo_find_nul(b, interp->offset, interp->filesz);
    if (!nul)
        return err_set(e, -EPROTO, "elf: unterminated PT_INTERP");
    if (nul == s || (size_t)(nul - s) > ELF_INTERP_MAX)
        return err_set(e, -EPROTO, "elf: PT_INTERP of %zu bytes (1..%d allowed)", (size_t)(nul - s),
                       ELF_INTERP_MAX);
    memcpy(info->interp, s, (size_t)(nul - s));
    elfinfo_vote(elfinfo_libc_of_name(info->interp), libc, conflict);
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
    if (sg.have_dyn && (r = elfinfo_parse_dynamic(b, &sg.dyn, sg.loads, sg.n_loads, &info, &libc,
                                                  &conflict, &is_pie, e)) < 0)
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
