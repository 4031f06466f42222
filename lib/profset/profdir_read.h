/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading a profiler directory into a struct profdir (profdir.h): read, sealed (digest) and its
 * entry chosen, in one call, from the operator's disk or from a tar stream (tarstream.h). A
 * loader (profset.h) calls only this; the model below it reads nothing.
 *
 * From disk, only regular files and directories are taken; a symbolic link is copied as the
 * regular file it points to when that file lies inside the directory (vendor trees link
 * libfoo.so to libfoo.so.1), and refused otherwise (outside the tree, to a directory,
 * dangling). FIFOs, sockets and devices are refused. Files are opened O_NONBLOCK|O_NOCTTY, so
 * nothing planted in the tree can block or take a terminal. Caps as in profdir.h.
 */
#ifndef CLRATTACH_PROFDIR_READ_H
#define CLRATTACH_PROFDIR_READ_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "profset/profdir.h"

/* Reads the tree below `dirfd` (a directory fd, kept open by the caller); `shown` names it in
 * messages. Returns 0 with *ret sealed and its entry chosen by `entry` (profdir_choose_entry:
 * NULL for the only library exporting DllGetClassObject). With `entry` NULL, a tree that is one
 * shared object alone returns 1, sealed but with no entry chosen: nothing beside that library
 * could look for it by name, so the caller may take it as a single file. Errors: -EINVAL (no or
 * several entry candidates, a link or file type refused), -E2BIG, -ENOMEM, -errno; *ret is
 * untouched then. */
int profdir_read(int dirfd, const char *shown, const char *entry, struct profdir *ret,
                 struct cla_error *e);

/* Reads and seals the tree below `dirfd` as profdir_read() does, without choosing an entry: for
 * a tree whose entry is not a profiler (a startup hook's assembly directory), chosen by the
 * caller (pd->entry). Returns 0, or the errors of profdir_read(). */
int profdir_read_tree(int dirfd, const char *shown, struct profdir *ret, struct cla_error *e);

/* Loads a tar stream (a profiler directory on stdin) into *ret, sealed and its entry chosen as
 * profdir_read() does (a stream is always a directory: never 1). The stream stays the caller's
 * (file bytes are copied). A reading error's message begins with `shown`. Returns 0, -EPROTO/
 * -EPERM from the stream reader, -EINVAL, -E2BIG, -ENOMEM. */
int profdir_read_tar(const uint8_t *buf, size_t len, const char *entry, const char *shown,
                     struct profdir *ret, struct cla_error *e);

#endif
