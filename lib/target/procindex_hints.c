/* SPDX-License-Identifier: Apache-2.0 */
/* The helper's runtime-file hints (procindex_hints.h): a small table of the inodes watched for
 * IN_OPEN, by (dev, ino), the oldest let go when it is full. */
#include "target/procindex_hints.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "target/proc_maps.h"
#include "target/rootfs.h"

/* The slot of the file behind `st`, or -1. */
static int hint_find(const struct procindex_hints *h, const struct stat *st)
{
    for (unsigned i = 0; i < h->n; i++)
        if (h->v[i].dev == (uint64_t)st->st_dev && h->v[i].ino == (uint64_t)st->st_ino)
            return (int)i;
    return -1;
}

/* A free slot: a new one, or the one hinted longest ago, its watch removed. */
static unsigned hint_slot(struct procindex_hints *h)
{
    if (h->n < PROCINDEX_HINTS_MAX)
        return h->n++;
    unsigned old = 0;
    for (unsigned i = 1; i < h->n; i++)
        if (h->v[i].used < h->v[old].used)
            old = i;
    return old;
}

/* Watches the regular file open at `fd` (O_PATH) for IN_OPEN, once. Returns 1 when a watch was
 * added, 0 when it was watched already (*ret_known) or could not be. */
static unsigned hint_fd(struct procindex_hints *h, int ifd, int fd, bool *ret_known)
{
    struct stat st;
    *ret_known = false;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    int i = hint_find(h, &st);
    h->count++;
    if (i >= 0) {
        h->v[i].used = h->count;
        *ret_known = true;
        return 0;
    }
    /* Through our own fd's magic link: no path of the target's is resolved again. */
    char self[48];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    int wd = inotify_add_watch(ifd, self, IN_OPEN);
    if (wd < 0)
        return 0;
    bool full = h->n == PROCINDEX_HINTS_MAX;
    unsigned s = hint_slot(h);
    if (full && h->v[s].wd != wd) /* a slot taken back: its old watch goes */
        (void)inotify_rm_watch(ifd, h->v[s].wd);
    h->v[s].dev = (uint64_t)st.st_dev;
    h->v[s].ino = (uint64_t)st.st_ino;
    h->v[s].wd = wd;
    h->v[s].used = h->count;
    return 1;
}

unsigned procindex_hints_place(struct procindex_hints *h, int ifd, struct target *t)
{
    if (ifd < 0)
        return 0;
    bool known;
    /* The exe link leads to the inode the process runs, whatever its mounts now show. */
    _cleanup_close_ int exe = openat(t->procfd, "exe", O_PATH | O_CLOEXEC);
    unsigned added = hint_fd(h, ifd, exe, &known);
    if (known)
        return 0; /* this install's runtime library was looked for with it */
    size_t len;
    const char *maps = target_maps(t, &len);
    char lib[TARGET_PATH_MAX];
    if (!maps || proc_maps_runtime_library(maps, len, lib, sizeof(lib)) != 1 ||
        (t->rootfd < 0 && target_open_root(t, NULL) < 0))
        return added;
    _cleanup_close_ int fd = rootfs_open_contained(t->rootfd, lib, ROOTFS_REG, O_PATH, NULL);
    added += hint_fd(h, ifd, fd, &known);
    return added;
}
