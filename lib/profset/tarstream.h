/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TARSTREAM_H
#define CLRATTACH_TARSTREAM_H

/*
 * A tar reader for `--profiler -`: an operator streams a profiler directory through stdin
 * (`tar -C dir -c . | kubectl debug -i ... -- /clrattach attach --profiler - ...`). The stream's
 * names, types and modes are untrusted input: only regular files and directories are accepted,
 * names are relative, without "..", control bytes or empty components, and every size is capped.
 * ustar, GNU long names ('L') and pax extended headers ('x', for path and size) are understood;
 * links, devices and FIFOs are refused by name. Pure: works on a buffer.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"

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

/* Checks a relative path inside a profiler directory and normalises it into out ("./a//b/" ->
 * "a/b"). Shared with the directory reader. Returns 0, or -EPERM naming the problem. */
int tar_normalise_path(const char *in, size_t len, char *out, size_t size, struct cla_error *e);

#endif
