/* SPDX-License-Identifier: Apache-2.0 */
/* Placing the profiler in a target: each candidate directory judged through the target's root,
 * the delivery into the first that can take it, its undo, and the sweep of a stopped run's
 * temporaries. */
#include "deliver/place.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "base/render.h"
#include "base/util.h"
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"
#include "deliver/placement.h"
#include "profset/profset.h"
#include "target/proc_mounts.h"
#include "target/rootfs.h"
#include "target/target.h"

#ifndef ST_VALID
#define ST_VALID 0x0020 /* f_flags is filled (Linux 2.6.36) */
#endif

static int deliver_one(int rootfd, const struct place_opts *o, const char *dir, struct placed *ret,
                       struct cla_error *e)
{
    const struct profset_build *build = o->build;
    uid_t uid = o->uid;
    memset(ret, 0, sizeof(*ret));
    if (build->dir) {
        struct deliver_dir_opts dopts = {
            .pd = build->dir, .dir = dir, .uid = uid, .nonce = o->nonce};
        struct deliver_dir_result dr;
        int r = deliver_dir(rootfd, &dopts, &dr, e);
        if (r < 0)
            return r;
        ret->is_dir = true;
        ret->reused = dr.reused;
        ret->dev = dr.dev;
        ret->ino = dr.ino;
        memcpy(ret->path, dr.entry, sizeof(ret->path));
        memcpy(ret->top, dr.path, sizeof(ret->top));
        memcpy(ret->dir, dr.path, sizeof(ret->dir));
        memcpy(ret->sha256, build->dir->digest, sizeof(ret->sha256));
        return 0;
    }
    struct deliver_opts dopts = {.data = build->data,
                                 .len = build->len,
                                 .basename = build->name,
                                 .dir = dir,
                                 .uid = uid,
                                 .nonce = o->nonce};
    struct deliver_result dr;
    int r = deliver_profiler(rootfd, &dopts, &dr, e);
    if (r < 0)
        return r;
    ret->reused = dr.reused;
    ret->dev = dr.dev;
    ret->ino = dr.ino;
    memcpy(ret->path, dr.path, sizeof(ret->path));
    memcpy(ret->top, dr.path, sizeof(ret->top));
    const char *slash = strrchr(dr.path, '/');
    snprintf(ret->dir, sizeof(ret->dir), "%.*s", (int)(slash > dr.path ? slash - dr.path : 1),
             dr.path);
    memcpy(ret->sha256, dr.sha256, sizeof(ret->sha256));
    return 0;
}

/* The target's mount table, read only to name a mount that a candidate directory is refused
 * for, at most once per placement. */
struct mounts_once {
    struct proc_mount *list; /* NULL: unreadable, or not read yet */
    size_t n;
    bool tried;
};

static void mounts_once_free(struct mounts_once *m)
{
    free(m->list);
    m->list = NULL;
}

/* Can a .so be mapped from this candidate directory? Asked of the directory itself, opened
 * through the target's root as its user (no link followed): statfs gives the flags of the
 * mount it is on as the target sees it. A directory that cannot be opened or a kernel that
 * does not say (ST_VALID) leaves the candidate to be tried. */
static void judge_candidate(const struct target *t, struct placement *p, struct mounts_once *m)
{
    _cleanup_close_ int fd = rootfs_open(t->rootfd, p->dir, ROOTFS_DIR, O_PATH, 0, NULL);
    struct statfs sf;
    if (fd < 0 || fstatfs(fd, &sf) < 0 || !(sf.f_flags & ST_VALID))
        return;
    bool noexec = sf.f_flags & ST_NOEXEC, read_only = sf.f_flags & ST_RDONLY;
    if (!noexec && !read_only)
        return;
    if (!m->tried) {
        m->tried = true;
        _cleanup_free_ char *mi = NULL;
        size_t mlen;
        if (target_read_file(t, "mountinfo", PROC_MOUNTINFO_MAX, &mi, &mlen, NULL) == 0)
            (void)proc_parse_mountinfo(mi, mlen, &m->list, &m->n, NULL);
    }
    placement_judge(p, noexec, read_only, m->list, m->list ? m->n : 0);
}

int place_profiler(const struct target *t, const struct place_opts *o, struct placed *ret,
                   char *passed_over, size_t size, struct cla_error *e)
{
    struct placement cand[PLACEMENT_MAX];
    size_t n = placement_candidates(t->tmpdir, o->user_dir, cand);
    _cleanup_(mounts_once_free) struct mounts_once mounts = {0};
    size_t used = 0;
    int last = -ENOENT;
    passed_over[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        struct cla_error de = {0};
        judge_candidate(t, &cand[i], &mounts);
        if (!cand[i].rejected[0]) {
            last = deliver_one(t->rootfd, o, cand[i].dir, ret, &de);
            if (last >= 0)
                return 0;
            if (last == -ENOMEM) {
                if (e)
                    *e = de;
                return last;
            }
            snprintf(cand[i].rejected, sizeof(cand[i].rejected), "%.159s", de.msg);
        }
        char dir[160];
        render_text(cand[i].dir, strlen(cand[i].dir), dir, sizeof(dir));
        int w = snprintf(passed_over + used, size - used, "%s%s (%s): %s", used ? "; " : "", dir,
                         cand[i].source, cand[i].rejected);
        if (w > 0)
            used = (size_t)w >= size - used ? size - 1 : used + (size_t)w;
    }
    err_set(e, last, "deliver: no directory in the target's view can take the profiler: %s",
            passed_over);
    if (o->user_dir)
        err_hint(e,
                 "choose a --target-dir that is writable by uid %u and not mounted "
                 "noexec or read-only in the app container",
                 (unsigned)o->uid);
    else
        err_hint(e, "mount a writable volume without noexec in the app container (an "
                    "emptyDir, e.g. at /clrattach) and pass --target-dir with its path");
    return last;
}

bool place_undo(const struct target *t, const struct placed *p)
{
    if (p->reused || !p->dev)
        return false;
    return deliver_undo(t->rootfd, p->top, p->dev, p->ino, NULL) == 0;
}

int place_sweep(const struct target *t, const struct place_opts *o)
{
    struct placement cand[PLACEMENT_MAX];
    size_t n = placement_candidates(t->tmpdir, o->user_dir, cand);
    int removed = 0;
    for (size_t i = 0; i < n && o->nonce; i++) {
        int r = deliver_sweep(t->rootfd, cand[i].dir, o->uid, o->nonce, NULL);
        if (r > 0)
            removed += r;
    }
    return removed;
}
