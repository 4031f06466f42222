/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement's I/O half (placement.h is the pure one): each candidate directory is asked, through
 * the target's root, whether a .so can be mapped from there (statfs of the directory itself),
 * and the profiler is delivered into the first that takes it (deliver.h, deliver_dir.h). Acts in
 * the target's view: act as its user and open its root first (creds.h, target_open_root()).
 */
#ifndef CLRATTACH_PLACE_H
#define CLRATTACH_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"

struct profset_build;
struct target;

/* What a delivery put in the target's view, a single file or a profiler directory. */
struct placed {
    char path[TARGET_PATH_MAX]; /* the library the runtime dlopen()s */
    char top[TARGET_PATH_MAX];  /* what this run created: the file, or the directory */
    char dir[TARGET_PATH_MAX];  /* {dir}: the delivered directory, or the file's directory */
    char sha256[65];            /* of the file, or the directory's manifest digest */
    bool is_dir, reused;
    uint64_t dev, ino;
};

struct place_opts {
    const struct profset_build *build;
    const char *user_dir; /* --target-dir: the only candidate; NULL: TMPDIR, then the defaults */
    uid_t uid;            /* the target's user, who will own what is delivered */
    const char *nonce;    /* names this run's temporaries (deliver_opts.nonce), or NULL */
};

/* Tries each candidate directory (placement_candidates) in turn until one takes the profiler.
 * The directories passed over, and why, are written to `passed_over` (rendered, "; "-separated,
 * truncated to `size`) whether or not one took it. Returns 0 with *ret filled; -ENOMEM (e as the
 * delivery set it); else the last delivery's error, with e naming every directory tried and the
 * next step. */
int place_profiler(const struct target *t, const struct place_opts *o, struct placed *ret,
                   char *passed_over, size_t size, struct cla_error *e);

/* Removes what place_profiler() created, nothing when it reused what was there. Returns true
 * when something was removed. */
bool place_undo(const struct target *t, const struct placed *p);

/* Removes the temporaries of the run named o->nonce from every candidate directory, whatever
 * their age (deliver_sweep()): that run was stopped. Acts as place_profiler() does, as the
 * target's user. Returns how many entries were removed. */
int place_sweep(const struct target *t, const struct place_opts *o);

#endif
