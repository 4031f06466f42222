/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's follower: the pods of one node kept in step with the apiserver (list, then watch
 * from the list's resourceVersion with bookmarks, relist on 410, reconnect with back-off, a
 * stalled watch restarted) and the labels of their namespaces, over libcurl's multi interface
 * driven from the caller's poll loop: nothing here ever waits.
 */
#ifndef CLRATTACH_K8S_FOLLOW_H
#define CLRATTACH_K8S_FOLLOW_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "report/k8s_config.h"
#include "report/k8s_namespace.h"
#include "report/k8s_watch.h"

/* Sockets and transfers the follower may have open at once (the list or watch, and up to
 * K8S_FOLLOW_NS_INFLIGHT namespace GETs). */
#define K8S_FOLLOW_NS_INFLIGHT 4
#define K8S_FOLLOW_FDS_MAX     8
/* Back-off between failed requests: this doubling up to the cap, with jitter (half to whole). */
#define K8S_FOLLOW_BACKOFF_FIRST_MS 500
#define K8S_FOLLOW_BACKOFF_MAX_MS   30000

enum k8s_follow_kind {
    K8S_FOLLOW_SYNC_BEGIN, /* a list begins: every pod the caller knows is to be seen again */
    K8S_FOLLOW_UPSERT,     /* a pod of the node as it is now (listed, added, modified) */
    K8S_FOLLOW_DELETE,     /* a pod gone */
    K8S_FOLLOW_SYNC_END,   /* the list is over: pods not seen since SYNC_BEGIN are gone */
};

/* What the follower tells its caller. Called from within the follower's step: they must not
 * call the follower back, except k8s_follow_namespace (which only queues a request). */
struct k8s_follow_hooks {
    void (*on_pod)(enum k8s_follow_kind kind, const struct k8s_pod_info *pod, void *userdata);
    void (*on_namespace)(const char *ns, void *userdata); /* its labels came (or failed) */
    /* a line for the agent's log, as printf's format and arguments */
    void (*on_log)(void *userdata, const char *fmt, va_list ap);
    void *userdata;
};

struct k8s_follow_opts {
    const struct k8s_config *cfg; /* kept by pointer: must outlive the follower */
    const char *node;             /* a DNS-1123 subdomain */
    long watch_timeout_s;         /* 0: K8S_WATCH_TIMEOUT_S */
    long stall_slack_ms;          /* 0: a tenth of the timeout, 5 s to 30 s */
    struct k8s_follow_hooks hooks;
};

/* What the follower did so far, for the agent's status. */
struct k8s_follow_stats {
    uint64_t lists, watches, gone, stalls, failures, events, bookmarks;
    bool synced; /* a list has completed: the caller's view is the node's */
    char resource_version[K8S_RESOURCE_VERSION_MAX + 1];
};

struct k8s_follow;
struct pollfd;

/* A follower that starts with a list at its first step. -EINVAL for a malformed node name,
 * -ENOMEM, -EIO when libcurl cannot start. */
int k8s_follow_new(const struct k8s_follow_opts *o, struct k8s_follow **ret, struct cla_error *e);
void k8s_follow_free(struct k8s_follow *f);

/* The fds to poll (at most `max`, K8S_FOLLOW_FDS_MAX is always enough), and *until_ms lowered
 * to when the follower must step at the latest (a timer of libcurl's, a back-off's end, a
 * watch's stall deadline). Returns how many fds. */
size_t k8s_follow_fds(struct k8s_follow *f, struct pollfd *fds, size_t max, int64_t *until_ms);

/* Drives the transfers after a wait: `fds` as k8s_follow_fds() gave them, with their revents
 * (n may be 0). Delivers pods and namespaces through the hooks; starts, restarts and backs
 * off as needed. Never blocks. */
void k8s_follow_step(struct k8s_follow *f, const struct pollfd *fds, size_t n, int64_t now_ms);

/* The labels of namespace `ns`: 1 with *ret when known (asked for again in the background
 * once older than K8S_NS_TTL_MS), 0 when asked for (hooks.on_namespace says when they come),
 * -errno when the last request failed (-EACCES: forbidden, -ENOENT: no such namespace; asked
 * for again after the back-off). -ENOMEM. */
int k8s_follow_namespace(struct k8s_follow *f, const char *ns, int64_t now_ms,
                         const struct k8s_namespace **ret);

void k8s_follow_stats(const struct k8s_follow *f, struct k8s_follow_stats *ret);

/* Pure helpers, exposed for the tests. */

/* The request path of the list (rv NULL) or of a watch from `rv`: /api/v1/pods with
 * fieldSelector=spec.nodeName=NODE, and for a watch watch=1, allowWatchBookmarks=true,
 * resourceVersion and timeoutSeconds. -ENOBUFS when it does not fit. */
int k8s_follow_path(char *buf, size_t size, const char *node, const char *rv, long timeout_s);

/* The wait before the next request after `failures` failures in a row (0: none), with jitter
 * from `rnd`: between half and all of K8S_FOLLOW_BACKOFF_FIRST_MS doubling, capped. */
int64_t k8s_follow_backoff_ms(unsigned failures, uint32_t rnd);

#endif
