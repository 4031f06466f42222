/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's table of annotated pods: kept in step with the follower's events, each pod judged
 * against the profiles and its namespace's labels, and a process's cgroup matched to one of
 * their containers.
 */
#include "report/agent_pods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct agent_pod *agent_pods_find(struct agent_pods *t, const char *uid)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i]->uid, uid) == 0)
            return t->v[i];
    return NULL;
}

void agent_pods_remove(struct agent_pods *t, const char *uid)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i]->uid, uid) != 0)
            continue;
        free(t->v[i]);
        t->v[i] = t->v[--t->n];
        return;
    }
}

static void take_containers(struct agent_pod *p, const struct k8s_pod_info *in)
{
    p->n_containers = in->n_containers;
    for (size_t i = 0; i < in->n_containers; i++) {
        const struct k8s_watch_container *w = &in->containers[i];
        struct agent_container *c = &p->c[i];
        memcpy(c->name, w->name, sizeof(c->name));
        c->restart_count = w->restart_count;
        c->have_id =
            w->container_id[0] &&
            cgroup_id_parse_status(w->container_id, strlen(w->container_id), &c->id, NULL) == 0;
    }
}

struct agent_pod *agent_pods_upsert(struct agent_pods *t, const struct k8s_pod_info *in)
{
    struct agent_pod *p = agent_pods_find(t, in->uid);
    if (!in->has_profile) {
        agent_pods_remove(t, in->uid);
        return NULL;
    }
    if (!p) {
        if (t->n == AGENT_PODS_MAX || !(p = calloc(1, sizeof(*p))))
            return NULL;
        t->v[t->n++] = p;
        memcpy(p->uid, in->uid, sizeof(p->uid));
    }
    memcpy(p->ns, in->ns, sizeof(p->ns));
    memcpy(p->name, in->name, sizeof(p->name));
    /* Another value is another request: judged afresh, and refused again with a new Event. */
    if (p->annotation_len != in->profile_len || strcmp(p->annotation, in->profile) != 0) {
        p->annotation_len = in->profile_len;
        memcpy(p->annotation, in->profile, sizeof(p->annotation));
        p->state = AGENT_POD_NEW;
        p->warn_due = false;
        p->why[0] = '\0';
    }
    take_containers(p, in);
    p->seen = true;
    return p;
}

void agent_pods_sync_begin(struct agent_pods *t)
{
    for (size_t i = 0; i < t->n; i++)
        t->v[i]->seen = false;
}

size_t agent_pods_sync_end(struct agent_pods *t)
{
    size_t gone = 0;
    for (size_t i = 0; i < t->n;) {
        if (t->v[i]->seen) {
            i++;
            continue;
        }
        free(t->v[i]);
        t->v[i] = t->v[--t->n];
        gone++;
    }
    return gone;
}

void agent_pods_rejudge(struct agent_pods *t)
{
    for (size_t i = 0; i < t->n; i++)
        t->v[i]->rejudge = true;
}

static void refuse(struct agent_pod *p, const char *why)
{
    /* The same refusal again (the profiles reloaded, the pod modified) is not warned twice. */
    bool again = strcmp(p->why, why) == 0;
    p->state = AGENT_POD_REFUSED;
    p->profile[0] = '\0';
    if (!again) {
        size_t n = strnlen(why, sizeof(p->why) - 1);
        memcpy(p->why, why, n);
        p->why[n] = '\0';
        p->warn_due = true;
    }
}

void agent_pods_judge(struct agent_pod *p, const struct agent_profiles *profiles, int ns_known,
                      const struct agent_label *labels, size_t n_labels)
{
    const struct agent_profile *prof = NULL;
    struct cla_error e = {0};
    p->rejudge = false;
    if (agent_annotation_parse(profiles, p->annotation, p->annotation_len, &prof, &e) < 0) {
        refuse(p, e.msg);
        return;
    }
    if (ns_known <= 0) {
        p->state = AGENT_POD_WAIT_NS;
        return;
    }
    if (!agent_profile_allows(prof, labels, n_labels)) {
        char why[CLA_ERR_MSG_MAX];
        snprintf(why, sizeof(why),
                 "profile '%s' is not allowed in this namespace (its namespace selector does "
                 "not select it)",
                 prof->name);
        refuse(p, why);
        return;
    }
    p->state = AGENT_POD_ALLOWED;
    p->why[0] = '\0';
    p->warn_due = false;
    memcpy(p->profile, prof->name, sizeof(p->profile));
}

struct agent_pod *agent_pods_match(struct agent_pods *t, const char *buf, size_t len,
                                   size_t *ret_container)
{
    for (size_t i = 0; i < t->n; i++) {
        struct agent_pod *p = t->v[i];
        if (p->state != AGENT_POD_ALLOWED)
            continue;
        for (size_t k = 0; k < p->n_containers; k++) {
            if (!p->c[k].have_id || cgroup_id_matches(buf, len, &p->c[k].id, p->uid, NULL) != 1)
                continue;
            *ret_container = k;
            return p;
        }
    }
    return NULL;
}

void agent_pods_free(struct agent_pods *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    t->n = 0;
}

const char *agent_pod_state_name(enum agent_pod_state s)
{
    switch (s) {
    case AGENT_POD_NEW: return "new";
    case AGENT_POD_WAIT_NS: return "waiting";
    case AGENT_POD_ALLOWED: return "allowed";
    case AGENT_POD_REFUSED: return "refused";
    }
    return "?";
}
