/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's pods (lib/report/agent_pods.c): kept in step with the follower, judged by profile
 * and namespace (a refusal warned once, never echoing the value), matched to a process by its
 * cgroup; and the profiles turned into the watcher's options (lib/report/agent_plan.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "report/agent_plan.h"
#include "report/agent_pods.h"

#define ID_A "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define ID_B "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define UID1 "9c4a1b2e-5d6f-4a7b-8c9d-0e1f2a3b4c5d"
#define UID2 "1c4a1b2e-5d6f-4a7b-8c9d-0e1f2a3b4c5e"

static const struct agent_label allowed[] = {{"clrattach.io/profiling", "allowed"},
                                             {"kubernetes.io/metadata.name", "shop"}};
static const struct agent_label other[] = {{"kubernetes.io/metadata.name", "other"}};

static struct agent_profiles load(void)
{
    size_t len;
    char *buf = slurp("tests/fixtures/agent/profiles.json", &len);
    assert_non_null(buf);
    struct agent_profiles p = {0};
    struct cla_error e = {0};
    assert_int_equal(agent_profiles_parse(buf, len, &p, &e), 0);
    return p;
}

static struct k8s_pod_info pod(const char *uid, const char *name, const char *ann, const char *id)
{
    struct k8s_pod_info p = {0};
    snprintf(p.ns, sizeof(p.ns), "shop");
    snprintf(p.name, sizeof(p.name), "%s", name);
    snprintf(p.uid, sizeof(p.uid), "%s", uid);
    if (ann) {
        p.has_profile = true;
        p.profile_len = strlen(ann);
        snprintf(p.profile, sizeof(p.profile), "%s", ann);
    }
    p.n_containers = 1;
    snprintf(p.containers[0].name, sizeof(p.containers[0].name), "app");
    if (id)
        snprintf(p.containers[0].container_id, sizeof(p.containers[0].container_id),
                 "containerd://%s", id);
    return p;
}

static void test_judge(void **state)
{
    (void)state;
    struct agent_profiles prof = load();
    struct agent_pods t = {0};
    struct k8s_pod_info in = pod(UID1, "orders-0", "probe", ID_A);
    struct agent_pod *p = agent_pods_upsert(&t, &in);
    assert_non_null(p);
    assert_int_equal(p->state, AGENT_POD_NEW);
    /* the namespace's labels not known yet: the pod waits, nothing warned */
    agent_pods_judge(p, &prof, 0, NULL, 0);
    assert_int_equal(p->state, AGENT_POD_WAIT_NS);
    assert_false(p->warn_due);
    agent_pods_judge(p, &prof, 1, allowed, 2);
    assert_int_equal(p->state, AGENT_POD_ALLOWED);
    assert_string_equal(p->profile, "probe");
    /* a namespace the profile does not select: refused, warned once */
    agent_pods_judge(p, &prof, 1, other, 1);
    assert_int_equal(p->state, AGENT_POD_REFUSED);
    assert_true(p->warn_due);
    assert_non_null(strstr(p->why, "not allowed in this namespace"));
    p->warn_due = false;
    agent_pods_rejudge(&t);
    agent_pods_judge(p, &prof, 1, other, 1);
    assert_false(p->warn_due); /* the same refusal again (a reload): not warned twice */
    agent_pods_free(&t);
    agent_profiles_free(&prof);
}

static void test_refusals_never_echo(void **state)
{
    (void)state;
    struct agent_profiles prof = load();
    struct agent_pods t = {0};
    const char *bad[] = {"/tmp/evil.so", "nosuch", "Probe", "probe;clsid=evil", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct k8s_pod_info in = pod(UID1, "orders-0", bad[i], ID_A);
        struct agent_pod *p = agent_pods_upsert(&t, &in);
        assert_non_null(p);
        agent_pods_judge(p, &prof, 1, allowed, 2);
        assert_int_equal(p->state, AGENT_POD_REFUSED);
        assert_true(p->warn_due);
        assert_null(strstr(p->why, "evil"));
        if (bad[i][0])
            assert_null(strstr(p->why, bad[i])); /* not even a well-formed unknown name */
        size_t k;
        assert_null(agent_pods_match(&t, "0::/kubepods.slice/cri-containerd-" ID_A ".scope\n",
                                     strlen("0::/kubepods.slice/cri-containerd-" ID_A ".scope\n"),
                                     &k));
    }
    agent_pods_free(&t);
    agent_profiles_free(&prof);
}

