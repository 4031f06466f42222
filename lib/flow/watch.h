/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_WATCH_H
#define CLRATTACH_WATCH_H

/*
 * Sidecar mode: scan for .NET processes that match a selector and attach to each runtime
 * instance exactly once. An instance is (pid, start time): a restarted app is a new instance.
 * Outcomes that cannot change by retrying (attached, already active, load failure, permission)
 * are final; transient ones (runtime not ready, timeouts, a socket not there yet) are retried
 * with exponential backoff a bounded number of times, and a delivery failure (a name squatted
 * by another uid, a full directory) is retried with backoff for as long as the instance lives.
 * State for processes that are gone is dropped at every scan (a failing one's back-off is kept
 * a little longer, for its pid's next instance), so memory follows the live process count and
 * the recent failures, not uptime.
 *
 * Each attach runs in a child process of its own, at most WATCH_POOL_MAX at once, on the very
 * process the scan selected (pinned by pidfd and start time): a runtime that never answers holds
 * one slot, not the watcher, and SIGTERM ends the watcher within a second whatever is in flight.
 *
 * Fairness. Free slots go to the due instances in the order they became due (the one waiting
 * longest first, whatever its pid); an instance's next attempt after a failure is due only after
 * its back-off, which a new instance of the same pid (an execve, or a new start time on the pid)
 * inherits, counting as a retry. With S = WATCH_POOL_MAX, T = --timeout, I = the scan interval
 * and R = watch_attach_deadline_ms(T) + I = 2T + 5 s + I (the most an attach holds a slot, until
 * the next scan hands it on), an instance that becomes due while N other matching instances are
 * running or waiting gets a slot within
 *     ceil(N / S) * R + I        on a first attempt,
 *     ceil(N / (S - 1)) * R + I  on a retry (retries never take the last free slot),
 * however those N behave: each of them holds a slot at most once in that time, because once its
 * attempt ends it is due again only after its back-off, and a new instance (an exec, a restart,
 * any new process) queues behind those already waiting. A retry is due at the end of its own
 * back-off (WATCH_RETRY_FIRST_MS doubling to WATCH_RETRY_MAX_MS, and at least as long as its last
 * attempt took). docs/security.md ("Fairness") states the same for operators.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flow/attach.h"
#include "base/err.h"
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
/* Attaches in flight at once, each in a child process. Retries never take the last slot. */
#define WATCH_POOL_MAX 4
/* A child gets twice --timeout (its two exchanges) and this much more before it is killed. */
#define WATCH_ATTACH_SLACK_MS 5000
/* On stop, how long killed children are waited for before the watcher leaves anyway. */
#define WATCH_REAP_WAIT_MS 500
/* After a child the watcher killed, the process that removes that run's temporaries from the
 * target (watch_internal.h) gets this long before it is killed in turn: a stop takes at most
 * WATCH_REAP_WAIT_MS and this past the signal. */
#define WATCH_SWEEP_WAIT_MS 2000

/* The instance table (watch_table.c): which instances are due, final or backing off. Pure: the
 * time is passed in. */

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

/* The pool (watch_pool.c): attaches in flight. These calls are pure bookkeeping; the jobs in
 * the slots own the child processes and their fds (watch_internal.h). */

struct watch_pool;

struct watch_pool *watch_pool_new(void);
void watch_pool_free(struct watch_pool *p);

/* Attaches in flight. */
size_t watch_pool_count(const struct watch_pool *p);

/* Is an attach to this instance in flight (the scan then leaves it alone)? */
bool watch_pool_busy(const struct watch_pool *p, pid_t pid, uint64_t starttime);

/* May an attach start now? A slot must be free; a retry also leaves the last one free. */
bool watch_pool_may_start(const struct watch_pool *p, bool retry);

/* Offers the free slots to the `n` due instances in `v`, reordered here: the longest waiting
 * first (since_ms, then pid and start time for a stable order). Each that may start (a retry
 * never takes the last free slot) is passed to `take`, which takes a slot for it
 * (watch_pool_add) unless it is not to be attached after all (not selected, no socket). Stops
 * once the pool is full; the rest stay due, with their place, for the next scan. */
void watch_pool_offer(struct watch_pool *p, struct watch_waiting *v, size_t n,
                      void (*take)(const struct watch_waiting *w, void *userdata), void *userdata);

/* Takes a slot for the instance, to be ended by watch_pool_remove. Returns the slot, or -EBUSY
 * when the pool is full or the instance already has one. */
int watch_pool_add(struct watch_pool *p, pid_t pid, uint64_t starttime, bool retry,
                   int64_t deadline_ms);
void watch_pool_remove(struct watch_pool *p, size_t slot);

/* The earliest deadline of an attach in flight, INT64_MAX when none. */
int64_t watch_pool_next_deadline(const struct watch_pool *p);

/* How long a child may run an attach with --timeout `timeout_ms` before it is killed. */
int64_t watch_attach_deadline_ms(int64_t timeout_ms);

/* An attach's result between processes (watch_pool.c; pure). */

/* Each attach's child sends its result back as these many bytes. */
size_t watch_result_wire_size(void);

/* Encodes `r` into watch_result_wire_size() bytes at `buf`: a magic, the fixed-size struct with
 * rid_source as an index, and zeros after the end of every string. */
void watch_result_encode(const struct attach_result *r, void *buf);

/* Decodes what a child sent. The child parses hostile bytes, so this is input: exactly
 * watch_result_wire_size() bytes with the magic, or -EPROTO; then every string terminated and
 * its control bytes replaced by '?', every flag 0 or 1, an unknown outcome internal_error, and
 * rid_source one of attach_rid_sources or NULL. Returns 0 with *ret filled. */
int watch_result_decode(const void *buf, size_t len, struct attach_result *ret);

/* The loop (watch.c). */

struct watch_selector {
    const char *comm;    /* exact /proc comm (15 bytes max), NULL = any */
    const char *cmdline; /* substring of the command line, NULL = any */
    bool have_uid;
    uid_t uid;          /* effective uid of the process */
    const char *cgroup; /* substring of /proc/<pid>/cgroup (a container ID), NULL = any */
    bool other_mntns;   /* only processes outside our own mount namespace (container) */
};

struct watch_opts {
    int proc_dirfd;
    struct watch_selector sel;
    struct attach_opts attach; /* for each attach; on_stage runs in the attach's child */
    int64_t interval_ms;       /* time between scans */
    const char *ready_file;    /* created after the first complete scan, NULL = none */
    int64_t max_scans;         /* 0 = until *stop (tests and benchmarks use a bound) */
    /* Called in the watcher once per new outcome of an instance (print, report an Event), and
     * once with ATTACH_INTERRUPTED for each attach abandoned at a stop. */
    void (*on_result)(const struct attach_result *r, bool retry_scheduled, void *userdata);
    /* Called with a sentence (rendered) when a process's TMPDIR stops answering (procindex.h);
     * NULL: not said. */
    void (*on_warning)(const char *msg, void *userdata);
    void *userdata;
    volatile sig_atomic_t *stop; /* set by the SIGTERM handler */
    size_t *ret_tracked;         /* if set: instances still tracked when the loop ended */
    size_t *ret_known;           /* if set: table entries (idle processes too) at the end */
};

/* Runs until *stop (or max_scans, and the attaches of the last scan have ended). The ready file
 * is created after the first scan, which starts attaches but never waits for them. Returns 0 on
 * a clean stop, or a negative errno when /proc cannot be scanned or the ready file cannot be
 * created; either way no child is left running unless it could not be killed. */
int watch_run(const struct watch_opts *o, struct cla_error *e);

#endif
