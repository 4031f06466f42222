/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin's profile configuration validated field by field, and the annotation a pod owner
 * writes judged against it: a name, and never a path, a CLSID, client data or a setting.
 */
#include "report/agent_profiles.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/util.h"
#include "deliver/placeholders.h"
#include "report/json_bounded.h"
#include "runtime/ipc.h"

/* What each mode needs and takes; a field a mode does not take is refused, never ignored, so
 * that a configuration says only what will happen. */
static const struct {
    const char *name;
    bool profiler;    /* required (else refused) */
    bool clsid;       /* required (else refused) */
    bool client_data; /* allowed */
    bool env;         /* allowed */
} modes[] = {
    [AGENT_MODE_ATTACH] = {"attach", true, true, true, false},
    [AGENT_MODE_STARTUP] = {"startup", true, true, false, true},
    [AGENT_MODE_OTEL] = {"otel", true, false, false, true},
    [AGENT_MODE_PERFMAP] = {"perfmap", false, false, false, false},
};

const char *agent_mode_name(enum agent_mode m)
{
    return (size_t)m < ARRAY_SIZE(modes) ? modes[m].name : "?";
}

/* RFC 1123 label as Kubernetes checks it (IsDNS1123Label). */
static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > K8S_LABEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool an = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
        if (!an && (s[i] != '-' || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

/* An absolute path with no empty, "." or ".." component and no control byte: the agent opens it
 * in its own view, and a path that could mean two things is not one an admin meant. */
static bool path_ok(const char *s, size_t n)
{
    if (n < 2 || n >= K8S_FILE_PATH_MAX || s[0] != '/' || s[n - 1] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    for (size_t i = 1; i <= n;) {
        const char *slash = memchr(s + i, '/', n - i);
        size_t cn = slash ? (size_t)(slash - (s + i)) : n - i;
        if (cn == 0 || (cn == 1 && s[i] == '.') || (cn == 2 && s[i] == '.' && s[i + 1] == '.'))
            return false;
        i += cn + 1;
    }
    return true;
}

static int set_string(json_t *v, const char *field, char **dst, size_t *ret_len,
                      struct cla_error *e)
{
    if (!json_is_string(v))
        return err_set(e, -EINVAL, "%s is not a string", field);
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (!s)
        return err_set(e, -ENOMEM, "no memory");
    memcpy(s, json_string_value(v), n + 1);
    *dst = s;
    if (ret_len)
        *ret_len = n;
    return 0;
}

static int take_env(json_t *env, struct agent_profile *p, struct cla_error *e)
{
    if (!json_is_array(env) || json_array_size(env) == 0)
        return err_set(e, -EINVAL, "env is not a list of \"NAME=VALUE\" strings");
    if (json_array_size(env) > ENV_VARS_MAX)
        return err_set(e, -E2BIG, "env holds more than %d variables", ENV_VARS_MAX);
    if (!(p->env = calloc(json_array_size(env), sizeof(char *))))
        return err_set(e, -ENOMEM, "no memory");
    size_t i, nl, n;
    json_t *v;
    json_array_foreach(env, i, v)
    {
        int r = set_string(v, "env entry", &p->env[i], NULL, e);
        p->n_env = i + (r == 0);
        if (r < 0 || (r = ipc_env_check(p->env[i], &nl, e)) < 0)
            return err_prefix(e, "env[%zu]", i);
        const uint8_t *val = (const uint8_t *)p->env[i] + nl + 1;
        if ((r = placeholders_expand(val, strlen((const char *)val), "/", "/", NULL,
                                     ENV_VAR_BYTES_MAX, &n, e)) < 0)
            return err_prefix(e, "env[%zu]", i);
        for (size_t j = 0; j < i; j++)
            if (strncmp(p->env[j], p->env[i], nl + 1) == 0)
                return err_set(e, -EINVAL, "env[%zu] sets %.*s a second time", i, (int)nl,
                               p->env[i]);
    }
    return 0;
}

static int take_mode(json_t *prof, struct agent_profile *p, struct cla_error *e)
{
    const char *m = json_string_value(json_object_get(prof, "mode"));
    if (!m)
        return err_set(e, -EINVAL, "mode is missing (attach, startup, otel or perfmap)");
    for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
        if (strcmp(m, modes[i].name) == 0) {
            p->mode = (enum agent_mode)i;
            return 0;
        }
    return err_set(e, -EINVAL, "mode is not attach, startup, otel or perfmap");
}

/* A field the mode requires (need) or refuses (!need). */
static int presence(json_t *v, bool need, const char *field, enum agent_mode m, struct cla_error *e)
{
    if (need && !v)
        return err_set(e, -EINVAL, "%s is required in mode %s", field, modes[m].name);
    if (!need && v)
        return err_set(e, -EINVAL, "%s is not taken in mode %s", field, modes[m].name);
    return 0;
}

static int take_fields(json_t *prof, struct agent_profile *p, struct cla_error *e)
{
    json_t *prf = json_object_get(prof, "profiler"), *clsid = json_object_get(prof, "clsid");
    json_t *cd = json_object_get(prof, "clientData"), *env = json_object_get(prof, "env");
    json_t *ns = json_object_get(prof, "namespaces");
    int r;
    if ((r = take_mode(prof, p, e)) < 0 ||
        (r = presence(prf, modes[p->mode].profiler, "profiler", p->mode, e)) < 0 ||
        (r = presence(clsid, modes[p->mode].clsid, "clsid", p->mode, e)) < 0 ||
        (cd && (r = presence(cd, modes[p->mode].client_data, "clientData", p->mode, e)) < 0) ||
        (env && (r = presence(env, modes[p->mode].env, "env", p->mode, e)) < 0))
        return r;
    size_t n;
    if (prf &&
        ((r = set_string(prf, "profiler", &p->profiler, &n, e)) < 0 || !path_ok(p->profiler, n)))
        return r < 0 ? r
                     : err_set(e, -EINVAL,
                               "profiler is not an absolute path without '.', '..' "
                               "or empty components");
    struct ipc_guid g;
    if (clsid && (!json_is_string(clsid) || ipc_guid_parse(json_string_value(clsid), &g) < 0))
        return err_set(e, -EINVAL, "clsid is not a GUID");
    if (clsid)
        ipc_guid_format(&g, p->clsid);
    if (cd && ((r = set_string(cd, "clientData", &p->client_data, &p->client_data_len, e)) < 0 ||
               (r = placeholders_expand((const uint8_t *)p->client_data, p->client_data_len, "/",
                                        "/", NULL, IPC_MAX_CLIENT_DATA, &n, e)) < 0))
        return err_prefix(e, "clientData");
    if (env && (r = take_env(env, p, e)) < 0)
        return r;
    if (!json_is_string(ns))
        return err_set(e, -EINVAL,
                       "namespaces (a label selector) is missing: no profile is "
                       "open to every namespace");
    r = agent_selector_parse(json_string_value(ns), json_string_length(ns), p->terms, e);
    if (r < 0)
        return err_prefix(e, "namespaces");
    p->n_terms = (size_t)r;
    return 0;
}

static const char *const known_fields[] = {"mode",       "profiler", "clsid",
                                           "clientData", "env",      "namespaces"};

static int take_profile(const char *name, json_t *prof, struct agent_profile *p,
                        struct cla_error *e)
{
    if (!dns_label(name, strlen(name)))
        return err_set(e, -EINVAL,
                       "profile name is not a DNS-1123 label (lowercase letters, "
                       "digits and '-', at most 63)");
    memcpy(p->name, name, strlen(name) + 1);
    if (!json_is_object(prof))
        return err_set(e, -EINVAL, "profile %s is not an object", name);
    const char *key;
    json_t *v;
    json_object_foreach(prof, key, v)
    {
        size_t i = 0;
        while (i < ARRAY_SIZE(known_fields) && strcmp(key, known_fields[i]) != 0)
            i++;
        if (i == ARRAY_SIZE(known_fields))
            return err_set(e, -EINVAL,
                           "profile %s: unknown field (the fields are mode, profiler, "
                           "clsid, clientData, env, namespaces)",
                           name);
    }
    int r = take_fields(prof, p, e);
    return r < 0 ? err_prefix(e, "profile %s", name) : 0;
}

static void profile_clear(struct agent_profile *p)
{
    free(p->profiler);
    free(p->client_data);
    for (size_t i = 0; i < p->n_env; i++)
        free(p->env[i]);
    free(p->env);
}

void agent_profiles_free(struct agent_profiles *p)
{
    for (size_t i = 0; i < p->n; i++)
        profile_clear(&p->items[i]);
    free(p->items);
    p->items = NULL;
    p->n = 0;
}

static int take_profiles(json_t *root, void *ctx, struct cla_error *e)
{
    struct agent_profiles *l = ctx;
    json_t *profs = json_object_get(root, "profiles");
    if (!json_is_object(root) || json_object_size(root) != 1 || !json_is_object(profs))
        return err_set(e, -EINVAL, "agent profiles: not {\"profiles\": {NAME: {...}}}");
    if (json_object_size(profs) > AGENT_PROFILES_MAX)
        return err_set(e, -E2BIG, "agent profiles: more than %d", AGENT_PROFILES_MAX);
    if (!(l->items = calloc(json_object_size(profs) + 1, sizeof(*l->items))))
        return err_set(e, -ENOMEM, "agent profiles: no memory");
    const char *name;
    json_t *prof;
    json_object_foreach(profs, name, prof)
    {
        int r = take_profile(name, prof, &l->items[l->n], e);
        l->n++;
        if (r < 0)
            return err_prefix(e, "agent profiles");
    }
    return 0;
}

int agent_profiles_parse(const char *buf, size_t len, struct agent_profiles *ret,
                         struct cla_error *e)
{
    struct agent_profiles l = {0};
    int r = json_bounded_decode(buf, len, AGENT_CONFIG_MAX, "agent profiles", -EINVAL,
                                take_profiles, &l, e);
    if (r < 0) {
        agent_profiles_free(&l);
        return r;
    }
    *ret = l;
    return 0;
}

const struct agent_profile *agent_profiles_find(const struct agent_profiles *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->items[i].name, name) == 0)
            return &p->items[i];
    return NULL;
}

bool agent_profile_allows(const struct agent_profile *p, const struct agent_label *labels,
                          size_t n_labels)
{
    return agent_selector_matches(p->terms, p->n_terms, labels, n_labels);
}

/* The first byte of `s` that a profile name never holds, or NULL. */
static const char *first_foreign(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] && strchr(set, s[i]))
            return s + i;
    return NULL;
}

