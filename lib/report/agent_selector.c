/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespace label selectors of the agent's profiles, parsed with a cursor over an explicit
 * length and matched exactly: the subset of Kubernetes' selector grammar an admin needs.
 */
#include "report/agent_selector.h"

#include <errno.h>
#include <string.h>

struct cursor {
    const char *p;
    size_t n, i;
};

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void skip_space(struct cursor *c)
{
    while (c->i < c->n && (c->p[c->i] == ' ' || c->p[c->i] == '\t'))
        c->i++;
}

/* A label name or value (Kubernetes' IsValidLabelValue): at most 63 characters of alphanumerics,
 * '-', '_' and '.', beginning and ending with an alphanumeric; a value may be empty. */
static bool label_text_ok(const char *s, size_t n, bool may_be_empty)
{
    if (n == 0)
        return may_be_empty;
    if (n > K8S_LABEL_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* A key's prefix, a DNS-1123 subdomain: lowercase labels joined by '.'. */
static bool prefix_ok(const char *s, size_t n)
{
    if (n == 0 || n > K8S_NAME_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            bool ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
            if (!ok)
                return false;
            continue;
        }
        if (i == start || s[start] == '-' || s[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

static bool key_ok(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return label_text_ok(s, n, false);
    size_t pl = (size_t)(slash - s);
    return prefix_ok(s, pl) && label_text_ok(slash + 1, n - pl - 1, false);
}

/* The token at the cursor up to a space or one of `stops`. */
static size_t token(struct cursor *c, const char *stops)
{
    size_t start = c->i;
    while (c->i < c->n && c->p[c->i] != ' ' && c->p[c->i] != '\t' && !strchr(stops, c->p[c->i]))
        c->i++;
    return c->i - start;
}

static int take_value(struct cursor *c, const char *stops, struct agent_selector_term *t,
                      struct cla_error *e)
{
    skip_space(c);
    const char *v = c->p + c->i;
    size_t vn = token(c, stops);
    if (!label_text_ok(v, vn, true))
        return err_set(e, -EINVAL, "selector: a value of '%s' is not a label value", t->key);
    if (t->n_values == AGENT_SELECTOR_VALUES_MAX)
        return err_set(e, -E2BIG, "selector: more than %d values for '%s'",
                       AGENT_SELECTOR_VALUES_MAX, t->key);
    memcpy(t->values[t->n_values], v, vn);
    t->values[t->n_values++][vn] = '\0';
    skip_space(c);
    return 0;
}

/* `(v1, v2, ...)` after `in`. */
static int take_set(struct cursor *c, struct agent_selector_term *t, struct cla_error *e)
{
    skip_space(c);
    if (c->i >= c->n || c->p[c->i] != '(')
        return err_set(e, -EINVAL, "selector: 'in' for '%s' is not followed by '('", t->key);
    c->i++;
    for (;;) {
        int r = take_value(c, ",)", t, e);
        if (r < 0)
            return r;
        if (c->i >= c->n)
            return err_set(e, -EINVAL, "selector: the set of '%s' is not closed", t->key);
        if (c->p[c->i++] == ')')
            return 0;
    }
}

static int take_term(struct cursor *c, struct agent_selector_term *t, struct cla_error *e)
{
    memset(t, 0, sizeof(*t));
    skip_space(c);
    const char *k = c->p + c->i;
    size_t kn = token(c, "=!,()");
    if (!key_ok(k, kn))
        return err_set(e, -EINVAL, "selector: term %.*s... does not start with a label key",
                       (int)(kn > 40 ? 40 : kn), k);
    memcpy(t->key, k, kn);
    t->key[kn] = '\0';
    skip_space(c);
    if (c->i < c->n && c->p[c->i] == '=') {
        c->i += c->i + 1 < c->n && c->p[c->i + 1] == '=' ? 2 : 1;
        return take_value(c, ",=!()", t, e);
    }
    const char *op = c->p + c->i;
    size_t on = token(c, "=!,()");
    if (on == 2 && memcmp(op, "in", 2) == 0)
        return take_set(c, t, e);
    return err_set(e, -EINVAL,
                   "selector: '%s' is followed by neither '=' nor 'in (...)' (the only forms "
                   "a profile takes)",
                   t->key);
}

int agent_selector_parse(const char *s, size_t len, struct agent_selector_term *ret_terms,
                         struct cla_error *e)
{
    struct cursor c = {.p = s, .n = len};
    if (memchr(s, '\0', len))
        return err_set(e, -EINVAL, "selector: NUL byte");
    int n = 0;
    for (;;) {
        if (n == AGENT_SELECTOR_TERMS_MAX)
            return err_set(e, -E2BIG, "selector: more than %d terms", AGENT_SELECTOR_TERMS_MAX);
        int r = take_term(&c, &ret_terms[n], e);
        if (r < 0)
            return r;
        n++;
        if (c.i == c.n)
            return n;
        if (c.p[c.i] != ',')
            return err_set(e, -EINVAL, "selector: unexpected '%c' after the term for '%s'",
                           c.p[c.i] >= 0x20 && c.p[c.i] < 0x7f ? c.p[c.i] : '?',
                           ret_terms[n - 1].key);
        c.i++;
    }
}

static bool term_matches(const struct agent_selector_term *t, const struct agent_label *labels,
                         size_t n_labels)
{
    for (size_t i = 0; i < n_labels; i++) {
        if (strcmp(labels[i].key, t->key) != 0)
            continue;
        for (size_t v = 0; v < t->n_values; v++)
            if (strcmp(labels[i].value, t->values[v]) == 0)
                return true;
        return false;
    }
    return false;
}

bool agent_selector_matches(const struct agent_selector_term *terms, size_t n_terms,
                            const struct agent_label *labels, size_t n_labels)
{
    if (n_terms == 0)
        return false;
    for (size_t i = 0; i < n_terms; i++)
        if (!term_matches(&terms[i], labels, n_labels))
            return false;
    return true;
}
