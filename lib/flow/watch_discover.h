/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When watch's loop looks for new runtimes between the interval's scans (event-driven discovery):
 * soon after a socket name appears in a directory held (inotify, through the index's helper), a
 * watched directory goes, the queue overflows, a runtime file is opened (an exec of a .NET
 * host or a load of libcoreclr.so: procindex_hints.h), a pid is
 * allocated (a new process: /proc/loadavg read at the tick) or an attach ends (its slot to hand
 * on, or a young runtime to try again). Such a scan is the same full look as any: an event is
 * only a reason to look now.
 *
 * Scans are paid from a budget (bounds.h: DISCOVER_BURST_MS, refilled at 1/DISCOVER_SHARE of
 * the clock, at least DISCOVER_GAP_MIN_MS apart), and while one is owed the queue is not read
 * (the kernel merges what comes, or overflows into one more scan): a target that floods its
 * directory with names, or opens a runtime file in a loop, costs the loop a bounded share of its
 * time.
 */
#ifndef CLRATTACH_WATCH_DISCOVER_H
#define CLRATTACH_WATCH_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "target/procindex.h"

struct discover {
    int evfd;          /* the index's inotify copy; -1: none (scans alone) */
    bool owed;         /* an event asked for a scan */
    int64_t after_ms;  /* not before then */
    int64_t tick_ms;   /* the next read of /proc/loadavg (INT64_MAX: no tick) */
    int64_t step_ms;   /* and the one after, DISCOVER_TICK_MS doubling while nothing moves */
    int64_t tick_max;  /* the longest step; 0: no tick (hints and the interval's scans only) */
    bool armed;        /* a hint asked for the short tick (also without a tick) */
    int64_t budget_us; /* scanning time left in the bucket (below 0: owed to it) */
    int64_t filled_us; /* when it was last refilled (now_us) */
};

/* `tick_max_ms`: the longest wait between two reads of the last pid (watch --pid-poll), 0 for
 * none. */
void discover_init(struct discover *d, struct procindex *x, int64_t tick_max_ms);

/* Is a scan owed and its time come? */
bool discover_due(const struct discover *d, int64_t now);

/* The fd to poll for events now (-1: not while a scan is owed). */
int discover_fd(const struct discover *d);

/* When the loop must wake up at the latest for discovery, `next_scan` being the interval's. */
int64_t discover_until(const struct discover *d, int64_t next_scan);

/* The CPU time of the process (µs): a scan's cost. */
int64_t discover_cpu_us(void);

/* A scan began at `began_cpu_us` (discover_cpu_us) has ended: its cost taken from the budget,
 * the next one an event asks for not before the budget is above 0 again. */
void discover_scanned(struct discover *d, struct procindex *x, int64_t began_cpu_us);

/* After a wakeup: the queue read when it was readable (`event`), the last pid when the tick is
 * due or a runtime file was opened; `ended`: an attach ended, or the choose hook's answers may
 * have changed (a scan is owed). */
void discover_look(struct discover *d, struct procindex *x, bool event, bool ended, int64_t now);

#endif
