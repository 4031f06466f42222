/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many results and Events the runtimes a long-running clrattach serves may cause: token
 * buckets per Event series and for the whole source, after client-go's event recorder
 * (EventSourceObjectSpamFilter: a burst of 25, then one every 5 minutes). A peer that
 * opens runtime instances and abandons them then costs a bounded number of API writes and lines.
 * Pure: no I/O; the caller passes the time.
 */
#ifndef CLRATTACH_EVENT_LIMIT_H
#define CLRATTACH_EVENT_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* The limits (docs/events.md "Rate limit"). Every result of a watcher is about the same pod, so
 * client-go's numbers for a source and object (a burst of 25, then one every 5 minutes) bound
 * each series (one outcome, HRESULT and profiler): a flood of one kind of result. The source's
 * own bucket, larger, bounds many series together (a peer making up a new HRESULT each time).
 * At most EVENT_LIMIT_SERIES_MAX series are remembered; the least recently seen one makes room
 * (it starts full again, and the source bucket still bounds the whole). */
#define EVENT_LIMIT_SERIES_BURST 25
#define EVENT_LIMIT_SERIES_MS    (300 * 1000) /* one token back every 5 minutes */
#define EVENT_LIMIT_SOURCE_BURST 100
#define EVENT_LIMIT_SOURCE_MS    (30 * 1000)
#define EVENT_LIMIT_SERIES_MAX   128

struct event_limit;

/* A new limiter with full buckets, or NULL when out of memory. Free with event_limit_free
 * (NULL-safe). */
struct event_limit *event_limit_new(void);
void event_limit_free(struct event_limit *l);

/* May a result of series `key` (a NUL-terminated string; only its first 512 bytes count) be
 * reported at `now_ms` (a monotonic clock)? true takes a token from the series and the source;
 * false counts it as suppressed. */
bool event_limit_take(struct event_limit *l, const char *key, int64_t now_ms);

/* Results suppressed in all, for a summary. */
uint64_t event_limit_suppressed_total(const struct event_limit *l);

/* The number suppressed since the last report that was let through, then zero: what the next
 * report says of the ones it stands for. */
uint64_t event_limit_take_note(struct event_limit *l);

#endif
