/* SPDX-License-Identifier: Apache-2.0 */
/* The node's pods from a PodList and a watch stream fed in chunks (lib/report/k8s_watch.c).
 * The fixtures follow the event and bookmark shapes of the Kubernetes API concepts page
 * ("Efficient detection of changes", "Watch bookmarks", "410 Gone responses"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fixture.h"
#include "report/k8s_watch.h"

#define FIXTURES "tests/fixtures/k8s/"
#define ID_A     "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define ID_B     "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define POD      "9c4a1b2e-5d6f-4a7b-8c9d-0e1f2a3b4c5d"

/* What a feed produced, one line of text per event, to compare feeds cut differently. */
struct record {
    char text[4096];
    size_t len;
    int events;
    int stop_at; /* event number whose callback fails, 0 for none */
};

static int record_cb(const struct k8s_watch_event *ev, void *userdata, struct cla_error *e)
{
    struct record *r = userdata;
    r->events++;
    if (r->events == r->stop_at)
        return err_set(e, -ECANCELED, "stopped");
    int n = snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s %s/%s rv=%s p=%s c=%zu",
                     k8s_watch_type_name(ev->type), ev->pod.ns, ev->pod.name,
                     ev->pod.resource_version, ev->pod.profile, ev->pod.n_containers);
    r->len += (size_t)n;
    for (size_t i = 0; i < ev->pod.n_containers; i++) {
        n = snprintf(r->text + r->len, sizeof(r->text) - r->len, " %s=%s#%d",
                     ev->pod.containers[i].name, ev->pod.containers[i].container_id,
                     ev->pod.containers[i].restart_count);
        r->len += (size_t)n;
    }
    n = snprintf(r->text + r->len, sizeof(r->text) - r->len, " code=%d\n", ev->status.code);
    r->len += (size_t)n;
    return 0;
}

static char *fixture(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof(path), FIXTURES "%s", name);
    return slurp(path, len);
}

static void test_sample_stream(void **state)
{
    (void)state;
    size_t len;
    char *b = fixture("watch_pods.jsonl", &len);
    struct record r = {0};
    struct k8s_watch_stream *s = k8s_watch_stream_new();
    assert_non_null(s);
    assert_int_equal(k8s_watch_feed(s, b, len, record_cb, &r, NULL), 0);
    assert_int_equal(k8s_watch_pending(s), 0);
    k8s_watch_stream_free(s);
    assert_int_equal(r.events, 4);
    assert_string_equal(r.text,
                        "ADDED shop/orders-api-7d9f8b6c5-x2x9q rv=10245 p=otel c=0 code=0\n"
                        "MODIFIED shop/orders-api-7d9f8b6c5-x2x9q rv=10251 p=otel c=2"
                        " app=containerd://" ID_A "#0 proxy=containerd://" ID_B "#2 code=0\n"
                        "BOOKMARK / rv=10300 p= c=0 code=0\n"
                        "DELETED jobs/batch-1 rv=10310 p= c=1 main=docker://" ID_A "#0 code=0\n");
}

/* Cut in two at every byte offset, and fed a byte at a time: always the same events. */
static void test_every_split(void **state)
{
    (void)state;
    size_t len;
    char *src = fixture("watch_pods.jsonl", &len);
    char *b = malloc(len);
    assert_non_null(b);
    memcpy(b, src, len);
    struct record whole = {0};
    struct k8s_watch_stream *s = k8s_watch_stream_new();
    assert_int_equal(k8s_watch_feed(s, b, len, record_cb, &whole, NULL), 0);
    k8s_watch_stream_free(s);
    for (size_t k = 0; k <= len; k++) {
        struct record r = {0};
        s = k8s_watch_stream_new();
        assert_int_equal(k8s_watch_feed(s, b, k, record_cb, &r, NULL), 0);
        assert_int_equal(k8s_watch_feed(s, b + k, len - k, record_cb, &r, NULL), 0);
        assert_int_equal(k8s_watch_pending(s), 0);
        k8s_watch_stream_free(s);
        assert_string_equal(r.text, whole.text);
    }
    struct record r = {0};
    s = k8s_watch_stream_new();
    for (size_t i = 0; i < len; i++)
        assert_int_equal(k8s_watch_feed(s, b + i, 1, record_cb, &r, NULL), 0);
    k8s_watch_stream_free(s);
    assert_string_equal(r.text, whole.text);
    /* Without its last newline, the last event waits. */
    r = (struct record){0};
    s = k8s_watch_stream_new();
    assert_int_equal(k8s_watch_feed(s, b, len - 1, record_cb, &r, NULL), 0);
    assert_int_equal(r.events, 3);
    assert_true(k8s_watch_pending(s) > 0);
    k8s_watch_stream_free(s);
    free(b);
}

