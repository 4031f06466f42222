/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's pods decoded from a PodList and from watch event lines, and the line framing of a
 * watch stream read in chunks: every field type-checked against its character set and cap.
 */
#include "report/k8s_watch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/util.h"
#include "report/json_bounded.h"

struct k8s_watch_stream {
    char *buf; /* the unfinished line */
    size_t len, cap;
    bool failed;
    struct k8s_watch_event *ev; /* decoded into, one at a time: too large for the stack twice */
};

/* The characters each field may hold. Kubernetes validates names itself; these are checked
 * again because the names end up in URLs, field selectors, logs and Events of ours. */
enum field_class {
    FC_DNS_LABEL,     /* namespace, container name: RFC 1123 label */
    FC_DNS_SUBDOMAIN, /* pod name */
    FC_UID,           /* a UUID, or a static pod's hash */
    FC_VERSION,       /* resourceVersion: opaque, decimal in practice; sent back in a query */
    FC_PRINTABLE,     /* containerID: "<type>://<id>", parsed later by cgroup_id */
    FC_ALPHA,         /* status.phase */
};

static bool in_class(char c, enum field_class k)
{
    bool lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
    bool upper = c >= 'A' && c <= 'Z';
    switch (k) {
    case FC_DNS_LABEL: return lower || digit || c == '-';
    case FC_DNS_SUBDOMAIN: return lower || digit || c == '-' || c == '.';
    case FC_UID: return lower || upper || digit || c == '-';
    case FC_VERSION: return lower || upper || digit || c == '-' || c == '_' || c == '.';
    case FC_PRINTABLE: return c > 0x20 && c < 0x7f;
    case FC_ALPHA: return lower || upper;
    }
    return false;
}

/* Copies string member `key` of `obj` into dst (size bytes with the NUL). Absent or null is ""
 * and passes only when !required; otherwise the whole value must fit and be in class. */
static bool take(json_t *obj, const char *key, enum field_class k, bool required, char *dst,
                 size_t size)
{
    json_t *v = json_object_get(obj, key);
    dst[0] = '\0';
    if (!v || json_is_null(v))
        return !required;
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= size || (required && n == 0))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!in_class(s[i], k))
            return false;
    memcpy(dst, s, n + 1);
    return true;
}

/* The annotation is the pod owner's text: kept as bytes with its length, judged later. */
static bool take_profile(json_t *meta, struct k8s_pod_info *p)
{
    json_t *ann = json_object_get(meta, "annotations");
    if (!ann || json_is_null(ann))
        return true;
    if (!json_is_object(ann))
        return false;
    json_t *v = json_object_get(ann, K8S_PROFILE_ANNOTATION);
    if (!v)
        return true;
    if (!json_is_string(v))
        return false;
    p->has_profile = true;
    p->profile_len = json_string_length(v);
    size_t n = p->profile_len > K8S_ANNOTATION_KEPT ? K8S_ANNOTATION_KEPT : p->profile_len;
    memcpy(p->profile, json_string_value(v), n);
    p->profile[n] = '\0';
    return true;
}

static int take_containers(json_t *statuses, struct k8s_pod_info *p, struct cla_error *e)
{
    if (!json_is_array(statuses))
        return err_set(e, -EPROTO, "status.containerStatuses is not an array");
    if (json_array_size(statuses) > K8S_POD_CONTAINERS_MAX)
        return err_set(e, -E2BIG, "%zu containers, above the cap of %d", json_array_size(statuses),
                       K8S_POD_CONTAINERS_MAX);
    size_t i;
    json_t *c;
    json_array_foreach(statuses, i, c)
    {
        struct k8s_watch_container *w = &p->containers[i];
        json_t *rc = json_object_get(c, "restartCount");
        if (!json_is_object(c) || !take(c, "name", FC_DNS_LABEL, true, w->name, sizeof(w->name)) ||
            !take(c, "containerID", FC_PRINTABLE, false, w->container_id,
                  sizeof(w->container_id)) ||
            (rc && (!json_is_integer(rc) || json_integer_value(rc) < 0 ||
                    json_integer_value(rc) > INT_MAX)))
            return err_set(e, -EPROTO, "status.containerStatuses[%zu] is malformed", i);
        w->restart_count = rc ? (int)json_integer_value(rc) : 0;
    }
    p->n_containers = json_array_size(statuses);
    return 0;
}

/* Checks that an object that says its kind says `want`. */
static bool kind_is(json_t *obj, const char *want)
{
    json_t *k = json_object_get(obj, "kind");
    return !k || (json_is_string(k) && strcmp(json_string_value(k), want) == 0);
}

