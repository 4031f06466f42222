/* SPDX-License-Identifier: Apache-2.0 */
/* The pacing of watch's event-driven discovery (watch_discover.h): the buckets of the scans
 * events and hints ask for, the tick of the last pid, a hint's series of scans. */
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

int discover_hint_fd(const struct discover *d, int64_t now)
{
    return now < d->hints_ready_ms ? -1 : d->hintfd;
}

int64_t discover_until(const struct discover *d, int64_t next_scan)
{
    int64_t at = d->owed ? d->after_ms : d->tick_ms;
    if (d->hints_ready_ms > 0 && d->hints_ready_ms < at)
        at = d->hints_ready_ms; /* the hints' queue read again then */
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
 * waits of a loaded node as work), and the buckets fill with the monotonic clock. */
static int64_t now_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

int64_t discover_cpu_us(void)
{
    return clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

/* The bucket refilled up to `now` (µs), `cost` taken from it; how long (ms) until it is out of
 * debt. */
static int64_t bucket_pay(struct discover_bucket *b, int64_t now, int64_t cost)
{
    b->left_us += (now - b->filled_us) / b->share - cost;
    if (b->left_us > b->burst_us)
        b->left_us = b->burst_us;
    b->filled_us = now;
    return b->left_us < 0 ? (-b->left_us * b->share + 999) / 1000 : 0;
}

/* The next tick from `now` with the current step: none without a tick, unless a hint armed a
 * series of looks. */
static int64_t next_tick(const struct discover *d, int64_t now)
{
    return d->tick_max > 0 || d->armed ? now + d->step_ms : INT64_MAX;
}

void discover_init(struct discover *d, struct procindex *x, int64_t tick_max_ms)
{
    int64_t now = now_us();
    *d = (struct discover){
        .evfd = procindex_events_fd(x),
        .hintfd = procindex_hints_fd(x),
        .step_ms = DISCOVER_TICK_MS,
        .tick_max =
            tick_max_ms > 0 && tick_max_ms < DISCOVER_TICK_MS ? DISCOVER_TICK_MS : tick_max_ms,
        .events = {DISCOVER_BURST_MS * 1000, now, DISCOVER_BURST_MS * 1000, DISCOVER_SHARE},
        .hints = {DISCOVER_HINT_BURST_MS * 1000, now, DISCOVER_HINT_BURST_MS * 1000,
                  DISCOVER_HINT_SHARE}};
    d->tick_ms = next_tick(d, util_now_ms());
}

void discover_scanned(struct discover *d, struct procindex *x, int64_t began_cpu_us)
{
    int64_t end = now_us(), cost = discover_cpu_us() - began_cpu_us;
    int64_t wait = bucket_pay(&d->events, end, d->funded ? 0 : cost);
    int64_t hint_wait = bucket_pay(&d->hints, end, d->funded ? cost : 0);
    int64_t now = util_now_ms();
    d->owed = d->funded = false;
    d->after_ms = now + (wait > DISCOVER_GAP_MIN_MS ? wait : DISCOVER_GAP_MIN_MS);
    d->tick_ms = next_tick(d, now);
    /* A hint's series goes on while its bucket allows: the next scan a step later (doubling). */
    if (d->follow && hint_wait == 0) {
        d->follow--;
        d->owed = d->funded = true;
        d->after_ms = now + d->follow_step_ms;
        d->follow_step_ms *= 2;
    } else {
        d->follow = 0;
    }
    d->hints_ready_ms = hint_wait ? now + hint_wait : 0;
    d->evfd = procindex_events_fd(x); /* a helper given up in the scan: the new one's */
    d->hintfd = procindex_hints_fd(x);
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

/* A runtime file opened (an exec of a .NET host, a runtime's load): a series of scans paid from
 * the hints' bucket, the first at once, whatever the other bucket owes. The exec of a process
 * seen before allocates no pid, and a container's start may have mounted its /tmp after the
 * process was first seen: each scan probes a changed image again and looks at the directories
 * of the processes probed afresh. The short tick follows, for the rest of the start. */
static void hinted(struct discover *d, int64_t now)
{
    d->owed = d->funded = true;
    d->after_ms = now;
    d->follow = DISCOVER_FOLLOW_SCANS;
    d->follow_step_ms = DISCOVER_FOLLOW_MS;
    d->armed = true;
    d->step_ms = DISCOVER_TICK_MS;
    d->tick_ms = now + d->step_ms;
}

void discover_look(struct discover *d, struct procindex *x, bool event, bool hint, bool ended,
                   int64_t now)
{
    /* A hint waits while the hints' bucket is in debt (its queue unread meanwhile: the kernel
     * merges the opens), and is acted on once it is not; past that time the queue is polled
     * again (and the loop no longer wakes for it). */
    if (d->hints_ready_ms && now >= d->hints_ready_ms)
        d->hints_ready_ms = 0;
    if (hint && procindex_hints_read(x))
        d->hint_pending = true;
    if (d->hint_pending) {
        int64_t wait = bucket_pay(&d->hints, now_us(), 0);
        d->hints_ready_ms = wait ? now + wait : 0;
        if (!wait) {
            d->hint_pending = false;
            hinted(d, now);
        }
    }
    struct direvents ev = {0};
    if ((event && procindex_events_read(x, &ev)) || ended)
        d->owed = true;
    if (!d->owed && now >= d->tick_ms)
        d->owed = pids_moved(d, x, now);
}
