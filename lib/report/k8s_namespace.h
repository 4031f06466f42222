/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Namespace object as the apiserver sends it to the agent: its name and labels, which the
 * profiles' namespace selectors are judged against. Pure: no I/O.
 */
#ifndef CLRATTACH_K8S_NAMESPACE_H
#define CLRATTACH_K8S_NAMESPACE_H

#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/agent_selector.h"

/* A label key: [prefix/]name, a DNS-1123 subdomain and a qualified name. */
#define K8S_LABEL_KEY_MAX (K8S_NAME_MAX + 1 + K8S_LABEL_MAX)

struct k8s_ns_label {
    char key[K8S_LABEL_KEY_MAX + 1];
    char value[K8S_LABEL_MAX + 1];
};

struct k8s_namespace {
    char name[K8S_LABEL_MAX + 1];
    size_t n_labels;
    struct k8s_ns_label labels[K8S_NS_LABELS_MAX];
};

/* Decodes a Namespace reply of `len` bytes into *ret (untouched on failure): kind Namespace,
 * metadata.name a DNS-1123 label, metadata.labels an object of strings, each key a qualified
 * name and each value a label value. -E2BIG above K8S_STATUS_MAX bytes or K8S_NS_LABELS_MAX
 * labels, -EPROTO for anything else. */
int k8s_namespace_object_parse(const char *buf, size_t len, struct k8s_namespace *ret,
                               struct cla_error *e);

/* The labels as agent_selector takes them, pointing into `ns`: `out` holds K8S_NS_LABELS_MAX.
 * Returns how many. */
size_t k8s_namespace_labels(const struct k8s_namespace *ns, struct agent_label *out);

#endif
