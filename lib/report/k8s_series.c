/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Event series cache: which Event heads the series of a key, so that repeats of one outcome
 * update it instead of adding Events. Pure bookkeeping; the PATCH and POST are k8s_client.c's.
 */
#include "report/k8s_series.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One remembered series head. `seq` orders entries by insertion for eviction: event times
 * come from the caller and need not be monotonic, a counter is. */
struct series_entry {
    bool used;
    bool core; /* created (and so patched) through /api/v1 */
    int count;
    uint64_t seq;
    struct timespec head_time; /* eventTime of the head Event: the window starts there */
    char key[K8S_SERIES_KEY_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    char pod_ns[K8S_LABEL_MAX + 1];
    char pod_name[K8S_NAME_MAX + 1];
    char pod_uid[K8S_UID_MAX + 1];
};

struct k8s_series_cache {
    uint64_t next_seq;
    struct series_entry e[K8S_SERIES_MAX];
};

struct k8s_series_cache *k8s_series_cache_new(void)
{
    return calloc(1, sizeof(struct k8s_series_cache));
}

void k8s_series_cache_free(struct k8s_series_cache *c)
{
    free(c);
}

static struct series_entry *series_find(struct k8s_series_cache *c, const char *key)
{
    for (size_t i = 0; i < K8S_SERIES_MAX; i++)
        if (c->e[i].used && strcmp(c->e[i].key, key) == 0)
            return &c->e[i];
    return NULL;
}

/* Milliseconds from a to b rounded down, saturating instead of overflowing on absurd times.
 * Rounded down, not toward zero: b a microsecond before a must come out negative. */
static int64_t ms_between(const struct timespec *a, const struct timespec *b)
{
    int64_t ds = (int64_t)b->tv_sec - (int64_t)a->tv_sec;
    int64_t dn = (int64_t)b->tv_nsec - (int64_t)a->tv_nsec;
    if (ds > INT64_MAX / 2000)
        return INT64_MAX / 2;
    if (ds < -(INT64_MAX / 2000))
        return -(INT64_MAX / 2);
    int64_t ms = dn / 1000000;
    if (dn % 1000000 < 0)
        ms--;
    return ds * 1000 + ms;
}

/* Whether a report at `now` for `pod` continues the series of `se`. A time before the head
 * (the clock stepped back) starts a new Event: lastObservedTime before eventTime would make a
 * series that `kubectl` shows with a negative age. Another pod under the same key (the caller
 * reports for several pods) must never patch an Event about a different object. */
static bool series_continues(const struct series_entry *se, const struct k8s_pod_ref *pod,
                             const struct timespec *now)
{
    int64_t d = ms_between(&se->head_time, now);
    if (d < 0 || d >= K8S_SERIES_WINDOW_MS || se->count >= INT32_MAX - 1)
        return false;
    /* The uid is compared only when both are known: a caller may learn it after the head. */
    return strcmp(se->pod_ns, pod->namespace_) == 0 && strcmp(se->pod_name, pod->name) == 0 &&
           (!se->pod_uid[0] || !pod->uid[0] || strcmp(se->pod_uid, pod->uid) == 0);
}

/* Records a fresh head under `key`, replacing an entry with the same key, else a free slot,
 * else the oldest. */
static void series_remember(struct k8s_series_cache *c, const char *key,
                            const struct k8s_pod_ref *pod, const struct k8s_event_spec *ev,
                            const struct k8s_report_outcome *out)
{
    struct series_entry *se = series_find(c, key), *oldest = NULL;
    for (size_t i = 0; !se && i < K8S_SERIES_MAX; i++) {
        if (!c->e[i].used)
            se = &c->e[i];
        else if (!oldest || c->e[i].seq < oldest->seq)
            oldest = &c->e[i];
    }
    if (!se)
        se = oldest;
    memset(se, 0, sizeof(*se));
    se->used = true;
    se->core = out->used_core_v1;
    se->count = 1;
    se->seq = ++c->next_seq;
    se->head_time = ev->event_time;
    memcpy(se->key, key, strlen(key) + 1);
    memcpy(se->name, out->event_name, sizeof(se->name));
    memcpy(se->pod_ns, pod->namespace_, sizeof(se->pod_ns));
    memcpy(se->pod_name, pod->name, sizeof(se->pod_name));
    memcpy(se->pod_uid, pod->uid, sizeof(se->pod_uid));
}

int k8s_report_event_dedup(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                           const struct k8s_event_spec *ev, const char *key,
                           struct k8s_series_cache *cache, struct k8s_report_outcome *ret,
                           struct cla_error *e)
{
    memset(ret, 0, sizeof(*ret));
    if (!cache || !key || !key[0] || strlen(key) > K8S_SERIES_KEY_MAX)
        return err_set(e, -EINVAL, "k8s: series key must be 1 to %d bytes", K8S_SERIES_KEY_MAX);
    /* The series is about the pod as it will be reported, namespace filled as the client does. */
    if (!pod->namespace_[0])
        memcpy(pod->namespace_, cfg->namespace_, sizeof(pod->namespace_));
    struct series_entry *se = series_find(cache, key);
    struct k8s_series_head head;
    bool patch = se && series_continues(se, pod, &ev->event_time);
    if (patch)
        head = (struct k8s_series_head){
            .name = se->name, .namespace_ = se->pod_ns, .core = se->core, .count = se->count};
    int rc = k8s_report_event_or_patch(cfg, pod, ev, patch ? &head : NULL, ret, e);
    if (rc < 0)
        /* A failed PATCH leaves the head as it was; after a 404 whose create failed the entry
         * is kept too, so that the next report tries the PATCH again, gets its 404 and
         * creates. */
        return rc;
    if (ret->patched)
        se->count++;
    else
        series_remember(cache, key, pod, ev, ret);
    return 0;
}
