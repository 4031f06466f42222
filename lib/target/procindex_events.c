/* SPDX-License-Identifier: Apache-2.0 */
/* Event-driven discovery's caller side: the helper's inotify instances (the directories held,
 * the runtime files) fetched (again after a helper was given up) and their queues read into a
 * summary (direvents.h) for watch's loop. */
#include "target/procindex_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

/* The helper's instance `op` names, fetched once per helper into *fd (of generation *gen). */
static int fetch(struct procindex *x, uint32_t op, int *fd, uint64_t *gen)
{
    uint64_t g = fsworker_generation(x->w);
    if (*fd >= 0 && g == *gen)
        return *fd;
    /* A fresh helper (one given up was replaced): what it watches is in its own instance (a
     * helper not started yet starts with this call). */
    util_closep(fd);
    _cleanup_free_ int32_t *a = NULL;
    size_t len = 0;
    int got = -1;
    pid_t stuck = 0;
    int r = fsworker_call(x->w, &op, sizeof(op), -1, PROCINDEX_ANSWER_MS, (void **)&a, &len, &got,
                          &stuck);
    if (r < 0 || len != sizeof(*a) || *a != 0) {
        util_closep(&got);
        return -1;
    }
    *fd = got;
    *gen = fsworker_generation(x->w);
    return *fd;
}

int procindex_events_fd(struct procindex *x)
{
    return fetch(x, PX_EVENTS, &x->ev_fd, &x->ev_gen);
}

int procindex_hints_fd(struct procindex *x)
{
    return fetch(x, PX_HINT_EVENTS, &x->hint_fd, &x->hint_gen);
}

/* Reads what is queued on the inotify copy `fd` (at most DIREVENTS_READ_MAX bytes) into *ev;
 * true when a scan is owed (direvents_parse). */
static bool drain(int fd, struct direvents *ev)
{
    /* Aligned for struct inotify_event; each read returns whole records. */
    static _Alignas(8) char buf[16384];
    size_t total = 0;
    bool owed = false;
    while (fd >= 0 && total < DIREVENTS_READ_MAX) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EAGAIN: nothing more queued */
        total += (size_t)n;
        owed |= direvents_parse(buf, (size_t)n, ev);
    }
    return owed;
}

unsigned procindex_hints_read(struct procindex *x)
{
    struct direvents ev = {0};
    (void)drain(x->hint_fd, &ev);
    /* An overflow lost opens: as good as one. */
    return ev.opens + (ev.overflow ? 1u : 0u);
}

bool procindex_events_read(struct procindex *x, struct direvents *ret)
{
    bool owed = drain(x->ev_fd, ret);
    /* Which directories a name came in, for the next scan (procindex_scan_groups). */
    if (ret->gone || ret->overflow || ret->wds_lost)
        x->ev_all = true;
    for (unsigned i = 0; i < ret->nwds && !x->ev_all; i++) {
        unsigned k = 0;
        while (k < x->ev_nwds && x->ev_wds[k] != ret->wds[i])
            k++;
        if (k < x->ev_nwds)
            continue;
        if (x->ev_nwds == DIREVENTS_WDS_MAX)
            x->ev_all = true;
        else
            x->ev_wds[x->ev_nwds++] = ret->wds[i];
    }
    return owed;
}
