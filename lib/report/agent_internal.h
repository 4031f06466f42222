/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's state, shared by its loop (agent.c), its configuration's reload
 * (agent_config.c) and its status file (agent_status.c).
 */
#ifndef CLRATTACH_AGENT_INTERNAL_H
#define CLRATTACH_AGENT_INTERNAL_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "report/agent.h"
#include "report/agent_plan.h"
#include "report/agent_pods.h"
#include "report/k8s_follow.h"

/* Processes handed to an attach, remembered to tell which pod a result is for. */
#define AGENT_CHOSEN_MAX 256
/* The profiles file is looked at this often; the status file rewritten at most this often. */
#define AGENT_CONFIG_CHECK_MS 2000
#define AGENT_STATUS_MIN_MS   1000
/* Every pod's namespace is looked up this often (its labels refreshed past K8S_NS_TTL_MS). */
#define AGENT_NS_TOUCH_MS 5000

struct agent_chosen {
    pid_t pid;
    uint64_t starttime;
    char uid[K8S_UID_MAX + 1];
    char ns[K8S_LABEL_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    char container[K8S_LABEL_MAX + 1];
    const struct agent_plan_entry *entry; /* in a plan kept until the agent ends */
    bool ok;                              /* its profile's attach succeeded */
};

/* A stop owed to a runtime whose pod's annotation went (perfmap, otel), and its child. */
#define AGENT_STOPS_MAX    16
#define AGENT_STOP_WAIT_MS 30000
struct agent_stop {
    pid_t pid;
    uint64_t starttime;
    const struct agent_plan_entry *entry;
    char ns[K8S_LABEL_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    pid_t child; /* 0 while queued */
    int64_t deadline_ms;
};

/* An otel attach's options for one pod's container (its names in the resource), kept while a
 * job may use them: freed once its pod has been gone for AGENT_POD_OPTS_KEEP_MS, well past any
 * attach's deadline and sweep, or when the agent ends. */
#define AGENT_POD_OPTS_KEEP_MS (10 * 60 * 1000)
struct agent_pod_job {
    struct agent_pod_job *next;
    const struct agent_plan_entry *entry;
    char uid[K8S_UID_MAX + 1];
    int64_t gone_ms; /* when its pod was first seen gone; 0 while it is there */
    struct agent_pod_opts po;
};

struct agent {
    const struct agent_opts *o;
    struct watch_opts wo; /* the loop's: base with the agent's hooks */
    struct k8s_follow *f;
    struct agent_pods pods;
    struct agent_plan *plan;
    struct stat config_st; /* of the profiles file last read (good or not) */
    int64_t config_check_ms;
    int64_t ns_touch_ms;
    struct agent_chosen chosen[AGENT_CHOSEN_MAX];
    size_t chosen_next;
    bool status_dirty;
    /* what choose answers may have changed (an annotated pod came or changed, a judgement, the
     * profiles): the watcher looks at its idle processes again at once (after_poll) */
    bool look_again;
    bool status_failed; /* the last write failed (and was said) */
    int64_t status_ms;
    struct agent_stop stops[AGENT_STOPS_MAX];
    size_t n_stops;
    struct agent_pod_job *pod_jobs;
    uint64_t warnings, warnings_failed, reloads, reloads_refused;
};

void agent_log(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* agent_config.c: the first load (an error is the caller's), and a reload when the file
 * changed (a bad one keeps the last good plan, and says so). */
int agent_config_start(struct agent *a, struct cla_error *e);
void agent_config_check(struct agent *a, int64_t now_ms);

/* agent_stop.c: the stops owed when pod `p` loses its annotation, queued; started, reaped and
 * bounded after each wait; all ended when the agent ends. */
void agent_stop_pod(struct agent *a, const struct agent_pod *p);
void agent_stops_step(struct agent *a, int64_t now_ms);
void agent_stops_end(struct agent *a);

/* agent_status.c: the status file, rewritten when due (dirty, and not too soon). */
void agent_status_write(struct agent *a, int64_t now_ms, bool force);

#endif
