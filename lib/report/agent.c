/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's loop: the watcher's (watch_run) with the agent's hooks. The follower's sockets
 * join the loop's wait; after each wait the follower steps, the pods it changed are judged (a
 * Warning Event per new refusal), and the profiles file is looked at. A process is attached
 * only when its cgroup names a container of an allowed pod, with that pod's profile's options.
 */
#include "report/agent_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/bounds.h"
#include "base/util.h"
#include "flow/watch.h"
#include "report/k8s_client.h"
#include "target/target.h"

/* A line for the log: `prefix` and the formatted rest. */
static void vlog(struct agent *a, const char *prefix, const char *fmt, va_list ap)
{
    char msg[768];
    size_t n = (size_t)snprintf(msg, sizeof(msg), "%s", prefix);
    vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
    if (a->o->on_log)
        a->o->on_log(msg, a->o->userdata);
}

void agent_log(struct agent *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(a, "", fmt, ap);
    va_end(ap);
}

/* ---- the follower's hooks ---------------------------------------------------------------- */

static void on_pod(enum k8s_follow_kind kind, const struct k8s_pod_info *pod, void *userdata)
{
    struct agent *a = userdata;
    a->status_dirty = true;
    switch (kind) {
    case K8S_FOLLOW_SYNC_BEGIN: agent_pods_sync_begin(&a->pods); return;
    case K8S_FOLLOW_SYNC_END: {
        a->look_again = true;
        size_t gone = agent_pods_sync_end(&a->pods);
        if (gone)
            agent_log(a, "%zu annotated pods gone while the watch was down", gone);
        return;
    }
    case K8S_FOLLOW_DELETE: agent_pods_remove(&a->pods, pod->uid); return;
    case K8S_FOLLOW_UPSERT:
        if (!pod->has_profile) { /* its annotation went: what has a stop is stopped */
            const struct agent_pod *p = agent_pods_find(&a->pods, pod->uid);
            if (p && p->state == AGENT_POD_ALLOWED)
                agent_stop_pod(a, p);
        }
        if (!agent_pods_upsert(&a->pods, pod) && pod->has_profile)
            agent_log(a, "pod %s/%s: not kept (the agent's table is full)", pod->ns, pod->name);
        /* Its containers' IDs may be new (the kubelet reports one after the process started,
         * which was then looked at and not chosen): looked at again now, not at its next idle
         * look (WATCH_IDLE_LOOK_MS). */
        if (pod->has_profile)
            a->look_again = true;
        return;
    }
}

static void on_namespace(const char *ns, void *userdata)
{
    struct agent *a = userdata;
    /* Its labels came or changed: its pods are judged again. */
    for (size_t i = 0; i < a->pods.n; i++)
        if (strcmp(a->pods.v[i]->ns, ns) == 0)
            a->pods.v[i]->rejudge = true;
}

static void on_follow_log(void *userdata, const char *fmt, va_list ap)
{
    vlog(userdata, "api: ", fmt, ap);
}

/* ---- judging, and the Warning Event of a refusal ------------------------------------------ */

static void warn(struct agent *a, struct agent_pod *p)
{
    p->warn_due = false;
    agent_log(a, "pod %s/%s: refused: %s", p->ns, p->name, p->why);
    if (!a->o->warnings)
        return;
    struct k8s_pod_ref ref = {0};
    snprintf(ref.name, sizeof(ref.name), "%s", p->name);
    snprintf(ref.namespace_, sizeof(ref.namespace_), "%s", p->ns);
    snprintf(ref.uid, sizeof(ref.uid), "%s", p->uid);
    char note[CLA_ERR_MSG_MAX + 128], instance[K8S_EVENT_FIELD_MAX + 1];
    snprintf(note, sizeof(note),
             "clrattach agent: annotation " K8S_PROFILE_ANNOTATION " refused, nothing loaded: %s.",
             p->why);
    snprintf(instance, sizeof(instance), "clrattach-agent-%s", a->o->node);
    struct k8s_event_spec ev = {.reason = "ProfileRefused",
                                .type = "Warning",
                                .action = "SelectProfile",
                                .note = note,
                                .reporting_instance = instance};
    clock_gettime(CLOCK_REALTIME, &ev.event_time);
    struct k8s_report_outcome *out = calloc(1, sizeof(*out));
    struct cla_error e = {0};
    int r = out ? k8s_report_event(a->o->cfg, &ref, &ev, out, &e) : -ENOMEM;
    free(out);
    if (r < 0) {
        a->warnings_failed++;
        agent_log(a, "pod %s/%s: its Warning Event was not sent: %s", p->ns, p->name, e.msg);
    } else {
        a->warnings++;
    }
}

