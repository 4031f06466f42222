/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP side of reporting: libcurl over TLS to the apiserver, verified against the CA file
 * only, https only, no redirects, no proxy. Bodies are built in k8s_event.c, replies decoded in
 * k8s_reply.c, and the Event series cache is k8s_series.c.
 */
#ifndef CLRATTACH_K8S_CLIENT_H
#define CLRATTACH_K8S_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/k8s_config.h"
#include "report/k8s_event.h"

/* One request as it went: method, HTTP status (0 when none came back), libcurl result. */
struct k8s_attempt {
    char method[8];
    int http_status;
    int curl_code;
    long elapsed_ms;
    long slept_ms; /* backoff before the next attempt */
};

struct k8s_report_outcome {
    int http_status; /* of the last response, 0 when none came back */
    int attempts;    /* requests sent, the pod GET included */
    bool used_core_v1;
    bool patched;     /* an existing Event's series was updated instead of creating one */
    int series_count; /* occurrences the Event now records: 1 for a fresh Event */
    char event_name[K8S_NAME_MAX + 1];
    size_t n_log; /* entries in log, at most K8S_ATTEMPT_LOG_MAX */
    struct k8s_attempt log[K8S_ATTEMPT_LOG_MAX];
};

/* Sends the Event: GETs the pod first when pod->uid is empty (and fills it; an empty
 * pod->namespace_ is filled from cfg), POSTs to events.k8s.io/v1, and on a 404 for the group
 * re-POSTs in core/v1 form. Retries 429 (honouring Retry-After), 5xx and connection errors
 * with backoff and jitter within cfg->retry_budget_ms and cfg->max_attempts; 400/403/404/422
 * are final and their Status message and causes go into `e` (403 names the RBAC rule); a 409
 * after an attempt that may have reached the server is success; after a 401 the token is
 * re-read and the request retried once.
 * Unlike other ret_ arguments, *ret is filled on failure too, so the attempts can be logged.
 * Errors: -EACCES (401/403/TLS), -EINVAL (400/422), -ENOENT (404), -EEXIST (409 first try),
 * -EAGAIN (still 429/5xx at the end), -ETIMEDOUT/-ECONNREFUSED/-EIO (transport), -EPROTO. */
int k8s_report_event(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                     const struct k8s_event_spec *ev, struct k8s_report_outcome *ret,
                     struct cla_error *e);

/* Sets the libcurl handle `curl` (a CURL *) up as every request to the apiserver is: the CA file
 * only, peer and host verified, TLS 1.2 or later, https only, no redirects, no proxy, no
 * signals, cfg's connect timeout, our user agent. -EPROTO when libcurl lacks one of these. The
 * agent's follower (k8s_follow.c) uses it for its own handles. */
int k8s_client_secure_handle(void *curl, const struct k8s_config *cfg, struct cla_error *e);

/* libcurl's write callback's body: appends `n` bytes of `data` to *body (NUL-terminated, *len
 * bytes) unless that would pass `cap` (*too_big then). Returns n, or 0 to make libcurl end the
 * transfer (too big, out of memory). */
size_t k8s_client_body_append(char **body, size_t *len, size_t cap, bool *too_big, const char *data,
                              size_t n);

/* The Event that heads a series, to be PATCHed with one more occurrence. */
struct k8s_series_head {
    const char *name, *namespace_;
    bool core; /* created (and so patched) through /api/v1 */
    int count; /* occurrences it records so far */
};

/* Like k8s_report_event(), but with a `head` first PATCHes that Event's series to
 * head->count + 1 (merge patch, on the API group it was created in; ret->patched and
 * ret->series_count say so); a PATCH answered 404 (the Event expired or was deleted) creates a
 * new Event instead, in the same session and retry budget. The head's note is not changed. */
int k8s_report_event_or_patch(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                              const struct k8s_event_spec *ev, const struct k8s_series_head *head,
                              struct k8s_report_outcome *ret, struct cla_error *e);

#endif