static void test_gone_and_bookmark(void **state)
{
    (void)state;
    size_t len;
    char *b = fixture("watch_410.jsonl", &len);
    struct k8s_watch_event ev;
    struct cla_error e = {0};
    assert_int_equal(k8s_watch_event_parse(b, len, &ev, &e), 0);
    assert_int_equal(ev.type, K8S_WATCH_ERROR);
    assert_int_equal(ev.status.code, 410);
    assert_string_equal(ev.status.reason, "Expired");
    const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
                     "\"metadata\":{\"resourceVersion\":\"12746\"}}}";
    assert_int_equal(k8s_watch_event_parse(bm, strlen(bm), &ev, &e), 0);
    assert_int_equal(ev.type, K8S_WATCH_BOOKMARK);
    assert_string_equal(ev.pod.resource_version, "12746");
    const char *bad[] = {
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{}}}",
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":"
        "{\"resourceVersion\":\"1\"}}}",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Pod\",\"code\":410}}",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":\"410\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(k8s_watch_event_parse(bad[i], strlen(bad[i]), &ev, &e), -EPROTO);
}

/* A pod event with `meta` as metadata and `status` as status. */
static int pod_event(const char *meta, const char *status, struct k8s_watch_event *ev)
{
    static char line[8192];
    snprintf(line, sizeof(line),
             "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\","
             "\"metadata\":%s,\"status\":%s}}",
             meta, status);
    struct cla_error e = {0};
    int r = k8s_watch_event_parse(line, strlen(line), ev, &e);
    if (r < 0)
        assert_true(e.msg[0] != '\0');
    return r;
}

#define META_OK "{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"" POD "\",\"resourceVersion\":\"7\""