/* Once in a while every pod's namespace is looked up: labels older than K8S_NS_TTL_MS are asked
 * for again, and their coming (on_namespace) judges the pods again, so that a label removed
 * from a namespace stops the attaches of its pods' new runtimes. */
static void touch_namespaces(struct agent *a, int64_t now)
{
    if (now < a->ns_touch_ms)
        return;
    a->ns_touch_ms = now + AGENT_NS_TOUCH_MS;
    const struct k8s_namespace *ns;
    for (size_t i = 0; i < a->pods.n; i++)
        (void)k8s_follow_namespace(a->f, a->pods.v[i]->ns, now, &ns);
}

static void judge_all(struct agent *a, int64_t now)
{
    struct agent_label labels[K8S_NS_LABELS_MAX];
    touch_namespaces(a, now);
    for (size_t i = 0; i < a->pods.n; i++) {
        struct agent_pod *p = a->pods.v[i];
        if (p->state != AGENT_POD_NEW && p->state != AGENT_POD_WAIT_NS && !p->rejudge)
            continue;
        const struct k8s_namespace *ns = NULL;
        int known = k8s_follow_namespace(a->f, p->ns, now, &ns);
        size_t n = known == 1 ? k8s_namespace_labels(ns, labels) : 0;
        enum agent_pod_state was = p->state;
        agent_pods_judge(p, &a->plan->profiles, known, labels, n);
        if (p->state != was)
            a->status_dirty = a->look_again = true;
        if (p->state == AGENT_POD_ALLOWED && was != AGENT_POD_ALLOWED)
            agent_log(a, "pod %s/%s: profile '%s' allowed", p->ns, p->name, p->profile);
        if (p->warn_due)
            warn(a, p);
    }
}

/* The options of an otel entry for the pod's container k, kept (agent_pod_job); NULL when out
 * of memory. Other modes use the entry's own. */
static const struct watch_opts *pod_opts(struct agent *a, const struct agent_plan_entry *x,
                                         const struct agent_pod *p, size_t k)
{
    const char *container = p->c[k].name;
    for (struct agent_pod_job *j = a->pod_jobs; j; j = j->next)
        if (j->entry == x && strcmp(j->uid, p->uid) == 0 && strcmp(j->po.container, container) == 0)
            return &j->po.wo;
    struct agent_pod_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->entry = x;
    memcpy(j->uid, p->uid, sizeof(j->uid));
    agent_plan_pod_opts(x, p->ns, p->name, container, &j->po);
    j->next = a->pod_jobs;
    a->pod_jobs = j;
    return &j->po.wo;
}

/* Options of pods gone long enough are freed (every one when `all`). */
static void pod_opts_sweep(struct agent *a, int64_t now_ms, bool all)
{
    struct agent_pod_job **pp = &a->pod_jobs;
    while (*pp) {
        struct agent_pod_job *j = *pp;
        if (!all && agent_pods_find(&a->pods, j->uid))
            j->gone_ms = 0;
        else if (!all && !j->gone_ms)
            j->gone_ms = now_ms;
        if (all || (j->gone_ms && now_ms - j->gone_ms > AGENT_POD_OPTS_KEEP_MS)) {
            *pp = j->next;
            free(j);
            continue;
        }
        pp = &j->next;
    }
}

/* ---- the watcher's hooks ----------------------------------------------------------------- */

static size_t poll_fds(struct pollfd *fds, size_t max, int64_t *until_ms, void *userdata)
{
    struct agent *a = userdata;
    int64_t at = a->config_check_ms;
    if (a->n_stops && util_now_ms() + 100 < at)
        at = util_now_ms() + 100; /* a stop's child to reap */
    if (a->status_dirty && a->status_ms + AGENT_STATUS_MIN_MS < at)
        at = a->status_ms + AGENT_STATUS_MIN_MS;
    if (at < *until_ms)
        *until_ms = at;
    return k8s_follow_fds(a->f, fds, max, until_ms);
}

static bool after_poll(const struct pollfd *fds, size_t n, void *userdata)
{
    struct agent *a = userdata;
    k8s_follow_step(a->f, fds, n, util_now_ms());
    int64_t now = util_now_ms();
    agent_config_check(a, now);
    agent_stops_step(a, now);
    if (a->pod_jobs)
        pod_opts_sweep(a, now, false);
    judge_all(a, now);
    agent_status_write(a, now, false);
    bool look = a->look_again;
    a->look_again = false;
    return look;
}

