/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the follower's two halves share (k8s_follow.c: the pods' list and watch and the multi
 * handle; k8s_follow_ns.c: the namespaces' labels): its state and its transfers.
 */
#ifndef CLRATTACH_K8S_FOLLOW_INTERNAL_H
#define CLRATTACH_K8S_FOLLOW_INTERNAL_H

#include <curl/curl.h>

#include "report/k8s_follow.h"

/* One request in flight on the multi handle. */
struct xfer {
    struct k8s_follow *f;
    CURL *easy; /* NULL when idle */
    struct curl_slist *hdrs;
    char *body; /* what came, when it is not fed to the watch stream */
    size_t len, cap;
    bool too_big;
    bool watch;       /* a 200's bytes go to the watch stream */
    bool feed_failed; /* the stream refused a line (or the hook stopped it) */
    struct cla_error feed_err;
    int ns; /* index into the namespace cache, -1 for the list or watch */
};

struct ns_entry {
    bool used, wanted, inflight;
    bool failing; /* its last request failed, and the log said so */
    char name[K8S_LABEL_MAX + 1];
    struct k8s_namespace *ns; /* NULL until known */
    int err;                  /* of the last request, 0 when it succeeded */
    int64_t fetched_ms, retry_ms, used_ms;
};

enum follow_phase { PH_WAIT, PH_LIST, PH_WATCH };

struct k8s_follow {
    struct k8s_follow_opts o;
    char node[K8S_NAME_MAX + 1];
    CURLM *multi;
    struct k8s_token tok;
    bool token_force; /* re-read before the next request (after a 401) */
    struct {
        curl_socket_t fd;
        int what;
    } socks[K8S_FOLLOW_FDS_MAX];
    size_t n_socks;
    int64_t timer_at; /* libcurl's timer, -1 when none */
    enum follow_phase phase;
    bool want_list; /* the next request is a list */
    bool gone;      /* the watch said 410 */
    int64_t wake_ms;
    unsigned failures;
    int64_t last_byte_ms;
    struct xfer main;
    struct xfer nsx[K8S_FOLLOW_NS_INFLIGHT];
    struct k8s_watch_stream *stream;
    struct ns_entry cache[K8S_NS_CACHE_MAX];
    struct k8s_follow_stats st;
};

/* Starts `x` as a GET of `path` (the body capped at `cap`, a total timeout unless 0). -errno
 * with x left idle. */
int follow_xfer_start(struct k8s_follow *f, struct xfer *x, const char *path, size_t cap,
                      long timeout_ms, struct cla_error *e);
/* Takes `x` off the multi handle and frees what it holds; idle after. */
void follow_xfer_end(struct k8s_follow *f, struct xfer *x);
/* The HTTP status of a transfer (0 when none came). */
long follow_xfer_status(const struct xfer *x);
/* A line for the log, through the hook. */
void follow_log(struct k8s_follow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* k8s_follow_ns.c: starts the namespace requests asked for; ends one. */
void follow_ns_start(struct k8s_follow *f, int64_t now_ms);
void follow_ns_done(struct k8s_follow *f, struct xfer *x, CURLcode cc, int64_t now_ms);
void follow_ns_free(struct k8s_follow *f);

#endif
