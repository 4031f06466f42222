/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_PROFDIR_READ_H
#define CLRATTACH_PROFDIR_READ_H

/*
 * Reading a profiler directory from the operator's disk into a struct profdir (profdir.h). Only
 * regular files and directories are taken; a symbolic link is copied as the regular file it
 * points to when that file lies inside the directory (vendor trees link libfoo.so to
 * libfoo.so.1), and refused otherwise (outside the tree, to a directory, dangling). FIFOs,
 * sockets and devices are refused. Files are opened O_NONBLOCK|O_NOCTTY, so nothing planted in
 * the tree can block or take a terminal. Caps as in profdir.h.
 */

#include "base/err.h"
#include "profset/profdir.h"

/* Reads the tree below `dirfd` (a directory fd, kept open by the caller); `shown` names it in
 * messages. Returns 0 with *ret sealed (profdir_seal), or -EINVAL/-E2BIG/-ENOMEM/-errno. */
int profdir_read(int dirfd, const char *shown, struct profdir *ret, struct cla_error *e);

#endif