static const struct watch_opts *choose(const struct target *tg, void *userdata)
{
    struct agent *a = userdata;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, k = 0;
    if (target_read_file(tg, "cgroup", PROC_CGROUP_MAX, &buf, &len, NULL) < 0)
        return NULL;
    struct agent_pod *p = agent_pods_match(&a->pods, buf, len, &k);
    const struct agent_plan_entry *x = p ? agent_plan_find(a->plan, p->profile) : NULL;
    if (!x)
        return NULL;
    struct agent_chosen *c = &a->chosen[a->chosen_next];
    a->chosen_next = (a->chosen_next + 1) % AGENT_CHOSEN_MAX;
    c->pid = tg->pid;
    c->starttime = tg->stat.starttime;
    memcpy(c->uid, p->uid, sizeof(c->uid));
    memcpy(c->ns, p->ns, sizeof(c->ns));
    memcpy(c->name, p->name, sizeof(c->name));
    memcpy(c->container, p->c[k].name, sizeof(c->container));
    c->entry = x;
    c->ok = false;
    return x->wo.attach.otel ? pod_opts(a, x, p, k) : &x->wo;
}

static struct agent_chosen *chosen_of(struct agent *a, pid_t pid, uint64_t start)
{
    for (size_t i = 0; i < AGENT_CHOSEN_MAX; i++)
        if (a->chosen[i].pid == pid && a->chosen[i].starttime == start && pid > 0)
            return &a->chosen[i];
    return NULL;
}

static void on_result(const struct attach_result *r, bool retry, void *userdata)
{
    struct agent *a = userdata;
    struct agent_chosen *c = chosen_of(a, r->pid, r->starttime);
    struct k8s_pod_ref ref = {0};
    if (c) {
        memcpy(ref.name, c->name, sizeof(c->name));
        memcpy(ref.namespace_, c->ns, sizeof(c->ns));
        memcpy(ref.uid, c->uid, sizeof(c->uid));
        memcpy(ref.container, c->container, sizeof(c->container));
        struct agent_pod *p = agent_pods_find(&a->pods, c->uid);
        if (attach_outcome_ok(r->outcome))
            c->ok = true;
        if (p) {
            if (attach_outcome_ok(r->outcome))
                p->attached++;
            else if (!retry && r->outcome != ATTACH_INTERRUPTED)
                p->failed++;
            snprintf(p->last, sizeof(p->last), "%s", attach_outcome_name(r->outcome));
            a->status_dirty = true;
        }
    }
    if (a->o->on_attach)
        a->o->on_attach(r, retry, c ? &ref : NULL, c ? c->entry->profile : NULL, a->o->userdata);
}

static void on_warning(const char *msg, void *userdata)
{
    agent_log(userdata, "warning: %s", msg);
}

/* ---- the run ----------------------------------------------------------------------------- */

static int agent_start(struct agent *a, const struct agent_opts *o, struct cla_error *e)
{
    a->o = o;
    int r = agent_config_start(a, e);
    if (r < 0)
        return r;
    struct k8s_follow_opts fo = {
        .cfg = o->cfg,
        .node = o->node,
        .watch_timeout_s = o->watch_timeout_s,
        .hooks = {.on_pod = on_pod,
                  .on_namespace = on_namespace,
                  .on_log = on_follow_log,
                  .userdata = a},
    };
    if ((r = k8s_follow_new(&fo, &a->f, e)) < 0)
        return r;
    a->wo = o->base;
    a->wo.sel = (struct watch_selector){0};
    a->wo.choose = choose;
    a->wo.poll_fds = poll_fds;
    a->wo.after_poll = after_poll;
    a->wo.on_result = on_result;
    a->wo.on_warning = on_warning;
    a->wo.userdata = a;
    a->status_dirty = true;
    return 0;
}

int agent_run(const struct agent_opts *o, struct cla_error *e)
{
    struct agent *a = calloc(1, sizeof(*a));
    if (!a)
        return err_set(e, -ENOMEM, "out of memory");
    int r = agent_start(a, o, e);
    if (r == 0) {
        agent_log(a, "node %s: following its pods; profiles from %s", o->node, o->profiles_path);
        r = watch_run(&a->wo, e);
        agent_stops_end(a);
        agent_status_write(a, util_now_ms(), true);
    }
    k8s_follow_free(a->f);
    pod_opts_sweep(a, 0, true);
    agent_pods_free(&a->pods);
    agent_plan_free(a->plan);
    free(a);
    return r;
}