/* One Pod object (a watch event's, or a PodList item, which carries no kind). */
static int decode_pod(json_t *obj, struct k8s_pod_info *p, struct cla_error *e)
{
    memset(p, 0, sizeof(*p));
    json_t *meta = json_object_get(obj, "metadata");
    json_t *status = json_object_get(obj, "status");
    if (!json_is_object(obj) || !kind_is(obj, "Pod"))
        return err_set(e, -EPROTO, "not a Pod object");
    if (!json_is_object(meta))
        return err_set(e, -EPROTO, "pod without metadata");
    if (!take(meta, "namespace", FC_DNS_LABEL, true, p->ns, sizeof(p->ns)))
        return err_set(e, -EPROTO, "metadata.namespace missing or not a DNS-1123 label");
    if (!take(meta, "name", FC_DNS_SUBDOMAIN, true, p->name, sizeof(p->name)))
        return err_set(e, -EPROTO, "metadata.name missing or not a DNS-1123 subdomain");
    if (!take(meta, "uid", FC_UID, true, p->uid, sizeof(p->uid)))
        return err_set(e, -EPROTO, "metadata.uid missing or not a UID");
    if (!take(meta, "resourceVersion", FC_VERSION, true, p->resource_version,
              sizeof(p->resource_version)))
        return err_set(e, -EPROTO, "metadata.resourceVersion missing or malformed");
    if (!take_profile(meta, p))
        return err_set(e, -EPROTO, "metadata.annotations malformed");
    if (!status || json_is_null(status))
        return 0;
    if (!json_is_object(status) ||
        !take(status, "phase", FC_ALPHA, false, p->phase, sizeof(p->phase)))
        return err_set(e, -EPROTO, "status malformed");
    json_t *cs = json_object_get(status, "containerStatuses");
    return !cs || json_is_null(cs) ? 0 : take_containers(cs, p, e);
}

/* An ERROR event's object is a Status; its own parser judges it. */
static int decode_status(json_t *obj, struct k8s_status *st, struct cla_error *e)
{
    if (!json_is_object(obj))
        return err_set(e, -EPROTO, "ERROR event without a Status");
    char *text = json_dumps(obj, JSON_COMPACT);
    if (!text)
        return err_set(e, -ENOMEM, "ERROR event: no memory");
    int r = k8s_status_parse(text, strlen(text), st, e);
    free(text);
    return r;
}

static const char *const type_names[] = {
    [K8S_WATCH_ADDED] = "ADDED",     [K8S_WATCH_MODIFIED] = "MODIFIED",
    [K8S_WATCH_DELETED] = "DELETED", [K8S_WATCH_BOOKMARK] = "BOOKMARK",
    [K8S_WATCH_ERROR] = "ERROR",
};

const char *k8s_watch_type_name(enum k8s_watch_type t)
{
    return (size_t)t < ARRAY_SIZE(type_names) ? type_names[t] : "?";
}

static int decode_event_tree(json_t *root, struct k8s_watch_event *ev, struct cla_error *e)
{
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *obj = json_object_get(root, "object");
    if (!json_is_object(root) || !type || !json_is_object(obj))
        return err_set(e, -EPROTO, "not a {\"type\", \"object\"} event");
    size_t t = 0;
    while (t < ARRAY_SIZE(type_names) && strcmp(type, type_names[t]) != 0)
        t++;
    if (t == ARRAY_SIZE(type_names))
        return err_set(e, -EPROTO, "unknown event type");
    ev->type = (enum k8s_watch_type)t;
    if (ev->type == K8S_WATCH_ERROR)
        return decode_status(obj, &ev->status, e);
    if (ev->type != K8S_WATCH_BOOKMARK)
        return decode_pod(obj, &ev->pod, e);
    /* A bookmark is a Pod holding nothing but metadata.resourceVersion. */
    json_t *meta = json_object_get(obj, "metadata");
    if (!kind_is(obj, "Pod") || !json_is_object(meta) ||
        !take(meta, "resourceVersion", FC_VERSION, true, ev->pod.resource_version,
              sizeof(ev->pod.resource_version)))
        return err_set(e, -EPROTO, "BOOKMARK without a resourceVersion");
    return 0;
}

static int decode_event(json_t *root, void *ctx, struct cla_error *e)
{
    int r = decode_event_tree(root, ctx, e);
    return r < 0 ? err_prefix(e, "watch") : r;
}

int k8s_watch_event_parse(const char *buf, size_t len, struct k8s_watch_event *ret,
                          struct cla_error *e)
{
    struct k8s_watch_event *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return err_set(e, -ENOMEM, "watch: no memory for an event");
    int r = json_bounded_decode(buf, len, K8S_WATCH_LINE_MAX, "watch: event", -EPROTO, decode_event,
                                ev, e);
    if (r >= 0)
        *ret = *ev;
    free(ev);
    return r;
}

struct k8s_watch_stream *k8s_watch_stream_new(void)
{
    return calloc(1, sizeof(struct k8s_watch_stream));
}

void k8s_watch_stream_free(struct k8s_watch_stream *s)
{
    if (!s)
        return;
    free(s->buf);
    free(s->ev);
    free(s);
}

