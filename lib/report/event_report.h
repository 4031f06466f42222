/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reporting an attach result to Kubernetes: the one entry point for the Event and the
 * termination log. The Event is worded in result_text.c, built in k8s_event.c and sent in
 * k8s_client.c; this module decides whether and where to report, keys the Event series and
 * holds their cache. lib/ never prints: warnings and errors come back to the caller.
 */
#ifndef CLRATTACH_EVENT_REPORT_H
#define CLRATTACH_EVENT_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "flow/attach.h"
#include "base/err.h"
#include "runtime/ipc.h"
#include "report/event_limit.h"
#include "report/k8s_client.h"
#include "report/k8s_series.h"
#include "report/k8s_config.h"
#include "report/k8s_event.h"
#include "report/k8s_target_sa.h"
#include "target/target.h"

enum event_mode { EVENT_MODE_OFF, EVENT_MODE_AUTO, EVENT_MODE_REQUIRED };

struct event_reporter {
    /* From the options, before event_report_prepare(). */
    enum event_mode mode;
    bool dry_run;
    struct k8s_config_opts opts;
    const char *pod_name, *pod_uid, *container;
    const char *termination_log;
    /* Filled by the calls below. */
    bool enabled;     /* a configuration was found (or dry run) */
    bool from_target; /* no token of our own: use the target's (ephemeral container) */
    struct k8s_target_sa sa;
    struct k8s_config cfg;
    struct k8s_pod_ref pod;
    int termination_fd;
    size_t termination_len; /* longest message written so far */
    /* watch: repeats of one outcome update an Event series instead of adding Events */
    struct k8s_series_cache *series;
    /* watch and listen: how many results the runtimes may cause (event_limit.h) */
    struct event_limit *limit;
};

/* The defaults before options: Events auto, no termination log open. */
#define EVENT_REPORTER_INIT                                                                        \
    {                                                                                              \
        .mode = EVENT_MODE_AUTO, .termination_fd = -1, .sa = {.token_fd = -1, .ca_fd = -1 }        \
    }

/* Opens the termination log and loads the cluster configuration, before the sandbox and before
 * any target byte. 0 to go on, also when Events end up off in auto mode: then `ret_warning`
 * (may be NULL) gets a message when the reason is worth telling. < 0 with `e` filled when the
 * command must stop (a bad --termination-log or pod env, a required report impossible). */
int event_report_prepare(struct event_reporter *rep, struct cla_error *ret_warning,
                         struct cla_error *e);

/* For rep->from_target: takes the service account of the pinned target `t`, or, when pinning
 * failed (t NULL), gives up with `pin_error`. 0 when Events are on; < 0 with `e` filled (and a
 * hint) when they are not: fatal in required mode, a warning in auto mode. */
int event_report_use_target(struct event_reporter *rep, const struct target *t,
                            const struct cla_error *pin_error, struct cla_error *e);

/* For a long-running watcher: a target's token cannot serve it, so Events go off (a warning in
 * `ret_warning`) or, in required mode, -ENOENT in `e`. Then starts the series cache, so that
 * repeats update one Event. -ENOMEM. */
int event_report_for_watch(struct event_reporter *rep, struct cla_error *ret_warning,
                           struct cla_error *e);

/* What event_report_send() did, for the caller to print. */
struct event_report_sent {
    bool sent;          /* false: reporting is off and nothing was due */
    bool dry_run;       /* the Event was built, not sent: body holds it */
    char *body;         /* dry run only; caller frees */
    const char *reason; /* ProfilerAttached, ... (static) */
    struct k8s_report_outcome out;
};

/* Sends (or, dry run, builds) the Event for `res`. A failure never changes the outcome;
 * returns < 0 when a report was due and did not happen (-ENOENT: required but not configured,
 * with `e` unset), else 0. *ret is filled in every case; free ret->body. */
int event_report_send(struct event_reporter *rep, const struct attach_result *res,
                      const char *profiler, const struct ipc_guid *clsid,
                      struct event_report_sent *ret, struct cla_error *e);

/* watch and listen: may this result be reported, its lines and its Event? The runtimes a
 * long-running watcher serves are hostile input, and one that makes up instance after instance
 * must not cost an API write and a line each (event_limit.h). true for every result outside
 * watch; false counts it as suppressed, and the next Event sent says how many were. */
bool event_report_admit(struct event_reporter *rep, const struct attach_result *res,
                        const char *profiler);

/* Results not reported because of the rate limit, in all (0 outside watch). */
uint64_t event_report_suppressed(const struct event_reporter *rep);

/* Replaces the termination log's content with the result's message (the JSON `json` when it
 * fits, else a summary with `exit_code`). 0 when there is no log; -errno. */
int event_report_termination_log(struct event_reporter *rep, const struct attach_result *res,
                                 const char *json, int exit_code);

/* Closes what the reporter holds; safe to call twice. */
void event_report_close(struct event_reporter *rep);

#endif
