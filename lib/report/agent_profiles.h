/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's profiles: the admin's configuration of what each profile loads and which
 * namespaces may ask for it, and a pod's annotation, which only names one. Pure: no I/O.
 */
#ifndef CLRATTACH_AGENT_PROFILES_H
#define CLRATTACH_AGENT_PROFILES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/agent_selector.h"

enum agent_mode {
    AGENT_MODE_ATTACH,  /* AttachProfiler into a running runtime */
    AGENT_MODE_STARTUP, /* StartupProfiler into a runtime paused at startup, then resume */
    AGENT_MODE_OTEL,    /* the OpenTelemetry agent as a startup hook (docs/otel.md) */
    AGENT_MODE_PERFMAP, /* EnablePerfMap (docs/perfmap.md) */
};

struct agent_profile {
    char name[K8S_LABEL_MAX + 1]; /* a DNS-1123 label */
    enum agent_mode mode;
    char *profiler;    /* absolute path in the agent's view; NULL for perfmap */
    char clsid[39];    /* "{XXXXXXXX-...}" for attach and startup, else "" */
    char *client_data; /* attach only; NULL when none */
    size_t client_data_len;
    char **env; /* "NAME=VALUE", startup and otel only */
    size_t n_env;
    size_t n_terms; /* at least one: no profile is open to every namespace */
    struct agent_selector_term terms[AGENT_SELECTOR_TERMS_MAX];
};

struct agent_profiles {
    size_t n;
    struct agent_profile *items; /* owned; agent_profiles_free */
};

/* Parses the configuration (JSON, docs/agent.md "Profiles") of `len` bytes into *ret, every
 * field checked; *ret is untouched on failure. -E2BIG above AGENT_CONFIG_MAX or a count cap,
 * -EINVAL with e naming the profile and field for anything else. */
int agent_profiles_parse(const char *buf, size_t len, struct agent_profiles *ret,
                         struct cla_error *e);
void agent_profiles_free(struct agent_profiles *p);

/* The profile named `name`, or NULL. */
const struct agent_profile *agent_profiles_find(const struct agent_profiles *p, const char *name);

/* Do the labels satisfy every term of the profile's selector? */
bool agent_profile_allows(const struct agent_profile *p, const struct agent_label *labels,
                          size_t n_labels);

/* Judges the value of a pod's clrattach.io/profile annotation, `len` bytes (read only when at
 * most K8S_LABEL_MAX): it must be a DNS-1123 label naming a configured profile, and can carry
 * nothing else. Returns 0 with *ret_profile, -EINVAL for a malformed value or -ENOENT for an
 * unknown profile, with e saying why in words fit for the pod's Warning Event (never echoing a
 * malformed value). */
int agent_annotation_parse(const struct agent_profiles *p, const char *value, size_t len,
                           const struct agent_profile **ret_profile, struct cla_error *e);

/* "attach", "startup", "otel", "perfmap". */
const char *agent_mode_name(enum agent_mode m);

#endif
