/* SPDX-License-Identifier: Apache-2.0 */
/* The socket directories as the index sees them: the processes grouped by where their sockets
 * live, what each directory held at its last listing, the requests that keep that up to date (the
 * helper, procindex_helper.c, makes the calls), and the back-off of one that stops answering. */
#include "target/procindex_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/render.h"
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
    g->watched = g->held && (a.flags & PX_WATCHED);
    g->wd = g->watched ? a.wd : -1;
    g->held_gen = fsworker_generation(w);
    if (a.flags & PX_OPEN_FAILED) {
        g->dir_errno = a.dir_errno;
        /* Another member is its representative at the next scan when this one ended. */
        g->retry_ms = (a.flags & PX_REP_GONE) ? now_ms : now_ms + PROCINDEX_RETRY_MS;
    }
    if (a.flags & PX_CLOSED) {
        group_void(g);
        g->dir_errno = a.dir_errno;
        /* The throttle of a busy directory was that directory's: the one its TMPDIR leads to
         * now (a container's tmpfs mounted over the node's /tmp, seen by its first process
         * before the mount) is listed at every look until it is busy itself. */
        g->next_list_ms = 0;
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

struct procindex_group *procindex_group_find(struct procindex *x, uint64_t mnt_ino,
                                             const struct stat *root, const struct stat *owner,
                                             const struct procindex_probe *p, pid_t pid)
{
    for (size_t i = 0; i < x->ngroups; i++) {
        struct procindex_group *g = x->groups[i];
        if (g->mnt_ino == mnt_ino && g->root_dev == root->st_dev && g->root_ino == root->st_ino &&
            g->uid == owner->st_uid && g->gid == owner->st_gid && strcmp(g->tmpdir, p->tmpdir) == 0)
            return g;
    }
    if (x->ngroups == x->galloc) {
        size_t na = x->galloc ? x->galloc * 2 : 8;
        struct procindex_group **ng = realloc(x->groups, na * sizeof(*ng));
        if (!ng)
            return NULL;
        x->groups = ng;
        x->galloc = na;
    }
    struct procindex_group *g =
        procindex_group_new(++x->next_group_id, mnt_ino, root, owner, p->tmpdir, pid);
    if (!g)
        return NULL;
    x->groups[x->ngroups++] = g;
    return g;
}

/* Is what `s` is about left alone now: its back-off running, or the helper that did not come
 * back from it still stuck there (the filesystem has not answered that request yet: a second
 * helper would only join the first)? */
bool procindex_stall_active(struct procindex *x, struct procindex_stall *s, int64_t now_ms)
{
    if (!s->until_ms)
        return false;
    if (s->stuck && !fsworker_stuck(x->w, s->stuck))
        s->stuck = 0;
    return now_ms < s->until_ms || s->stuck;
}

/* Is this answer of fsworker_call one that leaves what it was about unreachable: none in time,
 * the helper ended in its midst or answered nonsense, or no helper could be started (too many
 * stuck)? The others (a stop, out of memory, a fork refused) say nothing about the directory. */
bool procindex_is_stall(int r)
{
    return r == -ETIMEDOUT || r == -EPIPE || r == -EPROTO || r == -EAGAIN;
}

/* A request about group `g` (or about the process `pid` without one: its own `s`) got no usable
 * answer (`r`; the helper given up, `stuck` while not reaped): the group's listing is void, it
 * is left alone for the back-off, and said once, when it stops answering. */
void procindex_stall_mark(struct procindex *x, struct procindex_group *g, struct procindex_stall *s,
                          pid_t pid, const char *tmpdir, uid_t uid, int r, pid_t stuck)
{
    bool first = s->until_ms == 0;
    if (g) {
        g->valid = false;
        g->n = 0;
        g->held = false;
    }
    s->stalls++;
    s->until_ms = x->now_ms + procindex_stall_backoff_ms(s->stalls);
    s->stuck = stuck;
    x->stalls_in_scan++;
    if (!first || !x->on_unreachable)
        return;
    char shown[256], what[96], msg[1024];
    render_text(tmpdir, strlen(tmpdir), shown, sizeof(shown));
    if (r == -EAGAIN)
        snprintf(what, sizeof(what),
                 "could not be looked at (%d helpers are stuck already):", FSWORKER_STUCK_MAX);
    else
        snprintf(what, sizeof(what), "did not answer within %d ms:", PROCINDEX_ANSWER_MS);
    snprintf(msg, sizeof(msg),
             "pid %d: its TMPDIR '%s' (as uid %u) %s the filesystem there has stopped answering "
             "(a hung NFS or CIFS mount, a stuck volume or FUSE daemon?); its processes are "
             "skipped for %lld s at least, and while that request stays unanswered. Next step: "
             "check that mount on the node (/proc/%d/mountinfo names it) or restart the process",
             (int)pid, shown, (unsigned)uid, what,
             (long long)(procindex_stall_backoff_ms(s->stalls) / 1000), (int)pid);
    x->on_unreachable(msg, x->userdata);
}

/* Did a socket name come in g's watched directory since the last scan? */
static bool named_in_event(const struct procindex *x, const struct procindex_group *g)
{
    for (unsigned i = 0; i < x->ev_nwds; i++)
        if (x->ev_wds[i] == g->wd)
            return true;
    return false;
}

/* Each group's representative (its first member in pid order), its directory opened or
 * kept, listed when it changed; groups nobody is left in let go. */
int procindex_scan_groups(struct procindex *x, int64_t now_ms)
{
    for (size_t i = 0; i < x->ngroups; i++)
        x->groups[i]->members = 0;
    for (size_t i = 0; i < x->n; i++) {
        struct procindex_group *g = x->v[i].g;
        if (g && g->members++ == 0)
            g->rep = x->v[i].pub.pid;
    }
    size_t kept = 0, held = 0;
    int r = 0;
    /* With events (watch), a directory held and watched that no event spoke of since the last
     * scan has no new name: it is left as listed, without a request to the helper (one round
     * trip per group was most of a scan's cost on a busy node, and a flood of names in one
     * directory made every scan look at all of them). Every PROCINDEX_GROUPS_FULL_MS, and after
     * an event that does not say where (an overflow, a watch gone), every group is looked at
     * as before (a tmpfs mounted over a TMPDIR sends no event), and so is a group with a
     * member probed afresh (procindex_group.look_until_ms). */
    bool light = x->with_stat && x->ev_fd >= 0 && !x->ev_all && now_ms < x->groups_full_ms;
    if (!light)
        x->groups_full_ms = now_ms + PROCINDEX_GROUPS_FULL_MS;
    x->ev_all = false;
    for (size_t i = 0; i < x->ngroups; i++) {
        struct procindex_group *g = x->groups[i];
        if (!g->members) { /* nobody left there: its directory is let go */
            if (r == 0)
                procindex_group_forget(g, x->w);
            procindex_group_free(g);
            continue;
        }
        x->groups[kept++] = g;
        /* A stop, a directory left alone, or (watch) enough helpers given up in this scan: the
         * others keep their last listing and are looked at next scan. ps has no next scan: it
         * goes through all, each unanswered one costing a helper, FSWORKER_STUCK_MAX at most. */
        if (r < 0 || procindex_stall_active(x, &g->stall, now_ms) ||
            (x->with_stat && x->stalls_in_scan >= PROCINDEX_SCAN_STALLS_MAX))
            continue;
        if (light && g->watched && g->valid && now_ms > g->look_until_ms && held_now(g, x->w) &&
            !named_in_event(x, g)) {
            held++;
            continue;
        }
        /* Two fds per directory held: a target that makes thousands of TMPDIRs must not take
         * every fd the helper has. The groups past the bound are left to the full look, as
         * without the index. */
        pid_t stuck;
        int rr =
            procindex_group_scan(g, x->w, held < PROCINDEX_HELD_MAX, x->with_stat, now_ms, &stuck);
        if (rr == -EINTR) {
            r = rr;
        } else if (procindex_is_stall(rr)) {
            procindex_stall_mark(x, g, &g->stall, g->rep, g->tmpdir, g->uid, rr, stuck);
        } else if (rr == 0) {
            g->stall = (struct procindex_stall){0};
        }
        held += g->held;
    }
    x->ngroups = kept;
    x->ev_nwds = 0;
    return r;
}
