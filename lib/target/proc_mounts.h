/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/mountinfo, on buffers only: the mounts of the target's namespace, where it may
 * mount anything anywhere (mount points with spaces and \ooo escapes, by the ten thousand).
 * Every line is checked whole and the count is capped.
 */
#ifndef CLRATTACH_PROC_MOUNTS_H
#define CLRATTACH_PROC_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"

/* One line of /proc/<pid>/mountinfo, with the mount point as the PROCESS sees it (relative to
 * its root) and the flags that decide whether a shared object can be placed and mapped there. */
struct proc_mount {
    char mount_point[TARGET_PATH_MAX_MOUNT];
    char fstype[32];
    bool read_only; /* per-mount "ro" or superblock "ro" */
    bool noexec;    /* mmap(PROT_EXEC) of files here fails: dlopen gives 0x8007007E */
};

/* Parses a mountinfo file into a new array (caller frees). Octal escapes (\040) in mount points
 * are decoded. Returns 0, or -EPROTO for a malformed line, -E2BIG past PROC_MOUNTS_MAX lines. */
int proc_parse_mountinfo(const char *buf, size_t len, struct proc_mount **ret_mounts, size_t *ret_n,
                         struct cla_error *e);

/* The mount that holds absolute `path`: the longest mount point that is a path prefix of it,
 * the last listed winning among equals (it is mounted on top) except for "/", where the first
 * (the process's root) wins. NULL when none. Pure. */
const struct proc_mount *proc_mount_for_path(const struct proc_mount *mounts, size_t n,
                                             const char *path);

#endif
