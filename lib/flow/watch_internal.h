/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_WATCH_INTERNAL_H
#define CLRATTACH_WATCH_INTERNAL_H

/*
 * What the watcher's loop (watch.c) and its pool of attaches in flight (watch_pool.c) share;
 * not part of the API (watch.h). The pool holds the jobs and talks to their child processes;
 * the loop decides which instance gets a job and what its result means for the table
 * (watch_table.c, which needs nothing from here).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "flow/attach.h"
#include "flow/watch.h"
#include "target/target.h"

struct procindex;

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
    size_t got;
    struct wire wire;
    /* the pin from the scan, held until the child is started with it: pinned is &tg while
     * the watcher holds it, NULL once closed or handed over (target_closep) */
    struct target tg;
    struct target *pinned;
    /* who the attach was for, from the pin: for a result the child never sent */
    pid_t nspid;
    uid_t uid;
    gid_t gid;
    char command_line[512];
};

struct watch_pool {
    struct job v[WATCH_POOL_MAX];
    size_t n;
};

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
