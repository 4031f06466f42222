/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the target's dynamic loader will look for a library a profiler needs (DT_NEEDED), in the
 * order it looks, so that a missing dependency is named before the runtime's dlopen() fails with
 * a bare 0x8007007E. Pure: the caller passes the requesting object's run path and location, the
 * target's LD_LIBRARY_PATH and (musl) the contents of its /etc/ld-musl-<arch>.path, and checks
 * the directories in the target's root itself.
 *
 * glibc (ld.so(8)): DT_RPATH when there is no DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH, then the
 * cache built from /etc/ld.so.conf and the trusted directories (multiarch first on Debian-like
 * systems). musl (ldso/dynlink.c): LD_LIBRARY_PATH, DT_RPATH/DT_RUNPATH alike, then the path
 * file or /lib:/usr/local/lib:/usr/lib. Both first match an already loaded object by name; that
 * is the caller's check against the target's maps.
 */
#ifndef CLRATTACH_LDSEARCH_H
#define CLRATTACH_LDSEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/rid.h"

struct ld_search {
    size_t n;
    const char *dir[LDSEARCH_LISTS * LDSEARCH_MAX_DIRS]; /* absolute, without a trailing '/';
                                                            point into buf */
    const char *why[LDSEARCH_LISTS * LDSEARCH_MAX_DIRS]; /* "RUNPATH", "RPATH",
                                                            "LD_LIBRARY_PATH", "default" */
    size_t unchecked;                                    /* entries left out at their list's caps */
    const char *unchecked_why; /* the first list that had such an entry, NULL when none */
    char buf[LDSEARCH_LISTS * LDSEARCH_BUF];
};

struct ld_request {
    enum rid_libc libc;
    enum rid_arch arch;
    const char *runpath;         /* DT_RUNPATH or DT_RPATH of the requesting object, "" none */
    bool runpath_is_rpath;       /* it was DT_RPATH (searched before LD_LIBRARY_PATH by glibc) */
    const char *origin;          /* $ORIGIN: the requesting object's directory, target's view */
    const char *ld_library_path; /* the target's value, NULL when unset */
    size_t ld_library_path_len;
    const char *musl_path; /* contents of /etc/ld-musl-<arch>.path, NULL when absent */
    size_t musl_path_len;
};

/* Fills *ret with the directories to search, in order, duplicates dropped. Entries that are
 * relative, empty, or use a dynamic string token other than $ORIGIN ($LIB, $PLATFORM: they
 * depend on the loader's build) are skipped, as they cannot be checked from outside. Each list
 * gives at most LDSEARCH_MAX_DIRS directories and LDSEARCH_BUF bytes: the entries past that (a
 * Nix or conda LD_LIBRARY_PATH has hundreds), and one longer than TARGET_PATH_MAX, are left out
 * and counted in ret->unchecked; the lists after a long one are still searched. */
void ldsearch_dirs(const struct ld_request *rq, struct ld_search *ret);

/* The loader's name for the musl path file's architecture ("x86_64", "aarch64", "armhf",
 * "i386"), NULL for an unknown one. */
const char *ldsearch_musl_arch(enum rid_arch arch);

#endif
