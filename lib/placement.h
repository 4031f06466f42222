/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_PLACEMENT_H
#define CLRATTACH_PLACEMENT_H

/*
 * Where in the target's view can the profiler go? It must be on a mount that is neither
 * read-only nor noexec in the TARGET's mount table (a noexec /tmp makes dlopen fail with the
 * same 0x8007007E as a missing file), and writable by the target's user (found out by trying).
 * Order: --target-dir alone when given; else the target's TMPDIR, then /tmp/, /var/tmp/,
 * /dev/shm/. Pure: decides from a parsed mountinfo.
 */

#include <stdbool.h>
#include <stddef.h>

#include "proc_parse.h"

#define PLACEMENT_MAX 5

struct placement {
    char dir[TARGET_PATH_MAX]; /* absolute, ending in '/' */
    const char *source;        /* "--target-dir", "TMPDIR" or "default" */
    char rejected[160];        /* why it cannot be used, "" when it may be tried */
};

/* Fills up to PLACEMENT_MAX candidates (deduplicated) and returns how many. `user_dir` may be
 * NULL; `mounts` may be NULL (n = 0) when the mount table could not be read, in which case no
 * candidate is rejected up front. */
size_t placement_candidates(const char *tmpdir, const char *user_dir,
                            const struct proc_mount *mounts, size_t n,
                            struct placement out[PLACEMENT_MAX]);

#endif
