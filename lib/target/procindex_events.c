/* SPDX-License-Identifier: Apache-2.0 */
/* Event-driven discovery's caller side: the helper's inotify instance fetched (again after a
 * helper was given up) and its queue read into a summary (direvents.h) for watch's loop. */
#include "target/procindex_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

int procindex_events_fd(struct procindex *x)
{
    uint64_t gen = fsworker_generation(x->w);
    if (x->ev_fd >= 0 && gen == x->ev_gen)
        return x->ev_fd;
    /* A fresh helper (one given up was replaced): the directories it holds are watched by its
     * own instance (a helper not started yet starts with this call). */
    util_closep(&x->ev_fd);
    uint32_t op = PX_EVENTS;
    _cleanup_free_ int32_t *a = NULL;
    size_t len = 0;
    int fd = -1;
    pid_t stuck = 0;
    int r = fsworker_call(x->w, &op, sizeof(op), -1, PROCINDEX_ANSWER_MS, (void **)&a, &len, &fd,
                          &stuck);
    if (r < 0 || len != sizeof(*a) || *a != 0) {
        util_closep(&fd);
        return -1;
    }
    x->ev_fd = fd;
    x->ev_gen = fsworker_generation(x->w);
    return x->ev_fd;
}

bool procindex_events_read(struct procindex *x, struct direvents *ret)
{
    /* Aligned for struct inotify_event; each read returns whole records. */
    static _Alignas(8) char buf[16384];
    size_t total = 0;
    bool owed = false;
    while (x->ev_fd >= 0 && total < DIREVENTS_READ_MAX) {
        ssize_t n = read(x->ev_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EAGAIN: nothing more queued */
        total += (size_t)n;
        owed |= direvents_parse(buf, (size_t)n, ret);
    }
    x->ev_pending |= owed;
    return owed;
}
