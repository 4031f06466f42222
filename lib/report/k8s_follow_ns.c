/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The follower's namespaces: each one's labels asked for with a GET when first needed, kept for
 * K8S_NS_TTL_MS and asked for again in the background after, at most K8S_NS_CACHE_MAX of them
 * (the least recently used one makes room). Needs `get namespaces` (docs/security.md).
 */
#include "report/k8s_follow_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/k8s_event.h"

/* A namespace that could not be read is asked for again after this. */
#define NS_RETRY_MS 5000

static struct ns_entry *find(struct k8s_follow *f, const char *name)
{
    for (size_t i = 0; i < K8S_NS_CACHE_MAX; i++)
        if (f->cache[i].used && strcmp(f->cache[i].name, name) == 0)
            return &f->cache[i];
    return NULL;
}

/* A free entry, or the least recently used one not in flight, emptied. NULL when every one is
 * in flight. */
static struct ns_entry *make_room(struct k8s_follow *f)
{
    struct ns_entry *victim = NULL;
    for (size_t i = 0; i < K8S_NS_CACHE_MAX; i++) {
        struct ns_entry *c = &f->cache[i];
        if (!c->used)
            return c;
        if (!c->inflight && (!victim || c->used_ms < victim->used_ms))
            victim = c;
    }
    if (victim) {
        free(victim->ns);
        memset(victim, 0, sizeof(*victim));
    }
    return victim;
}

int k8s_follow_namespace(struct k8s_follow *f, const char *ns, int64_t now_ms,
                         const struct k8s_namespace **ret)
{
    if (strlen(ns) > K8S_LABEL_MAX || !k8s_is_dns1123_label(ns))
        return -EINVAL;
    struct ns_entry *c = find(f, ns);
    if (!c) {
        if (!(c = make_room(f)))
            return 0; /* every entry in flight: asked again at the next judgement */
        c->used = c->wanted = true;
        snprintf(c->name, sizeof(c->name), "%s", ns);
        c->used_ms = now_ms;
        return 0;
    }
    c->used_ms = now_ms;
    if (c->ns) {
        if (now_ms - c->fetched_ms > K8S_NS_TTL_MS && !c->inflight)
            c->wanted = true;
        *ret = c->ns;
        return 1;
    }
    if (c->err < 0) {
        if (now_ms >= c->retry_ms && !c->inflight)
            c->wanted = true;
        return c->err;
    }
    return 0;
}

void follow_ns_start(struct k8s_follow *f, int64_t now_ms)
{
    for (size_t i = 0; i < K8S_NS_CACHE_MAX; i++) {
        struct ns_entry *c = &f->cache[i];
        if (!c->used || !c->wanted || c->inflight)
            continue;
        struct xfer *x = NULL;
        for (size_t k = 0; k < K8S_FOLLOW_NS_INFLIGHT && !x; k++)
            if (!f->nsx[k].easy)
                x = &f->nsx[k];
        if (!x)
            return;
        char path[64 + K8S_LABEL_MAX];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s", c->name);
        struct cla_error e = {0};
        x->ns = (int)i;
        x->watch = false;
        c->wanted = false;
        if (follow_xfer_start(f, x, path, K8S_STATUS_MAX, f->o.cfg->total_timeout_ms, &e) < 0) {
            c->err = e.code < 0 ? e.code : -EIO;
            c->retry_ms = now_ms + NS_RETRY_MS;
            follow_log(f, "namespace %s: %s", c->name, e.msg);
            continue;
        }
        c->inflight = true;
    }
}

void follow_ns_done(struct k8s_follow *f, struct xfer *x, CURLcode cc, int64_t now_ms)
{
    struct ns_entry *c = &f->cache[x->ns];
    long status = follow_xfer_status(x);
    struct cla_error e = {0};
    struct k8s_namespace *ns = NULL;
    int err = 0;
    if (cc != CURLE_OK || status != 200)
        err = status == 403 ? -EACCES : status == 404 ? -ENOENT : -EIO;
    else if (!(ns = malloc(sizeof(*ns))))
        err = -ENOMEM;
    else if ((err = k8s_namespace_object_parse(x->body, x->len, ns, &e)) == 0 &&
             strcmp(ns->name, c->name))
        err = -EPROTO;
    if (status == 401)
        f->token_force = true;
    c->inflight = false;
    if (err == 0) {
        free(c->ns);
        c->ns = ns;
        c->err = 0;
        c->fetched_ms = now_ms;
        c->failing = false;
    } else {
        free(ns);
        /* Labels known before stay in use until the namespace is read again. */
        if (!c->ns)
            c->err = err;
        c->retry_ms = now_ms + NS_RETRY_MS;
        if (!c->failing)
            follow_log(f, "namespace %s: its labels could not be read (HTTP %ld, %s)%s", c->name,
                       status, curl_easy_strerror(cc),
                       status == 403 ? "; the agent's role needs `get namespaces`" : "");
        c->failing = true;
    }
    char name[K8S_LABEL_MAX + 1];
    memcpy(name, c->name, sizeof(name));
    follow_xfer_end(f, x);
    x->ns = -1;
    if (f->o.hooks.on_namespace)
        f->o.hooks.on_namespace(name, f->o.hooks.userdata);
}

void follow_ns_free(struct k8s_follow *f)
{
    for (size_t i = 0; i < K8S_NS_CACHE_MAX; i++) {
        free(f->cache[i].ns);
        f->cache[i].ns = NULL;
    }
}
