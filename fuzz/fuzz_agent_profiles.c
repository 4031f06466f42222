/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's profile configuration, namespace selectors and the pod annotation: a profile
 * accepted has every field its mode needs, and an annotation accepted is exactly a profile's
 * name, never a path, a CLSID or a setting.
 */
#include <errno.h>

#include "fuzz.h"
#include "report/agent_profiles.h"

static const char config[] =
    "{\"profiles\":{\"otel\":{\"mode\":\"otel\",\"profiler\":\"/opt/otel\","
    "\"namespaces\":\"a=b\"},\"probe\":{\"mode\":\"attach\",\"profiler\":\"/opt/p\","
    "\"clsid\":\"{8c3b5f2a-1d4e-4b6f-9a7c-2e5d8f1b3c4a}\",\"namespaces\":\"a in (b,c)\"}}}";

static void check_profile(const struct agent_profile *p)
{
    size_t n = strnlen(p->name, sizeof(p->name));
    FUZZ_CHECK(n > 0 && n < sizeof(p->name));
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK((p->name[i] >= 'a' && p->name[i] <= 'z') ||
                   (p->name[i] >= '0' && p->name[i] <= '9') || p->name[i] == '-');
    FUZZ_CHECK((p->profiler != NULL) == (p->mode != AGENT_MODE_PERFMAP));
    if (p->profiler)
        FUZZ_CHECK(p->profiler[0] == '/' && !strstr(p->profiler, "/../") &&
                   !strstr(p->profiler, "//"));
    bool clsid = p->mode == AGENT_MODE_ATTACH || p->mode == AGENT_MODE_STARTUP;
    FUZZ_CHECK(clsid ? strlen(p->clsid) == 38 : p->clsid[0] == '\0');
    FUZZ_CHECK(!p->client_data || p->mode == AGENT_MODE_ATTACH);
    FUZZ_CHECK(p->n_env <= ENV_VARS_MAX);
    FUZZ_CHECK(p->n_terms >= 1 && p->n_terms <= AGENT_SELECTOR_TERMS_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct cla_error e = {0};
    struct agent_profiles l;
    int r = agent_profiles_parse(buf, size, &l, &e);
    if (r == 0) {
        FUZZ_CHECK(l.n <= AGENT_PROFILES_MAX);
        for (size_t i = 0; i < l.n; i++)
            check_profile(&l.items[i]);
        agent_profiles_free(&l);
    } else {
        FUZZ_CHECK(e.code == r && e.msg[0]);
    }

    struct agent_selector_term t[AGENT_SELECTOR_TERMS_MAX];
    r = agent_selector_parse(buf, size, t, NULL);
    FUZZ_CHECK(r < 0 || (r >= 1 && r <= AGENT_SELECTOR_TERMS_MAX));
    for (int i = 0; i < r; i++) {
        FUZZ_CHECK(t[i].key[0] && t[i].n_values >= 1);
        FUZZ_CHECK(t[i].n_values <= AGENT_SELECTOR_VALUES_MAX);
    }

    struct agent_profiles cfg;
    FUZZ_CHECK(agent_profiles_parse(config, sizeof(config) - 1, &cfg, NULL) == 0);
    const struct agent_profile *p = NULL;
    err_clear(&e);
    r = agent_annotation_parse(&cfg, buf, size, &p, &e);
    if (r == 0) {
        /* The annotation is a configured name, byte for byte: nothing else got through. */
        FUZZ_CHECK(p && strlen(p->name) == size && memcmp(p->name, buf, size) == 0);
    } else {
        FUZZ_CHECK((r == -EINVAL || r == -ENOENT) && e.msg[0] && !p);
        FUZZ_CHECK(fuzz_no_controls(e.msg, strlen(e.msg)));
    }
    agent_profiles_free(&cfg);
    return 0;
}
