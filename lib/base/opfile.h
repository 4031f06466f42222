/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files the operator names for clrattach to write (--termination-log, --ready-file). They are
 * written as root, often in a directory that others can write too (a shared emptyDir, a path the
 * app reaches through /proc/<pid>/root), so what is planted there must neither choose the file
 * we write nor stop us: the last component is never followed (a link could name any file root
 * may write, which would be emptied and overwritten), the open never waits (a FIFO without a
 * reader would hold it for ever, and SIGTERM with it), and only a regular file with no other
 * name (a hard link) is kept, checked on the fd after the open. Truncation comes only after
 * those checks.
 */
#ifndef CLRATTACH_OPFILE_H
#define CLRATTACH_OPFILE_H

#include <sys/types.h>

#include "base/err.h"

/* Opens `path` for writing; `opt` is the option that named it, for messages ("--termination-log
 * '/x' is a FIFO, not a regular file"). `flags` may hold O_CREAT (the file is created with `mode`
 * when absent) and O_TRUNC (emptied once it is known to be a regular file); anything else is
 * -EINVAL. Returns the fd (O_CLOEXEC, blocking), or a refusal with a message and a hint: -ELOOP
 * for a symbolic link, -EISDIR for a directory, -ENXIO for a FIFO, socket or device, -EMLINK for
 * a file with several names; else the open's own error (-ENOENT, -EACCES...). */
int opfile_open_for_write(const char *path, const char *opt, int flags, mode_t mode,
                          struct cla_error *e);

#endif