void k8s_watch_stream_freep(struct k8s_watch_stream **s)
{
    k8s_watch_stream_free(*s);
    *s = NULL;
}

size_t k8s_watch_pending(const struct k8s_watch_stream *s)
{
    return s->len;
}

/* Appends to the unfinished line, growing it up to the line cap. */
static int hold(struct k8s_watch_stream *s, const char *p, size_t n, struct cla_error *e)
{
    if (n > K8S_WATCH_LINE_MAX - s->len)
        return err_set(e, -E2BIG, "watch: a line above the %d-byte cap", K8S_WATCH_LINE_MAX);
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n)
            cap *= 2;
        if (cap > K8S_WATCH_LINE_MAX)
            cap = K8S_WATCH_LINE_MAX;
        char *b = realloc(s->buf, cap);
        if (!b)
            return err_set(e, -ENOMEM, "watch: no memory for a line");
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return 0;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

static int one_line(struct k8s_watch_stream *s, const char *p, size_t n, k8s_watch_cb cb,
                    void *userdata, struct cla_error *e)
{
    if (blank(p, n))
        return 0;
    if (!s->ev && !(s->ev = malloc(sizeof(*s->ev))))
        return err_set(e, -ENOMEM, "watch: no memory for an event");
    int r = k8s_watch_event_parse(p, n, s->ev, e);
    return r < 0 ? r : cb(s->ev, userdata, e);
}

static int feed(struct k8s_watch_stream *s, const char *buf, size_t len, k8s_watch_cb cb,
                void *userdata, struct cla_error *e)
{
    size_t off = 0;
    while (off < len) {
        const char *nl = memchr(buf + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
        int r = 0;
        if (!nl)
            return hold(s, buf + off, n, e);
        if (s->len == 0) {
            if (n > K8S_WATCH_LINE_MAX)
                return err_set(e, -E2BIG, "watch: a line above the %d-byte cap",
                               K8S_WATCH_LINE_MAX);
            r = one_line(s, buf + off, n, cb, userdata, e);
        } else if ((r = hold(s, buf + off, n, e)) >= 0) {
            size_t whole = s->len;
            s->len = 0;
            r = one_line(s, s->buf, whole, cb, userdata, e);
        }
        if (r < 0)
            return r;
        off += n + 1;
    }
    return 0;
}

int k8s_watch_feed(struct k8s_watch_stream *s, const char *buf, size_t len, k8s_watch_cb cb,
                   void *userdata, struct cla_error *e)
{
    if (s->failed)
        return err_set(e, -EPROTO, "watch: the stream failed earlier; reconnect");
    int r = feed(s, buf, len, cb, userdata, e);
    if (r < 0)
        s->failed = true;
    return r;
}

static int decode_list(json_t *root, void *ctx, struct cla_error *e)
{
    struct k8s_pod_list *l = ctx;
    json_t *meta = json_object_get(root, "metadata");
    json_t *items = json_object_get(root, "items");
    const char *cont = json_string_value(json_object_get(meta, "continue"));
    if (!json_is_object(root) || json_object_get(root, "kind") == NULL || !kind_is(root, "PodList"))
        return err_set(e, -EPROTO, "k8s: malformed PodList: kind is not PodList");
    if (!json_is_object(meta) || !take(meta, "resourceVersion", FC_VERSION, true,
                                       l->resource_version, sizeof(l->resource_version)))
        return err_set(e, -EPROTO, "k8s: malformed PodList: no metadata.resourceVersion");
    if (cont && cont[0])
        return err_set(e, -EPROTO, "k8s: PodList cut into pages (metadata.continue)");
    if (items && !json_is_null(items) && !json_is_array(items))
        return err_set(e, -EPROTO, "k8s: malformed PodList: items is not an array");
    if (json_array_size(items) > K8S_LIST_PODS_MAX)
        return err_set(e, -E2BIG, "k8s: PodList of %zu pods, above the cap of %d",
                       json_array_size(items), K8S_LIST_PODS_MAX);
    if (!(l->items = calloc(json_array_size(items) + 1, sizeof(*l->items))))
        return err_set(e, -ENOMEM, "k8s: no memory for the PodList");
    for (; l->n_items < json_array_size(items); l->n_items++)
        if (decode_pod(json_array_get(items, l->n_items), &l->items[l->n_items], e) < 0)
            return err_prefix(e, "k8s: PodList items[%zu]", l->n_items);
    return 0;
}

int k8s_pod_list_parse(const char *buf, size_t len, struct k8s_pod_list *ret, struct cla_error *e)
{
    struct k8s_pod_list l = {0};
    int r =
        json_bounded_decode(buf, len, K8S_LIST_MAX, "k8s: PodList", -EPROTO, decode_list, &l, e);
    if (r < 0) {
        free(l.items);
        return r;
    }
    *ret = l;
    return 0;
}

void k8s_pod_list_free(struct k8s_pod_list *l)
{
    free(l->items);
    l->items = NULL;
    l->n_items = 0;
}
