/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Before AttachProfiler is sent: can the target's loader find every library the profiler needs?
 * The runtime's only answer to a missing DT_NEEDED is 0x8007007E with no name, and some profilers
 * leave the process unstable after a failed load; so each DT_NEEDED of every shared object
 * delivered is resolved the way the target's loader will (ldsearch.h): already mapped in the
 * target (by name, unlinked files too, or, for glibc, by the mapped file's DT_SONAME, read
 * through map_files or its path; a file neither reaches counts by its versioned real name,
 * libstdc++.so.6.0.30 for libstdc++.so.6; or in the directory of a mapped library), in the
 * delivered profiler directory
 * through RUNPATH/RPATH with $ORIGIN, then in the target's own root under LD_LIBRARY_PATH, the
 * run path, the path file or the standard and multiarch directories. A miss names the library,
 * who needs it and where it was looked for.
 *
 * The verdict is an OR of those places, so they are tried cheapest first: the directories (one
 * lookup each), and only for a name not found there the target's maps (several reads of text
 * the kernel generates line by line, the dearest file of the attach path).
 */
#ifndef CLRATTACH_DEPCHECK_H
#define CLRATTACH_DEPCHECK_H

#include <stddef.h>

#include "base/err.h"
#include "profset/profset.h"
#include "profset/rid.h"

struct depcheck_input {
    int rootfd; /* the target's root */
    enum rid_libc libc;
    enum rid_arch arch;
    const char *ld_library_path; /* the target's, NULL when unset */
    size_t ld_library_path_len;
    /* The target's /proc/<pid>/maps, asked for at most once and only when a name is not found
     * in the loader's directories; NULL (or a NULL answer): nothing counts as mapped. */
    const char *(*maps)(void *arg, size_t *ret_len);
    void *maps_arg;
    /* The target's /proc/<pid> (O_PATH), through whose map_files/ a mapped library's SONAME is
     * read from the very file mapped; -1 for none (then read by its path in the root). */
    int procfd;
    const struct profset_build *build;
    const char *delivered; /* a directory build's path as the target sees it, or the single
                              file's path */
};

/* Returns 0 when every DT_NEEDED resolves; 1 when each resolves except names found in none of
 * the places checked while some directories were past the caps of bounds.h (LD_LIBRARY_PATH of
 * Nix or conda apps): those may be in what was not checked, so they are not a refusal, and
 * *ret_note (note_size bytes) says "not checked: ..." for the first; -ENOENT naming the first
 * missing library (the hint names --skip-dependency-check); -ENOMEM. */
int depcheck_run(const struct depcheck_input *in, char *ret_note, size_t note_size,
                 struct cla_error *e);

#endif
