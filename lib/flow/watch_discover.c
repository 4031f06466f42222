/* SPDX-License-Identifier: Apache-2.0 */
/* The pacing of watch's event-driven discovery (watch_discover.h): the budget of the scans
 * events ask for, the tick of the last pid, the hints of runtime files opened. */
#include "flow/watch_discover.h"

#include <time.h>

#include "base/bounds.h"
#include "base/util.h"
#include "target/direvents.h"

bool discover_due(const struct discover *d, int64_t now)
{
    return d->owed && now >= d->after_ms;
}

int discover_fd(const struct discover *d)
{
    return d->owed ? -1 : d->evfd;
}

int64_t discover_until(const struct discover *d, int64_t next_scan)
{
    int64_t at = d->owed ? d->after_ms : d->tick_ms;
    return at < next_scan ? at : next_scan;
}

/* Microseconds of `clock`: a scan's cost is often below a millisecond. */
static int64_t clock_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* What a scan costs is the CPU time the watcher spends on it (the wall clock would count the
 * waits of a loaded node as work), and the bucket fills with the monotonic clock. */
static int64_t now_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

int64_t discover_cpu_us(void)
{
    return clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

/* The next tick from `now` with the current step: none without a tick, unless a hint armed a
 * series of looks. */
static int64_t next_tick(const struct discover *d, int64_t now)
{
    return d->tick_max > 0 || d->armed ? now + d->step_ms : INT64_MAX;
}

void discover_init(struct discover *d, struct procindex *x, int64_t tick_max_ms)
{
    *d = (struct discover){.evfd = procindex_events_fd(x),
                           .step_ms = DISCOVER_TICK_MS,
                           .tick_max = tick_max_ms > 0 && tick_max_ms < DISCOVER_TICK_MS
                                           ? DISCOVER_TICK_MS
                                           : tick_max_ms,
                           .budget_us = DISCOVER_BURST_MS * 1000,
                           .filled_us = now_us()};
    d->tick_ms = next_tick(d, util_now_ms());
}

void discover_scanned(struct discover *d, struct procindex *x, int64_t began_cpu_us)
{
    int64_t end = now_us();
    d->budget_us += (end - d->filled_us) / DISCOVER_SHARE - (discover_cpu_us() - began_cpu_us);
    if (d->budget_us > DISCOVER_BURST_MS * 1000)
        d->budget_us = DISCOVER_BURST_MS * 1000;
    d->filled_us = end;
    int64_t wait = d->budget_us < 0 ? (-d->budget_us * DISCOVER_SHARE + 999) / 1000 : 0;
    int64_t now = util_now_ms();
    d->owed = false;
    d->after_ms = now + (wait > DISCOVER_GAP_MIN_MS ? wait : DISCOVER_GAP_MIN_MS);
    d->tick_ms = next_tick(d, now);
    d->evfd = procindex_events_fd(x); /* a helper given up in the scan: the new one's */
}

/* The tick: has a process been made since the last scan (a pid allocated, not a thread's)? One
 * brings the short tick back, for the rest of a start (its threads, its children); a quiet node
 * is looked at less and less often (tick_max at most), and without a tick the looks a hint armed
 * end with the first quiet one. */
static bool pids_moved(struct discover *d, struct procindex *x, int64_t now)
{
    bool moved = procindex_new_process(x);
    if (moved)
        d->step_ms = DISCOVER_TICK_MS;
    else if (d->tick_max > 0)
        d->step_ms = d->step_ms * 2 > d->tick_max ? d->tick_max : d->step_ms * 2;
    else
        d->armed = false;
    d->tick_ms = next_tick(d, now);
    return moved;
}

void discover_look(struct discover *d, struct procindex *x, bool event, bool ended, int64_t now)
{
    struct direvents ev = {0};
    if ((event && procindex_events_read(x, &ev)) || ended)
        d->owed = true;
    if (d->owed)
        return;
    if (event && ev.opens) {
        /* A runtime file opened (an exec of a .NET host, a runtime's load): a scan, paid from
         * the budget like any. The exec of a process seen before allocates no pid, and the
         * container's start before it may have mounted its /tmp after the process was first
         * seen: the scan probes the new image and looks at its group again. The short tick
         * follows, for the rest of the start. */
        d->armed = true;
        d->step_ms = DISCOVER_TICK_MS;
        d->tick_ms = now + d->step_ms;
        d->owed = true;
        return;
    }
    if (now >= d->tick_ms)
        d->owed = pids_moved(d, x, now);
}
