/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's profiles and the pod annotation naming one (lib/report/agent_profiles.c,
 * agent_selector.c): the admin's configuration checked strictly, and an annotation that can
 * name a profile and carry nothing else; an otel profile's options for one pod (agent_plan.c). */
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
#include "report/agent_profiles.h"

static struct agent_profiles cfg;

static int setup(void **state)
{
    (void)state;
    size_t len;
    char *b = slurp("tests/fixtures/agent/profiles.json", &len);
    struct cla_error e = {0};
    if (agent_profiles_parse(b, len, &cfg, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    agent_profiles_free(&cfg);
    return 0;
}

static void test_sample_config(void **state)
{
    (void)state;
    assert_int_equal(cfg.n, 4);
    const struct agent_profile *p = agent_profiles_find(&cfg, "probe");
    assert_non_null(p);
    assert_int_equal(p->mode, AGENT_MODE_ATTACH);
    assert_string_equal(p->profiler, "/opt/clrattach/profilers/clrprobe");
    assert_string_equal(p->clsid, "{8C3B5F2A-1D4E-4B6F-9A7C-2E5D8F1B3C4A}");
    assert_string_equal(p->client_data, "out={dir}/report.json;detach_after=60");
    assert_int_equal(p->n_env, 0);
    assert_int_equal(p->n_terms, 1);
    assert_string_equal(p->terms[0].key, "clrattach.io/profiling");
    assert_int_equal(p->terms[0].n_values, 2);
    assert_string_equal(p->terms[0].values[1], "trial");
    p = agent_profiles_find(&cfg, "vendor-startup");
    assert_int_equal(p->mode, AGENT_MODE_STARTUP);
    assert_string_equal(p->clsid, "{846F5F1C-F9AE-4B07-969E-05C26BC060D8}");
    assert_null(p->client_data);
    assert_int_equal(p->n_env, 2);
    assert_string_equal(p->env[1], "VENDOR_HOME={dir}");
    assert_int_equal(p->n_terms, 2);
    assert_string_equal(p->terms[1].key, "env");
    assert_string_equal(p->terms[1].values[0], "prod");
    p = agent_profiles_find(&cfg, "otel");
    assert_int_equal(p->mode, AGENT_MODE_OTEL);
    assert_string_equal(p->clsid, "");
    p = agent_profiles_find(&cfg, "perfmap");
    assert_int_equal(p->mode, AGENT_MODE_PERFMAP);
    assert_null(p->profiler);
    assert_null(agent_profiles_find(&cfg, "nope"));
    assert_string_equal(agent_mode_name(AGENT_MODE_OTEL), "otel");
}

/* One profile `body` under the name `name`; returns the parse result, e must name a cause. */
static int one(const char *name, const char *body, struct cla_error *e)
{
    char buf[8192];
    snprintf(buf, sizeof(buf), "{\"profiles\":{\"%s\":%s}}", name, body);
    struct agent_profiles l;
    err_clear(e);
    int r = agent_profiles_parse(buf, strlen(buf), &l, e);
    if (r == 0)
        agent_profiles_free(&l);
    else
        assert_true(e->msg[0] != '\0');
    return r;
}

#define ATT                                                                                        \
    "\"mode\":\"attach\",\"profiler\":\"/p/"                                                       \
    "x\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\""
#define NS "\"namespaces\":\"a=b\""

static void expect_refused(const char *name, const char *body, const char *words)
{
    struct cla_error e = {0};
    int r = one(name, body, &e);
    if (r >= 0 || !strstr(e.msg, words))
        fail_msg("%s %s: %d '%s', want '%s'", name, body, r, e.msg, words);
}

static void test_config_refusals(void **state)
{
    (void)state;
    struct cla_error e = {0};
    assert_int_equal(one("p", "{" ATT "," NS "}", &e), 0);
    expect_refused("P", "{" ATT "," NS "}", "DNS-1123");
    expect_refused("-p", "{" ATT "," NS "}", "DNS-1123");
    expect_refused("p", "{" ATT "}", "namespaces");
    expect_refused("p", "{" ATT ",\"namespaces\":\"\"}", "label key");
    expect_refused("p", "{" ATT ",\"namespaces\":\"a!=b\"}", "neither");
    expect_refused("p", "{" ATT ",\"namespaces\":\"a notin (b)\"}", "neither");
    expect_refused("p", "{" ATT ",\"namespaces\":\"a in (b\"}", "not closed");
    expect_refused("p", "{" ATT ",\"namespaces\":\"a=b c\"}", "unexpected");
    expect_refused("p", "{" ATT ",\"namespaces\":\"a=-b\"}", "label value");
    expect_refused("p", "{" ATT "," NS ",\"clsId\":\"x\"}", "unknown field");
    expect_refused("p", "{\"profiler\":\"/p\"," NS "}", "mode is missing");
    expect_refused("p", "{\"mode\":\"inject\"," NS "}", "mode is not");
    expect_refused("p", "{\"mode\":\"attach\",\"profiler\":\"/p/x\"," NS "}", "clsid is required");
    expect_refused(
        "p", "{\"mode\":\"attach\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\"," NS "}",
        "profiler is required");
    expect_refused("p", "{\"mode\":\"perfmap\",\"profiler\":\"/p\"," NS "}", "not taken");
    expect_refused("p",
                   "{\"mode\":\"otel\",\"profiler\":\"/"
                   "p\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\"," NS "}",
                   "not taken");
    expect_refused(
        "p",
        "{\"mode\":\"startup\",\"profiler\":\"/"
        "p\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\",\"clientData\":\"x\"," NS "}",
        "not taken");
    expect_refused("p", "{" ATT ",\"env\":[\"A=b\"]," NS "}", "not taken");
    expect_refused("p",
                   "{\"mode\":\"attach\",\"profiler\":\"p/"
                   "x\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\"," NS "}",
                   "absolute path");
    expect_refused("p",
                   "{\"mode\":\"attach\",\"profiler\":\"/p/../"
                   "etc\",\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\"," NS "}",
                   "absolute path");
    expect_refused("p",
                   "{\"mode\":\"attach\",\"profiler\":\"/p\",\"clsid\":\"{8c3b5f2a-1d4e}\"," NS "}",
                   "not a GUID");
    expect_refused("p", "{" ATT ",\"clientData\":\"{nope}\"," NS "}", "clientData");
    expect_refused("p", "{\"mode\":\"otel\",\"profiler\":\"/p\",\"env\":[\"=x\"]," NS "}",
                   "env[0]");
    expect_refused("p", "{\"mode\":\"otel\",\"profiler\":\"/p\",\"env\":[\"A=1\",\"A=2\"]," NS "}",
                   "second time");
    expect_refused("p", "{\"mode\":\"otel\",\"profiler\":\"/p\",\"env\":[]," NS "}", "env");
    expect_refused("p", "[]", "not an object");
    /* The whole file. */
    struct agent_profiles l;
    const char *bad[] = {"", "{}", "{\"profiles\":[]}", "{\"profiles\":{},\"x\":1}",
                         "{\"profiles\":{\"a\":{" ATT "," NS "},\"a\":{" ATT "," NS "}}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(agent_profiles_parse(bad[i], strlen(bad[i]), &l, &e), -EINVAL);
    char *many = calloc(1, AGENT_CONFIG_MAX + 1);
    assert_non_null(many);
    int off = snprintf(many, AGENT_CONFIG_MAX, "{\"profiles\":{");
    for (int i = 0; i <= AGENT_PROFILES_MAX; i++)
        off += snprintf(many + off, AGENT_CONFIG_MAX - (size_t)off, "%s\"p%d\":{" ATT "," NS "}",
                        i ? "," : "", i);
    off += snprintf(many + off, AGENT_CONFIG_MAX - (size_t)off, "}}");
    assert_int_equal(agent_profiles_parse(many, (size_t)off, &l, &e), -E2BIG);
    assert_int_equal(agent_profiles_parse(many, AGENT_CONFIG_MAX + 1, &l, &e), -E2BIG);
    free(many);
}

static void test_selector(void **state)
{
    (void)state;
    struct agent_selector_term t[AGENT_SELECTOR_TERMS_MAX];
    struct cla_error e = {0};
    const char *s = " team = shop ,tier in ( web , api ),example.com/x==1";
    assert_int_equal(agent_selector_parse(s, strlen(s), t, &e), 3);
    assert_string_equal(t[0].key, "team");
    assert_string_equal(t[1].values[1], "api");
    assert_string_equal(t[2].key, "example.com/x");
    struct agent_label ok[] = {{"tier", "api"}, {"team", "shop"}, {"example.com/x", "1"}};
    assert_true(agent_selector_matches(t, 3, ok, 3));
    struct agent_label other[] = {{"tier", "db"}, {"team", "shop"}, {"example.com/x", "1"}};
    assert_false(agent_selector_matches(t, 3, other, 3));
    assert_false(agent_selector_matches(t, 3, ok, 2)); /* a key absent */
    assert_false(agent_selector_matches(t, 0, ok, 3)); /* no term selects nothing */
    const char *bad[] = {"a",        "=b",     "a=b,", "A/b=c",        "-a=b",
                         "a in ()x", "a in b", "a=b)", "a in (b,,c)x", "x.-y/a=b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (agent_selector_parse(bad[i], strlen(bad[i]), t, &e) >= 0)
            fail_msg("selector '%s' accepted", bad[i]);
    const char *nine = "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1";
    assert_int_equal(agent_selector_parse(nine, strlen(nine), t, &e), -E2BIG);
    /* An empty value is a value (Kubernetes allows it); a missing one after '=' too. */
    assert_int_equal(agent_selector_parse("a=", 2, t, &e), 1);
}

static void test_annotation_names_only(void **state)
{
    (void)state;
    struct cla_error e = {0};
    const struct agent_profile *p = NULL;
    assert_int_equal(agent_annotation_parse(&cfg, "otel", 4, &p, &e), 0);
    assert_string_equal(p->name, "otel");
    assert_int_equal(agent_annotation_parse(&cfg, "vendor-startup", 14, &p, &e), 0);
    assert_int_equal(agent_annotation_parse(&cfg, "datadog", 7, &p, &e), -ENOENT);
    /* Well formed but unknown: not repeated either (the Warning Event carries this reason). */
    assert_non_null(strstr(e.msg, "no profile of that name"));
    assert_null(strstr(e.msg, "datadog"));
    /* Each refused with its reason, and the value never echoed. */
    static const struct {
        const char *value;
        const char *reason;
    } refused[] = {
        {"", "empty"},
        {"/opt/evil/libevil.so", "path"},
        {"../../evil", "path"},
        {"otel/../x", "path"},
        {"C:\\evil", "path"},
        {"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}", "CLSID"},
        {"8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a", "CLSID"},
        {"otel;clsid=x", "setting"},
        {"otel,perfmap", "setting"},
        {"profile=otel", "setting"},
        {"otel out=x", "setting"},
        {"otel ", "setting"},
        {"OTEL", "DNS-1123"},
        {"otel-", "DNS-1123"},
        {"otel\xc3\xa9", "DNS-1123"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "at most 63"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *v = refused[i].value;
        p = NULL;
        err_clear(&e);
        int r = agent_annotation_parse(&cfg, v, strlen(v), &p, &e);
        if (r != -EINVAL || !strstr(e.msg, refused[i].reason))
            fail_msg("'%s': %d '%s', want '%s'", v, r, e.msg, refused[i].reason);
        assert_null(p);
        if (strlen(v) >= 3)
            assert_null(strstr(e.msg, v));
    }
    /* A NUL inside, and bytes past the length, change nothing. */
    assert_int_equal(agent_annotation_parse(&cfg, "otel\0x", 6, &p, &e), -EINVAL);
    assert_int_equal(agent_annotation_parse(&cfg, "otel/x", 4, &p, &e), 0);
}

/* Every string over an alphabet of the dangerous bytes, up to 4 long: whatever is accepted is
 * exactly a configured profile's name. */
static void test_annotation_exhaustive(void **state)
{
    (void)state;
    static const char alpha[] = "otel/{}=;. -A0";
    size_t na = sizeof(alpha) - 1;
    char v[5];
    size_t accepted = 0;
    for (size_t len = 1; len <= 4; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= na;
        for (size_t k = 0; k < total; k++) {
            size_t x = k;
            for (size_t i = 0; i < len; i++, x /= na)
                v[i] = alpha[x % na];
            v[len] = '\0';
            const struct agent_profile *p = NULL;
            if (agent_annotation_parse(&cfg, v, len, &p, NULL) == 0) {
                assert_string_equal(p->name, v);
                accepted++;
            } else {
                assert_null(p);
            }
        }
    }
    assert_int_equal(accepted, 1); /* "otel" */
}

/* An otel profile's attach for one pod carries the pod's names in the resource, on a copy: the
 * profile's entry (shared by every pod) keeps none, and other settings are the entry's. */
static void test_plan_pod_opts(void **state)
{
    (void)state;
    size_t len;
    char *b = slurp("tests/fixtures/agent/profiles.json", &len);
    struct agent_profiles own = {0};
    struct agent_plan *plan = NULL;
    struct cla_error e = {0};
    assert_int_equal(agent_profiles_parse(b, len, &own, &e), 0);
    struct watch_opts base = {.attach = {.timeout_ms = 1234}};
    struct perfmap_opts pb = {0};
    struct otel_opts ob = {.timeout_ms = 1234, .service_name = "svc"};
    assert_int_equal(agent_plan_build(&own, &base, &pb, &ob, &plan, &e), 0);
    const struct agent_plan_entry *x = agent_plan_find(plan, "otel");
    assert_non_null(x);
    struct agent_pod_opts *po = calloc(1, sizeof(*po));
    assert_non_null(po);
    agent_plan_pod_opts(x, "shop", "orders-api-7d9f-x2", "app", po);
    assert_ptr_equal(po->wo.attach.otel, &po->oo);
    assert_string_equal(po->oo.pod_namespace, "shop");
    assert_string_equal(po->oo.pod_name, "orders-api-7d9f-x2");
    assert_string_equal(po->oo.container_name, "app");
    assert_string_equal(po->oo.endpoint, "http://collector.observability:4318");
    assert_string_equal(po->oo.agent, "/opt/clrattach/otel-agent");
    assert_string_equal(po->oo.service_name, "svc");
    assert_int_equal(po->wo.attach.timeout_ms, 1234);
    assert_null(x->oo.pod_name);
    assert_null(x->oo.pod_namespace);
    assert_null(x->oo.container_name);
    assert_ptr_equal(x->wo.attach.otel, &x->oo);
    /* A name at its longest is kept whole. */
    char longname[K8S_NAME_MAX + 1];
    memset(longname, 'a', K8S_NAME_MAX);
    longname[K8S_NAME_MAX] = '\0';
    agent_plan_pod_opts(x, "shop", longname, "app", po);
    assert_string_equal(po->oo.pod_name, longname);
    /* Another mode's entry has no otel options to point at. */
    agent_plan_pod_opts(agent_plan_find(plan, "perfmap"), "shop", "p", "app", po);
    assert_null(po->wo.attach.otel);
    free(po);
    agent_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_config),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_annotation_names_only),
        cmocka_unit_test(test_annotation_exhaustive),
        cmocka_unit_test(test_plan_pod_opts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
