/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hints of a runtime's start, placed by the index's helper (procindex_helper.c) on the files a
 * runtime already found was started from: its executable (a .NET host: `dotnet`, an apphost, a
 * single-file app) and its libcoreclr.so. An inotify IN_OPEN watch on each, in the helper's
 * instance (the one watch reads, direvents.h), fires when any process opens that inode: the exec
 * of the next app from the same install or image, in any mount namespace that shares the file,
 * and its runtime's load. watch then looks for a new process at once instead of at its next
 * tick. A hint is never used as a fact: it only says "look now".
 *
 * Placed only for a process that has answered as a runtime (watch asks, procindex_hint_runtime,
 * once an attach's ProcessInfo was answered: a socket name alone, which any process can make,
 * earns none), as its user, through the pinned process: the executable by its /proc exe link (the
 * very inode it runs), the library by its maps path resolved inside its root (rootfs.h). At most
 * PROCINDEX_HINTS_MAX files are watched; past that the one hinted longest ago is let go.
 */
#ifndef CLRATTACH_PROCINDEX_HINTS_H
#define CLRATTACH_PROCINDEX_HINTS_H

#include <stdint.h>

#include "target/target.h"

#define PROCINDEX_HINTS_MAX 32

struct procindex_hints {
    struct {
        uint64_t dev, ino;
        int wd;
        uint64_t used; /* the hints count when it was placed or found again */
    } v[PROCINDEX_HINTS_MAX];
    unsigned n;
    uint64_t count;
};

/* Watches the executable of the pinned `t` (the caller acts as t's user) in inotify instance
 * `ifd`, and, when that file was not watched yet, the libcoreclr.so it maps. Returns how many
 * watches were added (0: already watched, or nothing could be). */
unsigned procindex_hints_place(struct procindex_hints *h, int ifd, struct target *t);

#endif
