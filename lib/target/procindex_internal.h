/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_PROCINDEX_INTERNAL_H
#define CLRATTACH_PROCINDEX_INTERNAL_H

/*
 * What procindex.c (the process records, the listing of /proc, the probe) and procindex_group.c
 * (the socket directories the records point at) share; nothing outside lib/target/procindex*.c
 * includes it. A group is created by the probe that first finds a process in it, scanned once
 * per scan while it has members, and freed when the last one is gone.
 */

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "target/procindex.h"

/* Where the sockets of a set of processes live: one directory in one view, as one user. */
struct procindex_group {
    uint64_t mnt_ino, root_dev, root_ino;
    uid_t uid;
    gid_t gid;
    char *tmpdir;
    pid_t rep; /* a member of the last scan: the process whose user opens the directory */
    size_t members;
    DIR *dir;   /* opened as rep's user; NULL until then, or after a failure */
    int rootfd; /* O_PATH of rep's root when the directory was opened */
    uint64_t dir_dev, dir_ino;
    int dir_errno; /* why there is no listing (0 with one) */
    int64_t retry_ms;
    /* the directory's mtime at the last listing, and when (CLOCK_REALTIME, ns) it was made */
    int64_t listed_mtime_ns, listed_at_ns;
    int64_t next_list_ms; /* a crowded directory is listed at most every PROCINDEX_RETRY_MS */
    bool valid;           /* the entries are the directory's (listed, not closed since) */
    struct procindex_entry *entries;
    size_t n, alloc;
};

/* Is this error a process that has ended (its /proc directory gone, or a zombie's)? */
static inline bool procindex_gone(int r)
{
    return r == -ENOENT || r == -ESRCH;
}

/* A group for the processes in mount namespace `mnt_ino`, with root `root`, whose /proc
 * directories are owned as `owner` is, under TMPDIR `tmpdir` (copied); `rep` is the member whose
 * user opens its directory at the next scan. Nothing is opened yet. Returns NULL when out of
 * memory. */
struct procindex_group *procindex_group_new(uint64_t mnt_ino, const struct stat *root,
                                            const struct stat *owner, const char *tmpdir,
                                            pid_t rep);

/* Closes what the group holds and frees it. NULL is a no-op. */
void procindex_group_free(struct procindex_group *g);

/* One scan of the group's directory: the one held is let go when its TMPDIR name leads elsewhere
 * now; when none is held and the retry is due, it is opened as `g->rep`'s user through
 * /proc/<rep> under `proc_dirfd`, unless `may_open` is false (past the bound of directories held:
 * no listing, EMFILE, tried again later); a held one is listed when it changed. With `hold`
 * false the directory is let go after its listing (ps lists once). */
void procindex_group_scan(struct procindex_group *g, int proc_dirfd, bool may_open, bool hold,
                          int64_t now_ms);

#endif
