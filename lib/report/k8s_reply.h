/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding what the apiserver sends back, with no I/O: Status error bodies, a pod GET reply and
 * the Event a create or a series PATCH stored.
 * Each parser takes (buf, len), refuses more than its cap and answers -EPROTO to the rest.
 */
#ifndef CLRATTACH_K8S_REPLY_H
#define CLRATTACH_K8S_REPLY_H

#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"

/* A decoded Status body (only the fields we report). Strings are cut to fit, for display. */
struct k8s_status_cause {
    char reason[64];
    char field[128];
    char message[256];
};

struct k8s_status {
    int code;        /* 0 when absent */
    char status[16]; /* "Failure" */
    char reason[64]; /* "Invalid", "Forbidden", "AlreadyExists", ... */
    char message[512];
    char details_name[K8S_NAME_MAX + 1];
    char details_group[K8S_NAME_MAX + 1];
    char details_kind[64];
    int retry_after_s;     /* details.retryAfterSeconds, 0 when absent */
    size_t n_causes;       /* causes kept, at most K8S_STATUS_CAUSES_MAX */
    size_t n_causes_total; /* causes in the body */
    struct k8s_status_cause causes[K8S_STATUS_CAUSES_MAX];
};

/* Parses a Status body of `len` bytes (need not be NUL-terminated). -E2BIG above
 * K8S_STATUS_MAX, -EPROTO for anything that is not a well-formed Status object. */
int k8s_status_parse(const char *buf, size_t len, struct k8s_status *ret, struct cla_error *e);

/* Renders "<message> [field: message; ...]" into buf for an error text. Returns the length
 * written (cut to fit). */
size_t k8s_status_describe(const struct k8s_status *st, char *buf, size_t size);

/* Reads metadata.uid from a pod GET reply, after checking kind, name and namespace match the
 * pod asked for. ret_uid holds K8S_UID_MAX + 1. -E2BIG above K8S_RESPONSE_MAX, -EPROTO. */
int k8s_pod_parse_uid(const char *buf, size_t len, const char *want_name, const char *want_ns,
                      char *ret_uid, struct cla_error *e);

/* Checks that a create or PATCH reply is the Event that was sent: a JSON object of kind Event
 * whose metadata.name is `want_name`. Only such a reply shows that the apiserver stored it; a
 * proxy's page, a cut body or some other object does not. -E2BIG above K8S_RESPONSE_MAX,
 * -EPROTO. */
int k8s_event_reply_check(const char *buf, size_t len, const char *want_name, struct cla_error *e);

#endif