static void test_malformed_events(void **state)
{
    (void)state;
    struct k8s_watch_event ev;
    assert_int_equal(pod_event(META_OK "}", "{}", &ev), 0);
    assert_int_equal(pod_event(META_OK "}", "null", &ev), 0);
    assert_false(ev.pod.has_profile);
    /* Names are checked, never cut. */
    assert_int_equal(pod_event("{\"name\":\"P\",\"namespace\":\"ns\",\"uid\":\"u\","
                               "\"resourceVersion\":\"7\"}",
                               "{}", &ev),
                     -EPROTO);
    assert_int_equal(pod_event("{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"../x\","
                               "\"resourceVersion\":\"7\"}",
                               "{}", &ev),
                     -EPROTO);
    assert_int_equal(pod_event("{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\","
                               "\"resourceVersion\":\"7&watch=0\"}",
                               "{}", &ev),
                     -EPROTO);
    assert_int_equal(
        pod_event("{\"name\":\"p\",\"uid\":\"u\",\"resourceVersion\":\"7\"}", "{}", &ev), -EPROTO);
    assert_int_equal(pod_event(META_OK ",\"annotations\":{\"clrattach.io/profile\":1}}", "{}", &ev),
                     -EPROTO);
    assert_int_equal(pod_event(META_OK ",\"annotations\":[]}", "{}", &ev), -EPROTO);
    assert_int_equal(pod_event(META_OK "}",
                               "{\"containerStatuses\":[{\"name\":\"a\","
                               "\"restartCount\":-1}]}",
                               &ev),
                     -EPROTO);
    assert_int_equal(pod_event(META_OK "}",
                               "{\"containerStatuses\":[{\"name\":\"a\","
                               "\"containerID\":\"docker:// x\"}]}",
                               &ev),
                     -EPROTO);
    assert_int_equal(pod_event(META_OK "}", "{\"containerStatuses\":[{\"restartCount\":0}]}", &ev),
                     -EPROTO);
    assert_int_equal(pod_event(META_OK "}", "{\"containerStatuses\":{}}", &ev), -EPROTO);
    /* One container more than the cap. */
    char many[4096] = "{\"containerStatuses\":[";
    for (int i = 0; i <= K8S_POD_CONTAINERS_MAX; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s{\"name\":\"c%d\"}",
                 i ? "," : "", i);
    strncat(many, "]}", sizeof(many) - strlen(many) - 1);
    assert_int_equal(pod_event(META_OK "}", many, &ev), -E2BIG);
    const char *lines[] = {"not json", "{\"type\":\"ADDED\"}",
                           "{\"type\":\"PATCHED\",\"object\":{}}",
                           "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "[]"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        assert_int_equal(k8s_watch_event_parse(lines[i], strlen(lines[i]), &ev, NULL), -EPROTO);
}

/* The annotation is kept as the owner wrote it, with its whole length. */
static void test_annotation_kept(void **state)
{
    (void)state;
    struct k8s_watch_event ev;
    char meta[1024];
    char longv[301];
    memset(longv, 'a', 300);
    longv[300] = '\0';
    snprintf(meta, sizeof(meta), META_OK ",\"annotations\":{\"clrattach.io/profile\":\"%s\"}}",
             longv);
    assert_int_equal(pod_event(meta, "{}", &ev), 0);
    assert_true(ev.pod.has_profile);
    assert_int_equal(ev.pod.profile_len, 300);
    assert_int_equal(strlen(ev.pod.profile), K8S_ANNOTATION_KEPT);
    assert_int_equal(
        pod_event(META_OK ",\"annotations\":{\"clrattach.io/profile\":\"/opt/x\"}}", "{}", &ev), 0);
    assert_string_equal(ev.pod.profile, "/opt/x");
}

static void test_stream_caps_and_stop(void **state)
{
    (void)state;
    struct record r = {0};
    struct cla_error e = {0};
    struct k8s_watch_stream *s = k8s_watch_stream_new();
    char *big = malloc(K8S_WATCH_LINE_MAX + 2);
    assert_non_null(big);
    memset(big, ' ', K8S_WATCH_LINE_MAX + 2);
    assert_int_equal(k8s_watch_feed(s, big, K8S_WATCH_LINE_MAX, record_cb, &r, &e), 0);
    assert_int_equal(k8s_watch_feed(s, "x", 1, record_cb, &r, &e), -E2BIG);
    assert_int_equal(k8s_watch_feed(s, "\n", 1, record_cb, &r, &e), -EPROTO);
    k8s_watch_stream_free(s);
    /* A line over the cap in one chunk. */
    big[K8S_WATCH_LINE_MAX + 1] = '\n';
    s = k8s_watch_stream_new();
    assert_int_equal(k8s_watch_feed(s, big, K8S_WATCH_LINE_MAX + 2, record_cb, &r, &e), -E2BIG);
    k8s_watch_stream_free(s);
    free(big);
    /* A malformed line ends the stream; so does a callback's error. */
    s = k8s_watch_stream_new();
    assert_int_equal(k8s_watch_feed(s, "{}\n", 3, record_cb, &r, &e), -EPROTO);
    k8s_watch_stream_free(s);
    size_t len;
    char *b = fixture("watch_pods.jsonl", &len);
    r = (struct record){.stop_at = 2};
    s = k8s_watch_stream_new();
    assert_int_equal(k8s_watch_feed(s, b, len, record_cb, &r, &e), -ECANCELED);
    assert_int_equal(r.events, 2);
    assert_int_equal(k8s_watch_feed(s, "\n", 1, record_cb, &r, &e), -EPROTO);
    k8s_watch_stream_free(s);
    _cleanup_(k8s_watch_stream_freep) struct k8s_watch_stream *c = k8s_watch_stream_new();
    assert_non_null(c);
}

static void test_pod_list(void **state)
{
    (void)state;
    size_t len;
    char *b = fixture("podlist.json", &len);
    struct k8s_pod_list l;
    struct cla_error e = {0};
    assert_int_equal(k8s_pod_list_parse(b, len, &l, &e), 0);
    assert_string_equal(l.resource_version, "10244");
    assert_int_equal(l.n_items, 2);
    assert_string_equal(l.items[0].name, "orders-api-7d9f8b6c5-x2x9q");
    assert_string_equal(l.items[0].profile, "otel");
    assert_string_equal(l.items[0].containers[0].container_id, "cri-o://" ID_A);
    assert_int_equal(l.items[0].containers[0].restart_count, 1);
    assert_string_equal(l.items[1].ns, "default");
    assert_false(l.items[1].has_profile);
    k8s_pod_list_free(&l);
    const char *empty = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},"
                        "\"items\":[]}";
    assert_int_equal(k8s_pod_list_parse(empty, strlen(empty), &l, &e), 0);
    assert_int_equal(l.n_items, 0);
    k8s_pod_list_free(&l);
    const char *bad[] = {
        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\",\"continue\":\"x\"},"
        "\"items\":[]}",
        "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}",
        "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}",
        "{\"kind\":\"PodList\",\"metadata\":{},\"items\":[]}",
        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":{}}",
        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        assert_int_equal(k8s_pod_list_parse(bad[i], strlen(bad[i]), &l, &e), -EPROTO);
        assert_true(e.msg[0] != '\0');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_stream),     cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_gone_and_bookmark), cmocka_unit_test(test_malformed_events),
        cmocka_unit_test(test_annotation_kept),   cmocka_unit_test(test_stream_caps_and_stop),
        cmocka_unit_test(test_pod_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