int agent_annotation_parse(const struct agent_profiles *p, const char *value, size_t len,
                           const struct agent_profile **ret_profile, struct cla_error *e)
{
    /* The reasons name what the value looks like, never the value: it is the pod owner's text
     * and goes into an Event and our log. */
    if (len == 0)
        return err_set(e, -EINVAL, "the annotation is empty; it names a profile");
    if (len > K8S_LABEL_MAX)
        return err_set(e, -EINVAL,
                       "the annotation is %zu bytes long; a profile name is at most "
                       "%d",
                       len, K8S_LABEL_MAX);
    char v[K8S_LABEL_MAX + 1];
    memcpy(v, value, len);
    v[len] = '\0';
    struct ipc_guid g;
    if (memchr(v, '/', len) || memchr(v, '\\', len))
        return err_set(e, -EINVAL,
                       "the annotation holds a path; it names a profile, and only "
                       "the node's admin chooses what a profile loads");
    if (strlen(v) == len && ipc_guid_parse(v, &g) == 0)
        return err_set(e, -EINVAL,
                       "the annotation holds a CLSID; it names a profile, and only "
                       "the node's admin chooses what a profile loads");
    const char *c = first_foreign(v, len, "=;:,&?{} \t\"'");
    if (c)
        return err_set(e, -EINVAL,
                       "the annotation holds '%c'; it names one profile and carries "
                       "no setting or client data",
                       *c == '\t' ? ' ' : *c);
    if (!dns_label(v, len))
        return err_set(e, -EINVAL,
                       "the annotation is not a profile name (a DNS-1123 label: "
                       "lowercase letters, digits and '-')");
    const struct agent_profile *prof = agent_profiles_find(p, v);
    if (!prof)
        return err_set(e, -ENOENT, "no profile of that name is configured for the clrattach agent");
    *ret_profile = prof;
    return 0;
}
