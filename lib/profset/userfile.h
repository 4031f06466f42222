/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files the operator names on the command line (--profiler, --client-data @FILE). They are ours,
 * not the target's, so links are followed; but only a regular file is ever read. The open carries
 * O_NONBLOCK|O_NOCTTY, so a FIFO named by mistake cannot block us and a terminal cannot become
 * ours; fstat then refuses anything but a regular file with a usage message that names it.
 */
#ifndef CLRATTACH_USERFILE_H
#define CLRATTACH_USERFILE_H

#include <stddef.h>

#include "base/err.h"

/* Opens `name` (relative to `dirfd`, or AT_FDCWD) read-only when it is a regular file. `shown`
 * is the path as the operator knows it and `opt` the option that named it, for messages ("'/x'
 * given to --profiler is a FIFO, not a regular file"). Returns the fd (O_CLOEXEC); -ENXIO for a
 * FIFO, device or socket, -EISDIR for a directory, each with a hint; or the open's own error
 * (-ENOENT, -EACCES...). */
int userfile_open(int dirfd, const char *name, const char *shown, const char *opt,
                  struct cla_error *e);

/* Reads all of the regular file `path` (at most `cap` bytes) into a NUL-terminated heap buffer
 * the caller frees. Errors as userfile_open(), and -E2BIG when the file exceeds `cap`. */
int userfile_read(const char *path, size_t cap, const char *opt, char **ret_buf, size_t *ret_len,
                  struct cla_error *e);

/* Reads all of the open file `fd` (at most `cap` bytes) as util_read_all() does (NUL-terminated
 * heap buffer, -E2BIG past `cap`), but with one allocation sized from fstat() when the file
 * keeps to its size. */
int userfile_read_fd(int fd, size_t cap, char **ret_buf, size_t *ret_len);

#endif
