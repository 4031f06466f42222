/* SPDX-License-Identifier: Apache-2.0 */
/* The socket directories as the index sees them: what each one held at its last listing, and
 * the requests that keep that up to date (the helper, procindex_helper.c, makes the calls). */
#include "target/procindex_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"

static int cmp_entry(const void *a, const void *b)
{
    const struct procindex_entry *x = a, *y = b;
    if (x->nspid != y->nspid)
        return x->nspid < y->nspid ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

void procindex_sort_entries(struct procindex_entry *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_entry);
}

uint64_t procindex_entries_fp(const struct procindex_entry *v, size_t n, pid_t nspid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first entry with this nspid */
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].nspid < nspid)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* FNV-1a over (key, inode, ctime) of each: an entry added, removed or re-created changes it. */
    uint64_t h = 1469598103934665603ULL;
    bool any = false;
    for (size_t i = lo; i < n && v[i].nspid == nspid; i++) {
        uint64_t w[3] = {v[i].key, v[i].ino, (uint64_t)v[i].ctime_ns};
        any = true;
        for (size_t k = 0; k < 3; k++)
            for (int b = 0; b < 64; b += 8) {
                h ^= (w[k] >> b) & 0xFF;
                h *= 1099511628211ULL;
            }
    }
    return any ? (h ? h : 1) : 0;
}

int64_t procindex_stall_backoff_ms(unsigned stalls)
{
    int64_t ms = PROCINDEX_STALL_BACKOFF_MIN_MS;
    for (unsigned i = 1; i < stalls && ms < PROCINDEX_STALL_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < PROCINDEX_STALL_BACKOFF_MAX_MS ? ms : PROCINDEX_STALL_BACKOFF_MAX_MS;
}

struct procindex_group *procindex_group_new(uint64_t id, uint64_t mnt_ino, const struct stat *root,
                                            const struct stat *owner, const char *tmpdir, pid_t rep)
{
    struct procindex_group *g = calloc(1, sizeof(*g));
    if (!g || !(g->tmpdir = strdup(tmpdir))) {
        free(g);
        return NULL;
    }
    g->id = id;
    g->mnt_ino = mnt_ino;
    g->root_dev = root->st_dev;
    g->root_ino = root->st_ino;
    g->uid = owner->st_uid;
    g->gid = owner->st_gid;
    g->rep = rep;
    return g;
}

void procindex_group_free(struct procindex_group *g)
{
    if (!g)
        return;
    free(g->entries);
    free(g->tmpdir);
    free(g);
}

/* Does the helper running now hold the group's directory? One given up took it along. */
static bool held_now(struct procindex_group *g, const struct fsworker *w)
{
    if (g->held && g->held_gen != fsworker_generation(w))
        g->held = false;
    return g->held;
}

/* A request for the group, with its TMPDIR after the fixed part. */
static int group_call(const struct procindex_group *g, struct fsworker *w, uint32_t op,
                      uint32_t flags, void **ret, size_t *ret_len, pid_t *ret_stuck)
{
    size_t tlen = strlen(g->tmpdir);
    if (tlen >= TARGET_PATH_MAX)
        return -ENAMETOOLONG; /* the probe takes no longer one */
    char buf[sizeof(struct px_group_req) + TARGET_PATH_MAX];
    struct px_group_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    q.flags = flags;
    q.id = g->id;
    q.mnt_ino = g->mnt_ino;
    q.root_dev = g->root_dev;
    q.root_ino = g->root_ino;
    q.rep = g->rep;
    q.tmpdir_len = (uint32_t)tlen;
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), g->tmpdir, tlen);
    int fd = -1;
    int r = fsworker_call(w, buf, sizeof(q) + tlen, -1, PROCINDEX_ANSWER_MS, ret, ret_len, &fd,
                          ret_stuck);
    if (fd >= 0)
        close(fd); /* none is sent for a group */
    return r;
}

/* The last listing made void: the names are no longer known. */
static void group_void(struct procindex_group *g)
{
    g->n = 0;
    g->valid = false;
}

/* Takes the helper's answer in. Returns -EPROTO for one that does not add up (then the group is
 * left as it was). */
static int group_apply(struct procindex_group *g, const struct fsworker *w, const void *buf,
                       size_t len, int64_t now_ms)
{
    struct px_group_reply a;
    if (len < sizeof(a))
        return -EPROTO;
    memcpy(&a, buf, sizeof(a));
    if (a.n > TARGET_DIR_ENTRIES_MAX || len != sizeof(a) + (size_t)a.n * sizeof(*g->entries))
        return -EPROTO;
    g->held = a.flags & PX_HELD;
    g->held_gen = fsworker_generation(w);
    if (a.flags & PX_OPEN_FAILED) {
        g->dir_errno = a.dir_errno;
        /* Another member is its representative at the next scan when this one ended. */
        g->retry_ms = (a.flags & PX_REP_GONE) ? now_ms : now_ms + PROCINDEX_RETRY_MS;
    }
    if (a.flags & PX_CLOSED) {
        group_void(g);
        g->dir_errno = a.dir_errno;
    }
    if (a.flags & PX_LISTED) {
        if (a.n > g->alloc) {
            struct procindex_entry *ne = realloc(g->entries, a.n * sizeof(*ne));
            if (!ne) { /* out of memory: no listing; the next change lists again */
                group_void(g);
                return 0;
            }
            g->entries = ne;
            g->alloc = a.n;
        }
        if (a.n)
            memcpy(g->entries, (const char *)buf + sizeof(a), a.n * sizeof(*g->entries));
        g->n = a.n;
        procindex_sort_entries(g->entries, g->n);
        g->valid = true;
        g->dir_errno = 0;
        /* A directory a target keeps busy with many names is not listed at every scan. */
        if (a.seen > PROCINDEX_BUSY_ENTRIES)
            g->next_list_ms = now_ms + PROCINDEX_RETRY_MS;
    }
    return 0;
}

int procindex_group_scan(struct procindex_group *g, struct fsworker *w, bool may_open, bool hold,
                         int64_t now_ms, pid_t *ret_stuck)
{
    *ret_stuck = 0;
    uint32_t flags = hold ? PX_HOLD : 0;
    /* May open: also for one held, which the helper lets go of when its TMPDIR name leads
     * elsewhere now, and then opens again at once. */
    if (now_ms >= g->retry_ms && may_open) {
        flags |= PX_MAY_OPEN;
    } else if (now_ms >= g->retry_ms && !held_now(g, w)) {
        g->dir_errno = EMFILE;
        g->retry_ms = now_ms + PROCINDEX_RETRY_MS;
    }
    if (now_ms >= g->next_list_ms)
        flags |= PX_MAY_LIST;
    /* Nothing held and nothing to open: nothing to ask. */
    if (!held_now(g, w) && !(flags & PX_MAY_OPEN))
        return 0;
    _cleanup_free_ void *buf = NULL;
    size_t len = 0;
    int r = group_call(g, w, PX_GROUP, flags, &buf, &len, ret_stuck);
    if (r < 0)
        return r;
    return group_apply(g, w, buf, len, now_ms);
}

void procindex_group_forget(struct procindex_group *g, struct fsworker *w)
{
    if (!held_now(g, w))
        return;
    _cleanup_free_ void *buf = NULL;
    size_t len = 0;
    pid_t stuck;
    /* Closing a directory waits for no filesystem (FUSE sends its release in the background),
     * so this answer comes; a helper that does not give it is given up like any other. */
    (void)group_call(g, w, PX_FORGET, 0, &buf, &len, &stuck);
    g->held = false;
}
