/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placing a whole profiler directory (profdir.h) inside the target's filesystem view, names kept,
 * under one content-addressed name "<entry stem>-<digest16>", with every guarantee a single file
 * has (deliver.h): resolved below the target's root without following links, created as the
 * target's user under a fresh temporary name, every file created O_EXCL and verified through the
 * fd it was written with, directories made read-only (0555) once full, published with
 * renameat2(RENAME_NOREPLACE) and checked to be our inode after. An identical tree already there
 * is reused (same files, bytes, modes, nothing extra, owned by the target's user or root, writable
 * by no one else); anything else under the name is never touched. An entry there of another uid
 * (or one refused, in a directory others may write) sends the tree to a fallback name of ours,
 * and a delivery first sweeps stale temporaries, as for a single file (deliver.h).
 */
#ifndef CLRATTACH_DELIVER_DIR_H
#define CLRATTACH_DELIVER_DIR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/profdir.h"

struct deliver_dir_opts {
    const struct profdir *pd; /* sealed, entry chosen */
    const char *dir;          /* absolute directory as the target sees it */
    uid_t uid;                /* the target's user: owner of everything created */
    const char *nonce;        /* names this run's temporary tree, as in deliver_opts; or NULL */
};

struct deliver_dir_result {
    char path[TARGET_PATH_MAX];  /* the delivered directory as the target sees it, no '/' after */
    char entry[TARGET_PATH_MAX]; /* the entry library's path there: what the runtime dlopen()s */
    bool reused;
    uint64_t dev, ino; /* of the directory this run created (reused: 0), for deliver_undo() */
    /* The content-addressed name was held by an entry of squatter_uid that we left alone: `path`
     * is a fallback name of ours, created or reused (deliver.h). */
    bool squatted;
    uid_t squatter_uid;
};

/* Delivers o->pd into o->dir below `rootfd`. Returns 0 and fills *ret; -EEXIST when something
 * else of the target's uid or root holds the name in a directory no one else may rename entries
 * in (else: the fallback above);
 * -ELOOP/-ENOTDIR for links on the way; -EACCES/-EROFS/-ENOSPC from the target's filesystem; -EIO
 * when the target swapped what we created. On failure nothing of ours is left behind and nothing of
 * the target's is removed. */
int deliver_dir(int rootfd, const struct deliver_dir_opts *o, struct deliver_dir_result *ret,
                struct cla_error *e);

/* Removes what a delivery of this run created, `path` as the target sees it (a file from
 * deliver_profiler() or a tree from deliver_dir()), only while that name still holds the inode
 * dev/ino: the runtime refused the profiler, so nothing maps it. A tree is removed depth first
 * through directory fds, at most PROFDIR_DEPTH_MAX levels and PROFDIR_FILES_MAX entries deep.
 * Nothing reused or of the target's is touched. Returns 0, -ESTALE when the name now holds
 * something else, or another negative errno. */
int deliver_undo(int rootfd, const char *path, uint64_t dev, uint64_t ino, struct cla_error *e);

#endif
