/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's pods: those of its node that carry a clrattach.io/profile annotation, each judged
 * (profile, namespace) and its containers' IDs, and which of them a process belongs to by its
 * cgroup. Pure: no I/O.
 */
#ifndef CLRATTACH_AGENT_PODS_H
#define CLRATTACH_AGENT_PODS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "report/agent_profiles.h"
#include "report/k8s_watch.h"
#include "target/cgroup_id.h"

enum agent_pod_state {
    AGENT_POD_NEW,     /* not judged since its annotation (or the profiles) changed */
    AGENT_POD_WAIT_NS, /* its namespace's labels are not known yet */
    AGENT_POD_ALLOWED, /* its containers' runtimes get the profile */
    AGENT_POD_REFUSED, /* a Warning Event, nothing loaded */
};

struct agent_container {
    char name[K8S_LABEL_MAX + 1];
    bool have_id; /* the kubelet reported an ID we parse */
    struct cgroup_status_id id;
    int restart_count;
};

struct agent_pod {
    char ns[K8S_LABEL_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    char uid[K8S_UID_MAX + 1];
    size_t annotation_len; /* the value's whole length, and its first bytes */
    char annotation[K8S_ANNOTATION_KEPT + 1];
    size_t n_containers;
    struct agent_container c[K8S_POD_CONTAINERS_MAX];
    enum agent_pod_state state;
    char profile[K8S_LABEL_MAX + 1]; /* when ALLOWED */
    char why[CLA_ERR_MSG_MAX];       /* when REFUSED: fixed words, never the annotation's value */
    bool warn_due;                   /* a Warning Event is owed for this refusal */
    bool seen;                       /* in the current list (agent_pods_sync_*) */
    bool rejudge;                    /* judged again at the next look (profiles, labels) */
    unsigned attached, failed;       /* results reported for its processes */
    char last[64];                   /* the last result's outcome name, "" before */
};

struct agent_pods {
    size_t n;
    struct agent_pod *v[AGENT_PODS_MAX];
};

/* A pod as the follower sent it. One with no annotation is dropped (the agent keeps only the
 * pods that ask for a profile); one whose annotation changed is judged again. Returns the pod,
 * or NULL when dropped, over AGENT_PODS_MAX or out of memory. */
struct agent_pod *agent_pods_upsert(struct agent_pods *t, const struct k8s_pod_info *p);

/* A pod deleted (by uid). */
void agent_pods_remove(struct agent_pods *t, const char *uid);

/* A relist: every pod unseen until agent_pods_sync_end() is gone. Returns how many went. */
void agent_pods_sync_begin(struct agent_pods *t);
size_t agent_pods_sync_end(struct agent_pods *t);

/* Every pod to be judged again (the profiles changed): `rejudge` set, its state kept until. */
void agent_pods_rejudge(struct agent_pods *t);

/* Judges a pod: its annotation against `profiles`, then, when it names one, the namespace's
 * labels: `ns_known` 1 with `labels`, 0 while they are asked for, < 0 when they cannot be read
 * (the pod waits). A new refusal sets warn_due. */
void agent_pods_judge(struct agent_pod *p, const struct agent_profiles *profiles, int ns_known,
                      const struct agent_label *labels, size_t n_labels);

/* The allowed pod whose container the process with cgroup text `buf` runs in (exact, whole
 * IDs, cgroup_id_matches), with *ret_container its index; NULL when none. */
struct agent_pod *agent_pods_match(struct agent_pods *t, const char *buf, size_t len,
                                   size_t *ret_container);

struct agent_pod *agent_pods_find(struct agent_pods *t, const char *uid);
void agent_pods_free(struct agent_pods *t);

/* "new", "waiting", "allowed", "refused". */
const char *agent_pod_state_name(enum agent_pod_state s);

#endif
