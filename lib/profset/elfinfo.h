/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an ELF file says about where it can run, read from its ELF header, program headers and
 * dynamic section only. Section headers are ignored: the loader ignores them too, and a hostile
 * file can make them say anything.
 */
#ifndef CLRATTACH_ELFINFO_H
#define CLRATTACH_ELFINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/rid.h"

struct elf_info {
    enum rid_arch arch;    /* from e_machine; UNKNOWN for other machines */
    bool is_64;            /* ELFCLASS64 */
    bool is_shared_object; /* ET_DYN without PT_INTERP and not flagged DF_1_PIE */
    enum rid_libc libc;    /* from DT_NEEDED and PT_INTERP; UNKNOWN when neither names a libc
                              or they disagree */
    char interp[ELF_INTERP_MAX + 1]; /* PT_INTERP ("/lib/ld-musl-x86_64.so.1"), "" when none */
    /* What the loader will look for, and where: DT_NEEDED names in order, each NUL-terminated,
     * packed into `needed`; DT_RUNPATH, else DT_RPATH ("" when neither). */
    unsigned n_needed;
    char needed[ELF_NEEDED_BYTES];
    char runpath[ELF_RUNPATH_MAX + 1];
    bool runpath_is_rpath;
    /* DT_SONAME, "" when none: the name glibc's loader also knows a loaded object by, so that a
     * later DT_NEEDED of that name reuses it (depcheck.c). */
    char soname[ELF_SONAME_MAX + 1];
    /* A defined, default-visibility global DllGetClassObject, found through the dynamic symbol
     * hash tables exactly as dlsym() looks it up: the one entry point of a CLR profiler. */
    bool exports_class_factory;
};

/* The i-th DT_NEEDED name of a parsed file (i < n_needed), NULL past the end. */
const char *elfinfo_needed(const struct elf_info *info, unsigned i);

/* Parses an ELF file held in memory, `len` bytes of `buf` (the file's first ELF_READ_MAX bytes
 * at most); fills *ret only on success. Every offset and size is checked against `len` and the
 * caps in bounds.h. Returns 0, -ENOEXEC when the bytes are not ELF, or -EPROTO for a malformed,
 * over-cap or cut-short file (message in `e`). */
int elfinfo_parse(const uint8_t *buf, size_t len, struct elf_info *ret, struct cla_error *e);

/* A file read only in part (elffile.h): `buf` spans its first `len` bytes, but only the chunks
 * marked present hold them; the others are never read. Chunk i is the bytes [i << shift,
 * (i + 1) << shift); it is present when bit i % 8 of present[i / 8] is set, and the bitmap
 * covers every chunk that starts below `len`. */
#define ELF_CHUNK_SHIFT_MAX 30
struct elf_chunks {
    const uint8_t *present;
    unsigned shift; /* at most ELF_CHUNK_SHIFT_MAX */
};

/* elfinfo_parse() on such a file. Returns what elfinfo_parse() returns for the whole file, or
 * -EAGAIN with *ret_missing the offset of an absent chunk (below `len`, a multiple of the chunk
 * size) that the parse needs; -EINVAL for a shift out of range. With every chunk present it is
 * elfinfo_parse(). Fills *ret only on success. */
int elfinfo_parse_chunks(const uint8_t *buf, size_t len, const struct elf_chunks *c,
                         struct elf_info *ret, uint64_t *ret_missing, struct cla_error *e);

/* Where an ELF file ends, from its headers as its first `len` bytes arrive: the end of the last
 * program header's file bytes, of the section header table and of each section's bytes, whichever
 * is furthest (a hostile file can make the sections say anything, which only makes the reader stop
 * early or read to its cap). Returns 1 with *ret_end set (possibly above `len`; past
 * PROFILER_MAX_SIZE when the headers claim that much), 0 when the headers needed are not all in
 * `len` yet, or -ENOEXEC / -EPROTO when the bytes are not ELF or no end can be told from them. */
int elfinfo_file_end(const uint8_t *buf, size_t len, uint64_t *ret_end);

/* Do two parses say the same of their files (every field that carries a value)? */
bool elfinfo_equal(const struct elf_info *a, const struct elf_info *b);

#endif
