/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_ATTACH_INTERNAL_H
#define CLRATTACH_ATTACH_INTERNAL_H

/*
 * What the attach flow (attach.c) and its startup half (startup.c: --env, StartupProfiler, the
 * resume owed to a paused runtime) share; not part of the API (attach.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deliver/deliver.h"
#include "deliver/place.h"
#include "flow/attach.h"
#include "profset/profset.h"
#include "profset/rid.h"
#include "profset/vendors.h"
#include "runtime/ipc_conn.h"
#include "target/diag_socket.h"

/* What the steps of one attach share. Everything here is released when attach.c's run() returns,
 * before attach_run() gives our own credentials back. */
struct attempt {
    const struct attach_opts *o;
    struct attach_result *res;
    struct target *t;
    struct attach_conn c; /* the runtime, reached (attach_reach) */
    struct rid rid;
    const struct profset_build *build;
    char nonce[DELIVER_NONCE_LEN + 1]; /* names this run's temporaries */
    struct place_opts po;
    struct placed p;
    uint8_t *req; /* the AttachProfiler frame */
    size_t req_len;
    uint32_t hr;
    int64_t sent_at;
    int64_t start_ms;  /* when run() began: the result's resumed_after_ms counts from here */
    int64_t resume_by; /* res->resume_owed: ResumeRuntime goes out by then (--resume-deadline) */
    bool resume_sent;
    bool env_done;     /* every --env variable answered with success */
    bool env_refused;  /* a variable could not be sent: the outcome is set already */
    bool env_rejected; /* the runtime refused a variable: a->hr is its answer */
    bool startup_sent; /* StartupProfiler went out: a->hr is its answer, not AttachProfiler's */
    /* the profiler's row in the table of those inert on attach (profset/vendors.h), or NULL */
    const struct vendor_noop *inert;
};

/* Sets the outcome and, unless one is set already, the error's code. Returns `code` when
 * negative, else -EPROTO, for the caller to return. */
int attach_fail(struct attach_result *res, enum attach_outcome o, int code);

/* Removes what this run delivered (nothing reused), unless --keep: the runtime refused it, so
 * nothing maps it. Done before the reply stage of the seccomp filter, which forbids unlink. */
void attach_undo_delivery(struct attempt *a);

/* The reply stage of the seccomp filter, an owed ResumeRuntime sent first (attach.c). */
int attach_tighten_replied(struct attempt *a, int r);

#endif
