/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each profile makes an attach do: the watcher's options for every profile of a
 * configuration, built from the profile alone (never from a pod's annotation) over the
 * command's base options.
 */
#ifndef CLRATTACH_AGENT_PLAN_H
#define CLRATTACH_AGENT_PLAN_H

#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "flow/otel.h"
#include "flow/perfmap.h"
#include "flow/watch_opts.h"
#include "report/agent_profiles.h"

struct agent_plan_entry {
    const struct agent_profile *profile;
    struct watch_opts wo; /* what its attaches run with */
    struct perfmap_opts po;
    struct otel_opts oo;
    const char *env[ENV_VARS_MAX]; /* otel: the profile's variables but the endpoint */
};

struct agent_plan {
    struct agent_profiles profiles; /* owned: the entries point into it */
    size_t n;
    struct agent_plan_entry *v;
    struct agent_plan *older; /* plans replaced by a reload, kept while attaches may use them */
};

/* Builds the plan of `profiles` (taken: emptied on success) over `base` (the loop's options:
 * /proc, timeouts, seccomp stages) and the base perfmap and otel options. -EINVAL (e names
 * the profile) for a profile that cannot run: a CLSID that does not parse, an otel profile
 * without OTEL_EXPORTER_OTLP_ENDPOINT in its env; -ENOMEM. */
int agent_plan_build(struct agent_profiles *profiles, const struct watch_opts *base,
                     const struct perfmap_opts *pbase, const struct otel_opts *obase,
                     struct agent_plan **ret, struct cla_error *e);

/* The entry of profile `name` (its options, its profile), or NULL. */
const struct agent_plan_entry *agent_plan_find(const struct agent_plan *p, const char *name);

/* An otel entry's options for one pod's container: the entry's, with k8s.pod.name,
 * k8s.namespace.name and k8s.container.name (the agent knows the pod; the annotation adds
 * nothing else). The names are copied in; wo.attach.otel points at oo. */
struct agent_pod_opts {
    struct watch_opts wo;
    struct otel_opts oo;
    char ns[K8S_LABEL_MAX + 1];
    char name[K8S_NAME_MAX + 1];
    char container[K8S_LABEL_MAX + 1];
};
void agent_plan_pod_opts(const struct agent_plan_entry *x, const char *ns, const char *name,
                         const char *container, struct agent_pod_opts *out);

/* Frees the plan and every older one. */
void agent_plan_free(struct agent_plan *p);

#endif
