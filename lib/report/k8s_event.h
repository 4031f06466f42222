/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encoding and decoding for the Kubernetes API, with no I/O: the Event body (events.k8s.io/v1
 * or core/v1) and the pieces it is made of (MicroTime, event name, UTF-8-safe cuts). What the
 * apiserver sends back is decoded in k8s_reply.h.
 */
#ifndef CLRATTACH_K8S_EVENT_H
#define CLRATTACH_K8S_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/bounds.h"
#include "base/err.h"

/* The reportingController of every Event; the apiserver wants a qualified name. */
#define K8S_REPORTING_CONTROLLER "clrattach.dev/clrattach"

/* The pod an Event is about. Empty strings mean "unknown"; an empty uid is looked up later. */
struct k8s_pod_ref {
    char name[K8S_NAME_MAX + 1];
    char namespace_[K8S_LABEL_MAX + 1];
    char uid[K8S_UID_MAX + 1];
    char container[K8S_NAME_MAX + 1];
};

struct k8s_event_spec {
    const char *reason; /* ProfilerAttached | ProfilerAlreadyActive | ProfilerAttachFailed */
    const char *type;   /* Normal | Warning */
    const char *action; /* AttachProfiler */
    const char *note;   /* free text, cut to 1024 bytes on a UTF-8 boundary */
    const char *reporting_instance; /* cut to 128 bytes; NULL/"" = "clrattach-<pod>" */
    struct timespec event_time;     /* rendered with exactly 6 fractional digits */
};

/* Builds the events.k8s.io/v1 body (core/v1 when `core` is true) as compact JSON in
 * *ret_json (caller frees). The name is derived from event_time, so rebuilding the same spec
 * gives the same name. -EINVAL for a missing or invalid field, -ENOMEM. */
int k8s_event_build(const struct k8s_pod_ref *pod, const struct k8s_event_spec *ev, bool core,
                    char **ret_json, struct cla_error *e);

/* Builds the merge patch that records one more occurrence of an Event series, as compact JSON
 * in *ret_json (caller frees): {"series":{"count":N,"lastObservedTime":"<MicroTime>"}}. The
 * same body serves both API groups. -EINVAL for count < 2 (the apiserver refuses a series
 * shorter than that) or a time out of range, -ENOMEM. */
int k8s_series_patch_build(int count, const struct timespec *last_observed, char **ret_json,
                           struct cla_error *e);

/* Copies at most `max` bytes of `src` into `dst` (which holds max + 1), never splitting a
 * UTF-8 sequence; each byte of an invalid sequence becomes '?'. Returns the bytes written. */
size_t k8s_utf8_copy(const char *src, size_t max, char *dst);

/* Writes eventTime as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (UTC, exactly 6 fractional digits, the
 * only layout MicroTime accepts) into buf (>= 28 bytes). -ERANGE for a time outside years
 * 1970..9999 or a bad tv_nsec, -ENOBUFS for a small buffer. */
int k8s_format_microtime(const struct timespec *t, char *buf, size_t size);

/* The apiserver's DNS-1123 subdomain (<= 253) and label (<= 63) checks. */
bool k8s_is_dns1123_subdomain(const char *s);
bool k8s_is_dns1123_label(const char *s);

/* The apiserver's IsQualifiedName: optional "<dns-subdomain>/" prefix, then <= 63 chars of
 * [A-Za-z0-9][-A-Za-z0-9_.]* ending alphanumeric. */
bool k8s_is_qualified_name(const char *s);

/* Event name as client-go makes it: "<pod>.<lowercase hex unix nanoseconds>", or, when that is
 * not a DNS-1123 subdomain, a version-4 UUID made from the 16 bytes `rnd`. buf holds
 * K8S_NAME_MAX + 1 bytes. Returns 0, -ERANGE for a negative time, -ENOBUFS. */
int k8s_event_name(const char *pod_name, const struct timespec *t, const uint8_t rnd[16], char *buf,
                   size_t size);

#endif
