/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where in the target's view can the profiler go? It must be on a mount that is neither
 * read-only nor noexec as the TARGET sees it (a noexec /tmp makes dlopen fail with the same
 * 0x8007007E as a missing file), and writable by the target's user (found out by trying).
 * Order: --target-dir alone when given; else the target's TMPDIR, then /tmp/, /var/tmp/,
 * /dev/shm/. Pure: the caller looks at each directory (statfs through the target's root) and
 * hands the flags it found to placement_judge().
 */
#ifndef CLRATTACH_PLACEMENT_H
#define CLRATTACH_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "target/proc_mounts.h"

#define PLACEMENT_MAX 5

struct placement {
    char dir[TARGET_PATH_MAX]; /* absolute, ending in '/' */
    const char *source;        /* "--target-dir", "TMPDIR" or "default" */
    char rejected[160];        /* why it cannot be used, "" when it may be tried */
};

/* Fills up to PLACEMENT_MAX candidates (deduplicated, none judged yet) and returns how many.
 * `user_dir` may be NULL. */
size_t placement_candidates(const char *tmpdir, const char *user_dir,
                            struct placement out[PLACEMENT_MAX]);

/* Judges one candidate by the mount its directory is on in the target's view: `noexec` and
 * `read_only` as statfs reports them for the directory itself. A rejection names that mount
 * (its type and mount point) from the target's mount table when `mounts` is given (NULL, n = 0
 * when it could not be read). Returns true, with p->rejected filled, when no .so can be mapped
 * from there. */
bool placement_judge(struct placement *p, bool noexec, bool read_only,
                     const struct proc_mount *mounts, size_t n);

#endif
