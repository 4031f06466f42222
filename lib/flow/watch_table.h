/* SPDX-License-Identifier: Apache-2.0 */
/* The watcher's instance table (watch_table.c): which instances are due, final or backing off,
 * and the due ones handed to the pool as they wait. Pure: the time is passed in. */
#ifndef CLRATTACH_WATCH_TABLE_H
#define CLRATTACH_WATCH_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flow/outcome.h"
#include "target/proc_parse.h"

#define WATCH_RETRY_FIRST_MS 1000
#define WATCH_RETRY_MAX_MS   30000
#define WATCH_RETRY_ATTEMPTS 5
/* A delivery failure is never final: it is retried with the same doubling up to this. */
#define WATCH_DELIVERY_RETRY_MAX_MS 300000
/* A failing instance that is gone is remembered this long after its back-off ends: a process
 * that comes on its pid meanwhile continues that back-off (its lineage). */
#define WATCH_LINEAGE_MS 30000
/* Which processes get a look at all is the index's answer (procindex.h): a socket name for the
 * process in its TMPDIR, or nothing known of it. A process it points at with nothing to attach
 * (no socket of its own yet, not selected) is looked at every scan during its first
 * WATCH_YOUNG_MS (or as long after an execve), when a runtime creates its socket, then every
 * WATCH_IDLE_LOOK_MS. A process with no socket name costs nothing per scan. */
#define WATCH_YOUNG_MS     10000
#define WATCH_IDLE_LOOK_MS 2000

struct watch_table;

struct watch_table *watch_table_new(void);
void watch_table_free(struct watch_table *t);

/* Should the instance be attached now? False while it is final or backing off; an instance not
 * in the table yet is backing off while its pid's lineage is (watch_table_queue). */
bool watch_table_due(const struct watch_table *t, pid_t pid, uint64_t starttime, int64_t now_ms);

/* A due instance waiting for a slot, as the scan found it. */
struct watch_waiting {
    pid_t pid;
    uint64_t starttime;
    int64_t since_ms; /* due, and waiting, since then: first come, first served */
    bool retry;       /* an earlier outcome, or a failure of its pid's lineage */
    size_t ref;       /* the caller's (which process of the scan) */
};

/* The scan's look at an instance: is it due now, and since when? An instance not in the table is
 * entered (first seen now, `age_ms` after its start, image exec_fp), with the back-off of its
 * pid's lineage when the last instance on that pid was failing (an execve or a new start time:
 * a runtime that re-execs after each failure is not new), else due at once. Returns true with
 * *ret filled (ret->ref left for the caller to set) when due; false while final or backing
 * off. */
bool watch_table_queue(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                       int64_t age_ms, int64_t now_ms, struct watch_waiting *ret);

/* Is the instance known and final (nothing more to do for it)? */
bool watch_table_final(const struct watch_table *t, pid_t pid, uint64_t starttime);

/* Has the instance a recorded outcome (a next attempt is a retry)? */
bool watch_table_tried(const struct watch_table *t, pid_t pid, uint64_t starttime);

/* Records an attempt's outcome. Returns true when this outcome is new for the instance (the
 * caller reports it: one Event per outcome, not one per retry). -ENOMEM is folded into false. */
bool watch_table_record(struct watch_table *t, pid_t pid, uint64_t starttime,
                        enum attach_outcome outcome, int64_t now_ms);

/* The same for an attempt that took `took_ms`: a transient outcome's next attempt waits the
 * backoff or as long as this attempt took, whichever is longer (a runtime that lets every
 * exchange time out is tried at most half of the time). */
bool watch_table_record_attempt(struct watch_table *t, pid_t pid, uint64_t starttime,
                                enum attach_outcome outcome, int64_t took_ms, int64_t now_ms);

/* Records a look that found nothing to attach: the next is due at once while the process is
 * young (age_ms, its time since start, below WATCH_YOUNG_MS), else WATCH_IDLE_LOOK_MS later.
 * An instance with a recorded outcome keeps its retry backoff. */
void watch_table_idle(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                      int64_t age_ms, int64_t now_ms);

/* An attempt that ended with nothing to record (a young runtime's "not yet available"): the
 * instance is due again at once, but behind those already waiting, as it had its turn. */
/* Every instance only looked at so far (no outcome, not final) is due now: what selects it may
 * have changed (the agent's choose hook, watch_opts.h). */
void watch_table_wake_idle(struct watch_table *t, int64_t now_ms);

void watch_table_requeue(struct watch_table *t, pid_t pid, uint64_t starttime, int64_t now_ms);

/* Starts a scan generation; instances not seen (watch_table_seen) before the matching
 * watch_table_sweep() are dropped by it, a failing one after WATCH_LINEAGE_MS past its back-off
 * (kept for its lineage until then, no longer counted). Returns how many instances it dropped or
 * stopped counting. watch_table_seen also notices an execve: when exec_fp (watch_exec_fp, 0 =
 * unknown) differs from the one recorded, the entry starts over as a young instance with no
 * outcome, due at once or, when the one before was failing, when its back-off ends. */
void watch_table_begin(struct watch_table *t);
void watch_table_seen(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                      int64_t now_ms);
size_t watch_table_sweep(struct watch_table *t, int64_t now_ms);

/* Live instances with a recorded outcome; watch_table_entries counts the idle ones too. */
size_t watch_table_size(const struct watch_table *t);
size_t watch_table_entries(const struct watch_table *t);

/* A fingerprint of the program image from /proc/<pid>/stat, 0 when the kernel hides it. */
uint64_t watch_exec_fp(const struct proc_stat *st);

/* Is an outcome final for an instance (no retry)? */
bool watch_outcome_final(enum attach_outcome o);

#endif
