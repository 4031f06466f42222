/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watcher's pool (watch_pool.c): the attaches in flight, each in a child process of its own,
 * and the result each child sends back over a pipe. The bookkeeping (watch_pool_*) and the wire
 * format (watch_result_*) are pure; the jobs (watch_job_*) own the children, their pipes and
 * pidfds. The loop (watch.c) decides which instance gets a job and what its result means for the
 * table; nothing here calls the loop back.
 */
#ifndef CLRATTACH_WATCH_POOL_H
#define CLRATTACH_WATCH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "deliver/deliver.h"
#include "flow/watch_opts.h"
#include "flow/watch_table.h"
#include "target/target.h"

struct procindex;

/* Attaches in flight at once, each in a child process. Retries never take the last slot. */
#define WATCH_POOL_MAX 4
/* A child gets twice --timeout (its two exchanges) and this much more before it is killed. */
#define WATCH_ATTACH_SLACK_MS 5000
/* After a child the watcher killed, the process that removes that run's temporaries from the
 * target (watch_job_sweep_start) gets this long before it is killed in turn: a stop takes at most
 * WATCH_REAP_WAIT_MS and this past the signal. */
#define WATCH_SWEEP_WAIT_MS 2000

/* What a child sends back: its result with the one pointer (rid_source) as an index. The field
 * order is the layout both ends read (the magic first, the index at offset 4, the result at 8:
 * tests/unit/test_watch_pool.c overwrites from there). Both ends are the same build, forked, so
 * the layout, the outcome's number and the index into attach_rid_sources need not be stable
 * across versions. */
struct wire {
    uint32_t magic;
    uint32_t rid_source; /* 1 + index into attach_rid_sources, 0 = none */
    struct attach_result res;
};
#define WIRE_MAGIC 0x434c5257u /* "WRLC" */

enum job_end {
    JOB_RUNNING,
    JOB_TIMED_OUT,   /* killed by us past its deadline */
    JOB_INTERRUPTED, /* killed by us because the watcher stops */
};

struct job {
    bool used;
    const struct watch_opts *opts; /* what this attach runs with (watch_opts.choose), NULL: the
                                      loop's own */
    bool retry; /* an earlier outcome of the instance, or a failure of its lineage */
    pid_t pid;  /* the target, and its instance */
    uint64_t starttime;
    int64_t started_ms, deadline_ms;
    /* the child process running the attach, and what it sent so far */
    pid_t child;
    int pidfd; /* of the child; -1 where pidfd_open is missing (Linux < 5.3) */
    int rfd;   /* read end of its result pipe */
    bool eof, excess, reaped;
    int status; /* wait status, once reaped */
    enum job_end end;
    /* names the run's temporaries in the target (attach_opts.nonce): chosen before the fork,
     * so that a run the watcher had to kill can be swept after it (watch_job_sweep_start) */
    char nonce[DELIVER_NONCE_LEN + 1];
    bool swept;         /* a sweeper was started for it (once is enough) */
    pid_t sweeper;      /* the process sweeping, while the watcher waits for it */
    int sweeper_pidfd;  /* -1 when none (or pidfd_open is missing) */
    int sweeper_status; /* its wait status once reaped, -1 before */
    size_t got;
    struct wire wire;
    /* the pin from the scan: pinned is &tg while the watcher holds it, NULL once closed
     * (target_closep). The child takes a copy along; the watcher keeps its own until the job
     * ends, to sweep through it after a child it killed. */
    struct target tg;
    struct target *pinned;
    /* who the attach was for, from the pin: for a result the child never sent */
    pid_t nspid;
    uid_t uid;
    gid_t gid;
    char command_line[512];
};

/* A sweeper's exit status: 0 swept, with these bits for what else it found. */
#define SWEEPER_NO_ROOT       1 /* the target's root could not be opened: nothing done */
#define SWEEPER_RESUMED       2 /* ResumeRuntime answered with success (watch --startup) */
#define SWEEPER_RESUME_FAILED 4 /* ResumeRuntime owed but not answered with success */
#define SWEEPER_NO_CREDS      77

struct watch_pool {
    struct job v[WATCH_POOL_MAX];
    size_t n;
    /* sweepers killed past WATCH_SWEEP_WAIT_MS that had not ended yet (asleep in a stuck
     * filesystem): reaped whenever they do, so that none stays a zombie; 0 = free */
    pid_t strays[WATCH_POOL_MAX];
};

/* The bookkeeping of the slots: pure, whatever the jobs in them hold. */

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

/* The jobs: each owns its child process, its pipe and pidfd, and the pin it attaches to. */

/* Starts the attach of the reserved `slot` in a child process, which takes the pin along and
 * leaves with _exit; the watcher's copy of the pin is closed either way. Returns 0, or -errno
 * with `e` set when no pipe or no process could be made (nothing is left running then). The
 * child releases what it inherits of the watcher: `t`, `pool`, `x`. */
int watch_job_start(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                    struct procindex *x, size_t slot, struct cla_error *e);

/* Reads what the child has sent, without blocking; a child that sends more than a result is
 * killed. */
void watch_job_drain(struct job *j);

/* Reaps the child if it has ended (waiting for it when `block`); true once it has. */
bool watch_job_reap(struct job *j, bool block);

/* Kills the child through its pidfd; `why` is what its result will say, unless it already ended
 * for another reason. */
void watch_job_kill(struct job *j, enum job_end why);

/* Has the child sent exactly one well-formed result? */
bool watch_job_complete(const struct job *j);

/* Did the job's run end without cleaning up after itself (killed by us, or by a signal), with its
 * child reaped (a child still running could still be writing)? Then its temporaries are to be
 * swept. */
bool watch_job_needs_sweep(const struct job *j);

/* Starts a sweeper for the job in `slot`: a child process that acts as the target's user
 * (creds.h) through the job's pin, opens the target's root and removes the temporaries named with
 * the job's nonce from every candidate directory (place_sweep(): never a published profiler). A
 * process of its own, so that a filesystem that stops answering holds it, not the watcher's loop
 * (watch_pool_sweep_wait() bounds the wait). Returns 0, or -errno when none could be started. */
int watch_job_sweep_start(const struct watch_opts *o, struct watch_table *t,
                          struct watch_pool *pool, struct procindex *x, size_t slot);

/* Waits until every sweeper started has ended or `until_ms` comes; those still running then are
 * killed, and left to watch_pool_reap_strays() if they do not end at once. */
void watch_pool_sweep_wait(struct watch_pool *pool, int64_t until_ms);

/* Reaps, without waiting, the killed sweepers that have ended since. */
void watch_pool_reap_strays(struct watch_pool *pool);

/* Closes the job's pipe, pidfd and pin, whichever it still holds. */
void watch_job_release(struct job *j);

/* The result of an ended (or abandoned) job, for reporting: what the child sent, made safe, or
 * why there is none (timed out, interrupted, malformed, killed by a signal). */
void watch_job_result(const struct watch_opts *o, const struct job *j, struct attach_result *r);

/* A result the child did not send, `outcome` with the instance's identity as the watcher
 * pinned it and the time since the job started, no error set. */
void watch_job_result_of(const struct job *j, enum attach_outcome outcome, int64_t now,
                         struct attach_result *r);

#endif
