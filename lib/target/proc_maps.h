/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/maps, on buffers only: the path column holds any file name the target mapped
 * (spaces, " (deleted)" suffixes, names that look like loaders). The paths found are the
 * target's text: for lookups in its root, never for printing raw.
 */
#ifndef CLRATTACH_PROC_MAPS_H
#define CLRATTACH_PROC_MAPS_H

#include <stddef.h>

/* Scans /proc/<pid>/maps text for the dynamic loader the process runs with.
 * Returns 1 for musl (ld-musl-*), 2 for glibc (ld-linux-*), 0 when neither is seen. */
int proc_maps_libc(const char *buf, size_t len);

/* Is a file whose path ends in `/name` mapped (any line's path column)? Returns 1 or 0. */
int proc_maps_has(const char *buf, size_t len, const char *name);

/* proc_maps_has() over maps text that arrives in pieces (reads of the /proc file), so that a
 * reader can stop at the first line that matches. Whole lines only are scanned: a line cut by a
 * read waits for the rest. A line is at most a path (PATH_MAX) and its numbers; one longer than
 * the buffer is malformed. */
#define PROC_MAPS_SCAN_BUF 16384
struct proc_maps_scan {
    char buf[PROC_MAPS_SCAN_BUF];
    size_t have; /* bytes of an unfinished line at the start of buf */
};

/* The caller has put `n` more bytes at s->buf + s->have (at most PROC_MAPS_SCAN_BUF - s->have);
 * n == 0 marks the end, where a last line without its newline counts too. Returns 1 when a
 * whole line so far names `name`, 0 when none did yet, -EPROTO for a line longer than the
 * buffer, -EINVAL for more bytes than there was room for. */
int proc_maps_scan_feed(struct proc_maps_scan *s, size_t n, const char *name);

/* The shared objects mapped (absolute paths whose last component holds ".so"; " (deleted)" ones
 * skipped), each once, in order of first mapping, packed NUL-terminated into `out`. Stops at
 * `max` paths or when `out` is full. Returns how many were stored. The paths are the target's
 * text: for lookups in its root, never for printing raw. */
size_t proc_maps_libraries(const char *buf, size_t len, char *out, size_t size, size_t max);

/* As proc_maps_libraries(), unlinked files included, their path column kept whole (ending in
 * " (deleted)"): the objects the process's loader holds, whatever became of their names. */
size_t proc_maps_loaded(const char *buf, size_t len, char *out, size_t size, size_t max);

/* The name under /proc/<pid>/map_files/ of the first mapping of the file at `path` (a path as
 * proc_maps_libraries() or proc_maps_loaded() gives it): "start-end" in lower-case hex without
 * leading zeros, as the kernel names those entries (it refuses a name with leading zeros, which the
 * maps lines carry), into `out` (NUL-terminated). Returns 1 when found, 0 when `path` is not
 * mapped, its address column is malformed or the name does not fit `size`. Opening that entry
 * reaches the very file mapped, whatever the target's mounts now show under its path. */
int proc_maps_map_files_name(const char *buf, size_t len, const char *path, char *out, size_t size);

/* The path of the mapped CoreCLR runtime library (last component exactly "libcoreclr.so"), the
 * first one mapped, into `out` (NUL-terminated). Returns 1 when found, 0 when none is mapped or
 * its path does not fit `size`. The target's text, as above. */
int proc_maps_runtime_library(const char *buf, size_t len, char *out, size_t size);

#endif
