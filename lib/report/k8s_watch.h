/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods of one node as the apiserver sends them to the agent: a PodList, then a watch stream
 * of newline-delimited events fed in chunks of any size. Pure: no I/O; bounded by bounds.h.
 */
#ifndef CLRATTACH_K8S_WATCH_H
#define CLRATTACH_K8S_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/k8s_reply.h"

/* The annotation a pod names its profile with (docs/agent.md). */
#define K8S_PROFILE_ANNOTATION "clrattach.io/profile"

/* One container of status.containerStatuses (init and ephemeral containers are not kept). */
struct k8s_watch_container {
    char name[K8S_LABEL_MAX + 1];
    char container_id[K8S_CONTAINER_ID_MAX + 1]; /* "" before the container first ran */
    int restart_count;
};

/* What the agent needs of one pod. Strings are checked, never cut, except the annotation: its
 * first K8S_ANNOTATION_KEPT bytes are kept and profile_len is its whole length, so that the
 * refusal of a long one can say so (agent_annotation_parse). */
struct k8s_pod_info {
    char ns[K8S_LABEL_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    char uid[K8S_UID_MAX + 1];
    char resource_version[K8S_RESOURCE_VERSION_MAX + 1];
    char phase[16]; /* status.phase, "" when absent */
    bool has_profile;
    size_t profile_len;
    char profile[K8S_ANNOTATION_KEPT + 1];
    size_t n_containers;
    struct k8s_watch_container containers[K8S_POD_CONTAINERS_MAX];
};

enum k8s_watch_type {
    K8S_WATCH_ADDED,
    K8S_WATCH_MODIFIED,
    K8S_WATCH_DELETED,
    K8S_WATCH_BOOKMARK, /* pod.resource_version only */
    K8S_WATCH_ERROR,    /* status only; code 410 (Gone): the version expired, relist */
};

struct k8s_watch_event {
    enum k8s_watch_type type;
    struct k8s_pod_info pod;
    struct k8s_status status;
};

/* Decodes one event line of `len` bytes (no newline needed). -E2BIG above K8S_WATCH_LINE_MAX
 * or past a count cap, -EPROTO for anything else not a well-formed event. */
int k8s_watch_event_parse(const char *buf, size_t len, struct k8s_watch_event *ret,
                          struct cla_error *e);

/* Called for each event, in order; `ev` lives until the next call. A negative return (with e
 * set) stops the feed and is its result. */
typedef int (*k8s_watch_cb)(const struct k8s_watch_event *ev, void *userdata, struct cla_error *e);

/* The bytes of an unfinished line between chunks. Opaque; k8s_watch_stream_freep cleans up. */
struct k8s_watch_stream;

/* A new stream, or NULL without memory. */
struct k8s_watch_stream *k8s_watch_stream_new(void);
void k8s_watch_stream_free(struct k8s_watch_stream *s);
void k8s_watch_stream_freep(struct k8s_watch_stream **s);

/* Feeds the next `len` bytes; `cb` gets each event they complete. Empty lines are skipped. A
 * line longer than K8S_WATCH_LINE_MAX (-E2BIG), a malformed one (-EPROTO), no memory (-ENOMEM)
 * or the callback's error ends the stream: every later feed answers -EPROTO. */
int k8s_watch_feed(struct k8s_watch_stream *s, const char *buf, size_t len, k8s_watch_cb cb,
                   void *userdata, struct cla_error *e);

/* Bytes of an unfinished line held: a stream that ends with some cut its last event. */
size_t k8s_watch_pending(const struct k8s_watch_stream *s);

/* A PodList: its pods and the resourceVersion to watch from. */
struct k8s_pod_list {
    char resource_version[K8S_RESOURCE_VERSION_MAX + 1];
    size_t n_items;
    struct k8s_pod_info *items; /* n_items of them, owned */
};

/* Decodes a PodList reply into *ret (free with k8s_pod_list_free; *ret untouched on failure).
 * -E2BIG above K8S_LIST_MAX or K8S_LIST_PODS_MAX pods, -ENOMEM, -EPROTO for a malformed list
 * or pod, or a list cut into pages (metadata.continue: the agent asks for no limit). */
int k8s_pod_list_parse(const char *buf, size_t len, struct k8s_pod_list *ret, struct cla_error *e);
void k8s_pod_list_free(struct k8s_pod_list *l);

/* "ADDED", "MODIFIED", ... */
const char *k8s_watch_type_name(enum k8s_watch_type t);

#endif
