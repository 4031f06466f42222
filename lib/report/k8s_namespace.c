/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Namespace reply decoded into its name and labels, every key and value checked as the
 * apiserver validates them.
 */
#include "report/k8s_namespace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/json_bounded.h"
#include "report/k8s_event.h"

/* A label value: empty, or at most 63 of [A-Za-z0-9-_.] beginning and ending alphanumeric. */
static bool label_value_ok(const char *s, size_t n)
{
    if (n == 0)
        return true;
    if (n > K8S_LABEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
            return false;
    }
    return true;
}

static int take_labels(json_t *labels, struct k8s_namespace *ns, struct cla_error *e)
{
    if (!labels || json_is_null(labels))
        return 0;
    if (!json_is_object(labels))
        return err_set(e, -EPROTO, "namespace: metadata.labels is not an object");
    if (json_object_size(labels) > K8S_NS_LABELS_MAX)
        return err_set(e, -E2BIG, "namespace: %zu labels, above the cap of %d",
                       json_object_size(labels), K8S_NS_LABELS_MAX);
    const char *key;
    json_t *v;
    json_object_foreach(labels, key, v)
    {
        struct k8s_ns_label *l = &ns->labels[ns->n_labels];
        size_t kn = strlen(key);
        if (!json_is_string(v) || kn > K8S_LABEL_KEY_MAX || !k8s_is_qualified_name(key) ||
            !label_value_ok(json_string_value(v), json_string_length(v)) ||
            strlen(json_string_value(v)) != json_string_length(v))
            return err_set(e, -EPROTO, "namespace: a label is malformed");
        memcpy(l->key, key, kn + 1);
        memcpy(l->value, json_string_value(v), json_string_length(v) + 1);
        ns->n_labels++;
    }
    return 0;
}

static int decode(json_t *root, void *ctx, struct cla_error *e)
{
    struct k8s_namespace *ns = ctx;
    json_t *kind = json_object_get(root, "kind");
    json_t *meta = json_object_get(root, "metadata");
    if (!json_is_object(root) || !json_is_string(kind) ||
        strcmp(json_string_value(kind), "Namespace") != 0 || !json_is_object(meta))
        return err_set(e, -EPROTO, "namespace: not a Namespace object");
    json_t *name = json_object_get(meta, "name");
    if (!json_is_string(name) || json_string_length(name) > K8S_LABEL_MAX ||
        !k8s_is_dns1123_label(json_string_value(name)))
        return err_set(e, -EPROTO, "namespace: metadata.name is malformed");
    memcpy(ns->name, json_string_value(name), json_string_length(name) + 1);
    return take_labels(json_object_get(meta, "labels"), ns, e);
}

int k8s_namespace_object_parse(const char *buf, size_t len, struct k8s_namespace *ret,
                               struct cla_error *e)
{
    struct k8s_namespace *ns = calloc(1, sizeof(*ns));
    if (!ns)
        return err_set(e, -ENOMEM, "out of memory");
    int r = json_bounded_decode(buf, len, K8S_STATUS_MAX, "namespace", -EPROTO, decode, ns, e);
    if (r == 0)
        *ret = *ns;
    free(ns);
    return r;
}

size_t k8s_namespace_labels(const struct k8s_namespace *ns, struct agent_label *out)
{
    for (size_t i = 0; i < ns->n_labels; i++)
        out[i] = (struct agent_label){.key = ns->labels[i].key, .value = ns->labels[i].value};
    return ns->n_labels;
}
