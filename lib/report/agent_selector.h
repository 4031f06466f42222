/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The namespace label selector of an agent profile: `key=value` and `key in (a,b)` terms,
 * parsed strictly and matched against a namespace's labels. Pure: no I/O.
 */
#ifndef CLRATTACH_AGENT_SELECTOR_H
#define CLRATTACH_AGENT_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"

/* One term: `key=value` (or `==`), or `key in (v1,v2)`. */
struct agent_selector_term {
    char key[K8S_NAME_MAX + 1 + K8S_LABEL_MAX + 1]; /* [prefix/]name */
    size_t n_values;                                /* 1 for `=` */
    char values[AGENT_SELECTOR_VALUES_MAX][K8S_LABEL_MAX + 1];
};

/* Parses a selector of `len` bytes into at most AGENT_SELECTOR_TERMS_MAX terms (ret_terms
 * holds that many). Returns the number of terms, at least 1, or -EINVAL (e says where) or
 * -E2BIG past a cap. */
int agent_selector_parse(const char *s, size_t len, struct agent_selector_term *ret_terms,
                         struct cla_error *e);

/* A namespace's label. */
struct agent_label {
    const char *key;
    const char *value;
};

/* Do the labels satisfy every one of the `n_terms` terms? A term's key must be present with
 * one of its values, as with Kubernetes' own `=` and `in`. */
bool agent_selector_matches(const struct agent_selector_term *terms, size_t n_terms,
                            const struct agent_label *labels, size_t n_labels);

#endif
