/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tar reader for `--profiler -`: an operator streams a profiler directory through stdin
 * (`tar -C dir -c . | kubectl debug -i ... -- /clrattach attach --profiler - ...`). The stream's
 * names, types and modes are untrusted input: only regular files and directories are accepted,
 * names are relative, without "..", control bytes or empty components, and every size is capped.
 * ustar, GNU long names ('L') and pax extended headers ('x', for path and size) are understood;
 * links, devices and FIFOs are refused by name. Pure: works on a buffer.
 */
#ifndef CLRATTACH_TARSTREAM_H
#define CLRATTACH_TARSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"

#define TAR_BLOCK  512
#define TAR_RECORD (20 * TAR_BLOCK) /* what tar writes at once, padding the end with zeros */

struct tar_entry {
    char path[PROFDIR_PATH_MAX + 1]; /* normalised: "lib/libx.so", never "" or "/..." */
    bool is_dir;
    bool executable;     /* any x bit in the header's mode */
    const uint8_t *data; /* into the buffer; NULL for a directory */
    size_t size;
};

/* Whether `len` bytes look like the start of a tar stream (a valid header checksum). */
bool tar_detect(const uint8_t *buf, size_t len);

/* Reads the entry at *off of `len` bytes of `buf` and advances *off past it. Returns 1 with
 * *ret filled, 0 at the end of the archive (a zero block or the end of the buffer exactly on a
 * block boundary; *off then points there), -EPROTO for a malformed stream and -EPERM for a
 * refused entry type or name, with the reason in `e` and *off unchanged. */
int tar_next(const uint8_t *buf, size_t len, size_t *off, struct tar_entry *ret,
             struct cla_error *e);

/* Where a tar stream ends, found as its bytes arrive: `--profiler -` must stop reading there,
 * since the stdin of a `kubectl debug -i` container stays open after kubectl's input ends and an
 * EOF may never come. Zero-initialise, then call tar_find_end() each time `buf` has grown. */
struct tar_end {
    size_t off;       /* the next header to look at */
    int64_t pax_size; /* a pax "size" for the entry that follows, -1 when none */
    bool zero_seen;   /* the block before `off` was the first zero block of the end marker */
    bool started;
};

/* Looks at the headers of `len` bytes of `buf` (the stream so far, starting at its first header)
 * from where the last call stopped. Returns 1 when the archive ends within them (two zero blocks,
 * or a zero block and anything: tar_next() stops at the first), with s->off just past the end;
 * 0 when more bytes are needed; -EPROTO or -EPERM when a header is malformed, so that tar_next()
 * will refuse the stream where it stands and nothing more needs to be read. Only checksums, sizes
 * and types are read here; names and the rest are tar_next()'s. */
int tar_find_end(const uint8_t *buf, size_t len, struct tar_end *s);

/* Checks a relative path inside a profiler directory and normalises it into out ("./a//b/" ->
 * "a/b"). Shared with the directory reader. Returns 0, or -EPERM naming the problem. */
int tar_normalise_path(const char *in, size_t len, char *out, size_t size, struct cla_error *e);

#endif
