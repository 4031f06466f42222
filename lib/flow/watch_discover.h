/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When watch's loop looks for new runtimes between the interval's scans (event-driven discovery):
 * soon after a socket name appears in a directory held (inotify, through the index's helper), a
 * watched directory goes, the queue overflows, a runtime file is opened (an exec of a .NET host or
 * a load of libcoreclr.so: procindex_hints.h), a new process comes (/proc/loadavg's last pid read
 * at the tick, a thread's pid not counted) or an attach ends (its slot to hand on, or a young
 * runtime to try again). Such a scan is the same full look as any: an event is only a reason to
 * look now.
 *
 * Scans are paid from a budget (bounds.h: DISCOVER_BURST_MS, refilled at 1/DISCOVER_SHARE of
 * the clock, at least DISCOVER_GAP_MIN_MS apart), and while one is owed the directories' queue is
 * not read (the kernel merges what comes, or overflows into one more scan): a target that floods
 * its directory with names, or a node that starts processes all the time, costs the loop a
 * bounded share of its time.
 *
 * The hints have a queue and a budget of their own (DISCOVER_HINT_BURST_MS, refilled at
 * 1/DISCOVER_HINT_SHARE), read even while the other is left unread: a runtime that starts during
 * a flood is not kept waiting for the flooder's debt. An open starts a short series of scans
 * (DISCOVER_FOLLOW_MS after it, doubling, DISCOVER_FOLLOW_SCANS of them) paid from the hints'
 * budget; each looks at the directories of the processes just probed (procindex.h,
 * PROCINDEX_GROUP_LOOK_MS), so the new runtime's socket is found within a step of its coming,
 * read from the queue or not. A process that opens a runtime file in a loop gets that budget's
 * share of one CPU and no more.
 */
#ifndef CLRATTACH_WATCH_DISCOVER_H
#define CLRATTACH_WATCH_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "target/procindex.h"

/* A bucket of scanning time (µs), refilled at 1/share of the monotonic clock up to burst. */
struct discover_bucket {
    int64_t left_us, filled_us, burst_us, share;
};

struct discover {
    int evfd;         /* the index's inotify copy; -1: none (scans alone) */
    int hintfd;       /* the runtime files' one; -1: none */
    bool owed;        /* an event asked for a scan */
    bool funded;      /* ... a hint's: paid from the hints' bucket */
    int64_t after_ms; /* not before then */
    int64_t tick_ms;  /* the next read of /proc/loadavg (INT64_MAX: no tick) */
    int64_t step_ms;  /* and the one after, DISCOVER_TICK_MS doubling while nothing moves */
    int64_t tick_max; /* the longest step; 0: no tick (hints and the interval's scans only) */
    bool armed;       /* a hint asked for the short tick (also without a tick) */
    unsigned follow;  /* scans left in a hint's series */
    int64_t follow_step_ms;
    int64_t hints_ready_ms; /* the hints' queue is read again then (its bucket in debt) */
    bool hint_pending;      /* a hint came while it was in debt */
    struct discover_bucket events, hints;
};

/* `tick_max_ms`: the longest wait between two reads of the last pid (watch --pid-poll), 0 for
 * none. */
void discover_init(struct discover *d, struct procindex *x, int64_t tick_max_ms);

/* Is a scan owed and its time come? */
bool discover_due(const struct discover *d, int64_t now);

/* The fds to poll for events now (-1: not now): the directories' (not while a scan is owed),
 * the hints' (not while their bucket is in debt). */
int discover_fd(const struct discover *d);
int discover_hint_fd(const struct discover *d, int64_t now);

/* When the loop must wake up at the latest for discovery, `next_scan` being the interval's. */
int64_t discover_until(const struct discover *d, int64_t next_scan);

/* The CPU time of the process (µs): a scan's cost. */
int64_t discover_cpu_us(void);

/* A scan began at `began_cpu_us` (discover_cpu_us) has ended: its cost taken from its bucket,
 * the next one an event asks for not before that bucket is out of debt; a hint's series goes
 * on. */
void discover_scanned(struct discover *d, struct procindex *x, int64_t began_cpu_us);

/* After a wakeup: the queues read when they were readable (`event`, `hint`), the last pid when
 * the tick is due; `ended`: an attach ended, or the choose hook's answers may have changed (a
 * scan is owed). */
void discover_look(struct discover *d, struct procindex *x, bool event, bool hint, bool ended,
                   int64_t now);

#endif
