/* SPDX-License-Identifier: Apache-2.0 */
/* The piecewise read of an ELF file: the parser (elfinfo.h) runs again after each chunk it asks
 * for is read, until it has all it needs, within the caller's rounds, bytes and deadline. */
#include "profset/elffile.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* The file's bytes as far as they are read: `len` bytes reserved, chunk i present when its bit
 * is set in `present`. */
struct pieces {
    uint8_t *buf;
    size_t len;
    uint8_t *present;
    struct elf_chunks chunks;
};

static void pieces_free(struct pieces *p)
{
    if (p->buf)
        munmap(p->buf, p->len);
    free(p->present);
}

/* Reads the chunk at `off` into place and marks it present. Returns its size or a negative
 * errno; a file that ends before the length fstat gave has shrunk under us (-EIO). */
static int64_t read_chunk(int fd, struct pieces *p, uint64_t off, struct cla_error *e)
{
    uint64_t chunk = 1ULL << p->chunks.shift;
    size_t want = (size_t)(p->len - off < chunk ? p->len - off : chunk), got = 0;
    while (got < want) {
        ssize_t n = pread(fd, p->buf + off + got, want - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_setsys(e, -errno, "elf: read at offset %llu",
                              (unsigned long long)(off + got));
        if (n == 0)
            return err_set(e, -EIO, "elf: the file ends at %llu bytes, shorter than it was",
                           (unsigned long long)(off + got));
        got += (size_t)n;
    }
    uint64_t i = off >> p->chunks.shift;
    p->present[i / 8] |= (uint8_t)(1u << (i % 8));
    return (int64_t)want;
}

int elffile_parse(int fd, const struct elffile_limits *lim, struct elf_info *ret,
                  struct elffile_stats *stats, struct cla_error *e)
{
    struct elffile_stats unused;
    if (!stats)
        stats = &unused;
    *stats = (struct elffile_stats){0};
    unsigned shift = lim->chunk_shift ? lim->chunk_shift : ELFFILE_CHUNK_SHIFT;
    if (shift > ELF_CHUNK_SHIFT_MAX)
        return err_set(e, -EINVAL, "elf: chunks of 2^%u bytes", shift);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "elf: stat");
    if (!S_ISREG(st.st_mode))
        return err_set(e, -ENOEXEC, "elf: not a regular file");

    /* Only the first ELF_READ_MAX bytes, as for a file read whole: what lies past them (a
     * single-file app's bundle) is no part of the ELF image we need. */
    _cleanup_(pieces_free) struct pieces p = {
        .len = (uint64_t)st.st_size < ELF_READ_MAX ? (size_t)st.st_size : ELF_READ_MAX,
        .chunks.shift = shift};
    if (p.len > 0) {
        void *m = mmap(NULL, p.len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return err_setsys(e, -errno, "elf: reserving %zu bytes", p.len);
        p.buf = m;
    }
    size_t n_chunks = (p.len >> shift) + 1;
    p.present = calloc(n_chunks / 8 + 1, 1);
    if (!p.present)
        return err_set(e, -ENOMEM, "out of memory");
    p.chunks.present = p.present;

    for (;;) {
        uint64_t missing = 0;
        stats->rounds++;
        int r = elfinfo_parse_chunks(p.buf, p.len, &p.chunks, ret, &missing, e);
        if (r != -EAGAIN)
            return r;
        uint64_t chunk = 1ULL << shift;
        if (stats->rounds >= ELFFILE_ROUNDS_MAX || stats->bytes_read + chunk > lim->max_bytes)
            return err_set(e, -E2BIG,
                           "elf: the headers need more than %u reads or %llu bytes (read %llu)",
                           ELFFILE_ROUNDS_MAX - 1, (unsigned long long)lim->max_bytes,
                           (unsigned long long)stats->bytes_read);
        if (lim->deadline_ms && util_now_ms() >= lim->deadline_ms)
            return err_set(e, -ETIMEDOUT, "elf: out of time after %llu bytes",
                           (unsigned long long)stats->bytes_read);
        int64_t n = read_chunk(fd, &p, missing, e);
        if (n < 0)
            return (int)n;
        stats->bytes_read += (uint64_t)n;
    }
}
