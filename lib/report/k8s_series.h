/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event series, as client-go's events recorder keeps them: repeats of one outcome update the
 * Event that heads the series (a count and a last time) instead of adding an Event each.
 */
#ifndef CLRATTACH_K8S_SERIES_H
#define CLRATTACH_K8S_SERIES_H

#include <stdbool.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/k8s_client.h"
#include "report/k8s_config.h"
#include "report/k8s_event.h"

/* Repeats of one outcome within this window (measured from the head Event's eventTime) update
 * that Event's series, as client-go's events recorder does within its 6-minute window. */
#define K8S_SERIES_WINDOW_MS (6 * 60 * 1000)

/* Remembers, per caller-chosen key, the Event that heads a series: its name, API group, pod
 * and count. In memory only and not thread-safe (one per reporting loop). */
struct k8s_series_cache;

/* A new, empty cache, or NULL when out of memory. Free with k8s_series_cache_free (NULL-safe). */
struct k8s_series_cache *k8s_series_cache_new(void);
void k8s_series_cache_free(struct k8s_series_cache *c);

/* Like k8s_report_event(), but when an Event with the same `key` (any string up to
 * K8S_SERIES_KEY_MAX bytes, e.g. "<reason>|<profiler>|<hresult>") for the same pod was created
 * through this cache less than K8S_SERIES_WINDOW_MS before ev->event_time, PATCHes that
 * Event's series (merge patch, on the API group it was created in) instead of creating
 * another; the head's note is not changed. A PATCH answered 404 (the Event expired or was
 * deleted) creates a new Event, which becomes the series head. ret->patched tells which
 * happened, ret->series_count the count after this report (1 for a fresh Event). Retries,
 * timeouts and errors are those of k8s_report_event(); a failed PATCH leaves the cache as it
 * was. -EINVAL also for an empty or too long key. */
int k8s_report_event_dedup(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                           const struct k8s_event_spec *ev, const char *key,
                           struct k8s_series_cache *cache, struct k8s_report_outcome *ret,
                           struct cla_error *e);

#endif