static void test_match_and_sync(void **state)
{
    (void)state;
    struct agent_profiles prof = load();
    struct agent_pods t = {0};
    struct k8s_pod_info a = pod(UID1, "orders-0", "probe", ID_A);
    struct k8s_pod_info b = pod(UID2, "orders-1", "probe", NULL); /* not started yet */
    agent_pods_judge(agent_pods_upsert(&t, &a), &prof, 1, allowed, 2);
    agent_pods_judge(agent_pods_upsert(&t, &b), &prof, 1, allowed, 2);
    const char *cg = "0::/clrattach-test.slice/cri-containerd-" ID_A ".scope\n";
    const char *cg_b = "0::/clrattach-test.slice/cri-containerd-" ID_B ".scope\n";
    const char *cg_docker = "0::/system.slice/docker-" ID_A ".scope\n";
    size_t k = 9;
    struct agent_pod *m = agent_pods_match(&t, cg, strlen(cg), &k);
    assert_non_null(m);
    assert_string_equal(m->name, "orders-0");
    assert_int_equal(k, 0);
    assert_null(agent_pods_match(&t, cg_b, strlen(cg_b), &k));
    assert_null(agent_pods_match(&t, cg_docker, strlen(cg_docker), &k)); /* another runtime */
    /* the second pod's container starts: its ID comes with a MODIFIED */
    b = pod(UID2, "orders-1", "probe", ID_B);
    assert_non_null(agent_pods_upsert(&t, &b));
    assert_int_equal(agent_pods_find(&t, UID2)->state, AGENT_POD_ALLOWED);
    assert_non_null(agent_pods_match(&t, cg_b, strlen(cg_b), &k));
    /* the annotation removed: the pod is dropped */
    struct k8s_pod_info none = pod(UID2, "orders-1", NULL, ID_B);
    assert_null(agent_pods_upsert(&t, &none));
    assert_int_equal(t.n, 1);
    /* a relist that no longer has orders-0 */
    agent_pods_sync_begin(&t);
    assert_int_equal(agent_pods_sync_end(&t), 1);
    assert_int_equal(t.n, 0);
    assert_null(agent_pods_match(&t, cg, strlen(cg), &k));
    agent_pods_free(&t);
    agent_profiles_free(&prof);
}

static void test_plan(void **state)
{
    (void)state;
    struct agent_profiles prof = load();
    struct watch_opts base = {.interval_ms = 250};
    base.attach.timeout_ms = 1234;
    struct perfmap_opts pb = {.enable = true};
    struct otel_opts ob = {.timeout_ms = 1234};
    struct agent_plan *plan = NULL;
    struct cla_error e = {0};
    assert_int_equal(agent_plan_build(&prof, &base, &pb, &ob, &plan, &e), 0);
    assert_int_equal(prof.n, 0); /* taken */
    const struct watch_opts *wo = &agent_plan_find(plan, "probe")->wo;
    assert_non_null(wo);
    assert_string_equal(wo->attach.profiler_path, "/opt/clrattach/profilers/clrprobe");
    assert_int_equal(wo->attach.timeout_ms, 1234);
    assert_false(wo->attach.startup);
    assert_non_null(wo->attach.client_data);
    wo = &agent_plan_find(plan, "vendor-startup")->wo;
    assert_true(wo->attach.startup && wo->attach.startup_or_attach);
    assert_int_equal(wo->attach.env_count, 2);
    wo = &agent_plan_find(plan, "otel")->wo;
    assert_non_null(wo->attach.otel);
    assert_string_equal(wo->attach.otel->endpoint, "http://collector.observability:4318");
    assert_int_equal(wo->attach.otel->env_count, 0);
    wo = &agent_plan_find(plan, "perfmap")->wo;
    assert_non_null(wo->attach.perfmap);
    assert_null(wo->attach.profiler_path);
    assert_null(agent_plan_find(plan, "nosuch"));
    agent_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_refusals_never_echo),
        cmocka_unit_test(test_match_and_sync),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
