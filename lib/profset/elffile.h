/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An ELF file read piecewise from an fd: only the parts the parser asks for. A file of the
 * target's can be any size and mostly holes (a sparse 64 MiB ".so" costs it nothing), so reading
 * it whole to learn what its headers say would let the target choose how much we read and hold.
 * Here the file's length is reserved, not filled (anonymous memory: a page costs nothing until
 * written); elfinfo_parse_chunks() runs, and each time it names a chunk it lacks, that chunk is
 * read and the parse runs again, within a cap on bytes, on rounds and a deadline.
 */
#ifndef CLRATTACH_ELFFILE_H
#define CLRATTACH_ELFFILE_H

#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/elfinfo.h"

struct elffile_limits {
    uint64_t max_bytes;   /* bytes read from the file at most */
    int64_t deadline_ms;  /* util_now_ms() clock; 0 for none */
    unsigned chunk_shift; /* chunks of 1 << chunk_shift bytes; 0 for ELFFILE_CHUNK_SHIFT */
};

/* What one parse cost: filled whatever the outcome. */
struct elffile_stats {
    uint64_t bytes_read;
    unsigned rounds; /* parses run */
};

/* Parses the regular file open at `fd` (its first ELF_READ_MAX bytes at most), reading only the
 * chunks the parser needs. Returns 0 with *ret, or what elfinfo_parse() gives for the file
 * (-ENOEXEC, -EPROTO); -E2BIG when lim->max_bytes or ELFFILE_ROUNDS_MAX would be passed before
 * the parse ends; -ETIMEDOUT at the deadline; -EIO when the file is shorter than it said (it
 * shrank while read); -ENOMEM, or -errno of fstat/pread. `stats` may be NULL. */
int elffile_parse(int fd, const struct elffile_limits *lim, struct elf_info *ret,
                  struct elffile_stats *stats, struct cla_error *e);

#endif
