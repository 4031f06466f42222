/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's pod watch stream and PodList: the events of a stream do not depend on where its
 * chunks are cut, every string comes out terminated and within its cap and character set.
 */
#include <errno.h>

#include "fuzz.h"
#include "report/k8s_watch.h"

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void check_pod(const struct k8s_pod_info *p)
{
    FUZZ_CHECK(strnlen(p->ns, sizeof(p->ns)) < sizeof(p->ns));
    FUZZ_CHECK(strnlen(p->name, sizeof(p->name)) < sizeof(p->name));
    FUZZ_CHECK(strnlen(p->uid, sizeof(p->uid)) < sizeof(p->uid));
    FUZZ_CHECK(strnlen(p->resource_version, sizeof(p->resource_version)) <
               sizeof(p->resource_version));
    FUZZ_CHECK(fuzz_no_controls(p->name, strlen(p->name)));
    FUZZ_CHECK(fuzz_no_controls(p->resource_version, strlen(p->resource_version)));
    FUZZ_CHECK(p->n_containers <= K8S_POD_CONTAINERS_MAX);
    FUZZ_CHECK(!p->has_profile || strnlen(p->profile, sizeof(p->profile)) <= p->profile_len);
    for (size_t i = 0; i < p->n_containers; i++) {
        const struct k8s_watch_container *c = &p->containers[i];
        FUZZ_CHECK(strnlen(c->name, sizeof(c->name)) < sizeof(c->name) && c->name[0]);
        FUZZ_CHECK(
            fuzz_no_controls(c->container_id, strnlen(c->container_id, sizeof(c->container_id))));
        FUZZ_CHECK(c->restart_count >= 0);
    }
}

/* Each event folded into a hash of what a caller reads of it. */
static int hash_cb(const struct k8s_watch_event *ev, void *userdata, struct cla_error *e)
{
    (void)e;
    uint64_t *h = userdata;
    check_pod(&ev->pod);
    const struct k8s_pod_info *p = &ev->pod;
    *h = mix(*h, &ev->type, sizeof(ev->type));
    *h = mix(*h, p->name, strlen(p->name) + 1);
    *h = mix(*h, p->resource_version, strlen(p->resource_version) + 1);
    *h = mix(*h, p->profile, strlen(p->profile) + 1);
    *h = mix(*h, &p->n_containers, sizeof(p->n_containers));
    for (size_t i = 0; i < p->n_containers; i++)
        *h = mix(*h, p->containers[i].container_id, strlen(p->containers[i].container_id) + 1);
    *h = mix(*h, &ev->status.code, sizeof(ev->status.code));
    return 0;
}

static int feed_all(const char *buf, size_t len, size_t chunk, uint64_t *h, size_t *pending)
{
    struct k8s_watch_stream *s = k8s_watch_stream_new();
    if (!s)
        abort();
    int r = 0;
    for (size_t off = 0; off < len && r == 0; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        r = k8s_watch_feed(s, buf + off, n, hash_cb, h, NULL);
    }
    *pending = k8s_watch_pending(s);
    k8s_watch_stream_free(s);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    uint64_t h1 = 14695981039346656037ull, h2 = h1;
    size_t p1, p2;
    size_t chunk = size ? (size_t)data[0] % 97 + 1 : 1;
    int r1 = feed_all(buf, size, size ? size : 1, &h1, &p1);
    int r2 = feed_all(buf, size, chunk, &h2, &p2);
    FUZZ_CHECK(r1 == r2);
    if (r1 == 0)
        FUZZ_CHECK(h1 == h2 && p1 == p2);

    struct k8s_pod_list l;
    struct cla_error e = {0};
    if (k8s_pod_list_parse(buf, size, &l, &e) == 0) {
        FUZZ_CHECK(l.n_items <= K8S_LIST_PODS_MAX);
        for (size_t i = 0; i < l.n_items; i++)
            check_pod(&l.items[i]);
        k8s_pod_list_free(&l);
    } else {
        FUZZ_CHECK(e.code < 0 && e.msg[0]);
    }
    return 0;
}
