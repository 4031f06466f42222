/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles turned into the watcher's options: a profiler and CLSID for attach and startup,
 * EnablePerfMap for perfmap, the OpenTelemetry agent for otel. Only the admin's configuration
 * goes in; the pod that asks contributes nothing but the profile's name.
 */
#include "report/agent_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ipc.h"

#define OTEL_ENDPOINT_VAR "OTEL_EXPORTER_OTLP_ENDPOINT="

static int build_otel(struct agent_plan_entry *x, const struct otel_opts *obase,
                      struct cla_error *e)
{
    const struct agent_profile *p = x->profile;
    size_t n = 0;
    x->oo = *obase;
    x->oo.agent = p->profiler;
    x->oo.endpoint = NULL;
    for (size_t i = 0; i < p->n_env; i++) {
        if (strncmp(p->env[i], OTEL_ENDPOINT_VAR, strlen(OTEL_ENDPOINT_VAR)) == 0)
            x->oo.endpoint = p->env[i] + strlen(OTEL_ENDPOINT_VAR);
        else if (n < ENV_VARS_MAX)
            x->env[n++] = p->env[i];
    }
    if (!x->oo.endpoint)
        return err_set(e, -EINVAL,
                       "profile '%s': mode otel needs " OTEL_ENDPOINT_VAR "URL in its env",
                       p->name);
    x->oo.env = x->env;
    x->oo.env_count = n;
    x->wo.attach.otel = &x->oo;
    return 0;
}

static int build_entry(struct agent_plan_entry *x, const struct watch_opts *base,
                       const struct perfmap_opts *pbase, const struct otel_opts *obase,
                       struct cla_error *e)
{
    const struct agent_profile *p = x->profile;
    struct attach_opts *a = &x->wo.attach;
    x->wo = *base;
    a->profiler_path = p->profiler;
    a->client_data = NULL;
    a->client_data_len = 0;
    a->env = NULL;
    a->env_count = 0;
    a->startup = a->startup_or_attach = false;
    a->perfmap = NULL;
    a->otel = NULL;
    switch (p->mode) {
    case AGENT_MODE_STARTUP:
        a->startup = a->startup_or_attach = true;
        a->env = (const char *const *)p->env;
        a->env_count = p->n_env;
        /* fallthrough */
    case AGENT_MODE_ATTACH:
        if (ipc_guid_parse(p->clsid, &a->clsid) < 0)
            return err_set(e, -EINVAL, "profile '%s': the CLSID does not parse", p->name);
        if (p->mode == AGENT_MODE_ATTACH) {
            a->client_data = (const uint8_t *)p->client_data;
            a->client_data_len = p->client_data ? p->client_data_len : 0;
        }
        return 0;
    case AGENT_MODE_PERFMAP:
        x->po = *pbase;
        a->perfmap = &x->po;
        return 0;
    case AGENT_MODE_OTEL: return build_otel(x, obase, e);
    }
    return err_set(e, -EINVAL, "profile '%s': unknown mode", p->name);
}

int agent_plan_build(struct agent_profiles *profiles, const struct watch_opts *base,
                     const struct perfmap_opts *pbase, const struct otel_opts *obase,
                     struct agent_plan **ret, struct cla_error *e)
{
    struct agent_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return err_set(e, -ENOMEM, "out of memory");
    p->profiles = *profiles;
    p->n = profiles->n;
    if (p->n && !(p->v = calloc(p->n, sizeof(*p->v)))) {
        free(p);
        return err_set(e, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < p->n; i++) {
        p->v[i].profile = &p->profiles.items[i];
        int r = build_entry(&p->v[i], base, pbase, obase, e);
        if (r < 0) {
            free(p->v);
            free(p); /* the profiles stay the caller's */
            return r;
        }
    }
    *profiles = (struct agent_profiles){0};
    *ret = p;
    return 0;
}

void agent_plan_pod_opts(const struct agent_plan_entry *x, const char *ns, const char *name,
                         const char *container, struct agent_pod_opts *out)
{
    out->wo = x->wo;
    out->oo = x->oo;
    snprintf(out->ns, sizeof(out->ns), "%s", ns);
    snprintf(out->name, sizeof(out->name), "%s", name);
    snprintf(out->container, sizeof(out->container), "%s", container);
    out->oo.pod_namespace = out->ns;
    out->oo.pod_name = out->name;
    out->oo.container_name = out->container;
    if (x->wo.attach.otel)
        out->wo.attach.otel = &out->oo;
}

const struct agent_plan_entry *agent_plan_find(const struct agent_plan *p, const char *name)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strcmp(p->v[i].profile->name, name) == 0)
            return &p->v[i];
    return NULL;
}

void agent_plan_free(struct agent_plan *p)
{
    while (p) {
        struct agent_plan *older = p->older;
        agent_profiles_free(&p->profiles);
        free(p->v);
        free(p);
        p = older;
    }
}
