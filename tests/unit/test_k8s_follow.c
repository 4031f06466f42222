/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's follower's pure parts (lib/report/k8s_follow.c): the list and watch paths, the
 * back-off with jitter; and a Namespace reply's labels (lib/report/k8s_namespace.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/k8s_follow.h"
#include "report/k8s_namespace.h"

static void test_paths(void **state)
{
    (void)state;
    char buf[512];
    assert_int_equal(k8s_follow_path(buf, sizeof(buf), "node-1", NULL, 300), 0);
    assert_string_equal(buf, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1");
    assert_int_equal(k8s_follow_path(buf, sizeof(buf), "node-1", "12345", 300), 0);
    assert_string_equal(buf, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&watch=1"
                             "&allowWatchBookmarks=true&resourceVersion=12345&timeoutSeconds=300");
    assert_int_equal(k8s_follow_path(buf, 20, "node-1", "12345", 300), -ENOBUFS);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(k8s_follow_backoff_ms(0, 7), 0);
    int64_t cap = K8S_FOLLOW_BACKOFF_FIRST_MS;
    for (unsigned f = 1; f < 40; f++) {
        for (uint32_t rnd = 0; rnd < 5000; rnd += 997) {
            int64_t ms = k8s_follow_backoff_ms(f, rnd * 7919u);
            assert_true(ms >= cap / 2 && ms <= cap);
        }
        if (cap < K8S_FOLLOW_BACKOFF_MAX_MS)
            cap = cap * 2 > K8S_FOLLOW_BACKOFF_MAX_MS ? K8S_FOLLOW_BACKOFF_MAX_MS : cap * 2;
    }
    /* the jitter spreads agents that failed together */
    assert_true(k8s_follow_backoff_ms(3, 0) != k8s_follow_backoff_ms(3, 1000));
}

static void test_namespace(void **state)
{
    (void)state;
    const char *ok =
        "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"shop\","
        "\"labels\":{\"kubernetes.io/metadata.name\":\"shop\","
        "\"clrattach.io/profiling\":\"allowed\",\"empty\":\"\"}}}";
    struct k8s_namespace ns;
    struct cla_error e = {0};
    assert_int_equal(k8s_namespace_object_parse(ok, strlen(ok), &ns, &e), 0);
    assert_string_equal(ns.name, "shop");
    assert_int_equal(ns.n_labels, 3);
    struct agent_label l[K8S_NS_LABELS_MAX];
    assert_int_equal(k8s_namespace_labels(&ns, l), 3);
    struct agent_selector_term t[AGENT_SELECTOR_TERMS_MAX];
    const char *sel = "clrattach.io/profiling in (allowed, trial)";
    int n = agent_selector_parse(sel, strlen(sel), t, &e);
    assert_int_equal(n, 1);
    assert_true(agent_selector_matches(t, (size_t)n, l, 3));
    const char *nolabels = "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"}}";
    assert_int_equal(k8s_namespace_object_parse(nolabels, strlen(nolabels), &ns, &e), 0);
    assert_int_equal(ns.n_labels, 0);
    const char *bad[] = {
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"X_Y\"}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\",\"labels\":[]}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":1}}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\",\"labels\":{\"a b\":\"c\"}}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"-c\"}}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"c\\u0000\"}}}",
        "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"}} trailing",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(k8s_namespace_object_parse(bad[i], strlen(bad[i]), &ns, &e), -EPROTO);
    /* more labels than kept: refused, so the namespace is not selected on part of them */
    char big[16384];
    size_t len = (size_t)snprintf(big, sizeof(big),
                                  "{\"kind\":\"Namespace\",\"metadata\":{"
                                  "\"name\":\"x\",\"labels\":{");
    for (int i = 0; i <= K8S_NS_LABELS_MAX; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len, "%s\"k%d\":\"v\"", i ? "," : "", i);
    len += (size_t)snprintf(big + len, sizeof(big) - len, "}}}");
    assert_int_equal(k8s_namespace_object_parse(big, len, &ns, &e), -E2BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_namespace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
