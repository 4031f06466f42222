/* SPDX-License-Identifier: Apache-2.0 */
/* The in-cluster configuration parsed on buffers: the API address from the environment and the
 * options, the token and namespace files' contents, the pod from the downward API. */
#include "report/k8s_config.h"
/*
 * The cluster configuration's parsers, on strings and buffers only: the environment, option
 * values, and the bytes of the token and namespace files (read in k8s_config_load.c).
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

/* Defaults close to what the reference suggests: reporting is best-effort and must never hold
 * up the attach result for long. */
#define K8S_CONNECT_TIMEOUT_MS_DEFAULT 5000
#define K8S_TOTAL_TIMEOUT_MS_DEFAULT   10000
#define K8S_MAX_ATTEMPTS_DEFAULT       5
#define K8S_RETRY_BUDGET_MS_DEFAULT    30000

/* Value of `key` in envp, or NULL when unset or empty (kubelet sets empty values for
 * downward-API fields it cannot resolve). envp is a parameter so tests need no setenv(). */
static const char *env_get(char *const *envp, const char *key)
{
    size_t klen = strlen(key);
    for (char *const *p = envp; p && *p; p++)
        if (strncmp(*p, key, klen) == 0 && (*p)[klen] == '=')
            return (*p)[klen + 1] ? *p + klen + 1 : NULL;
    return NULL;
}

static const char *first_env(char *const *envp, const char *a, const char *b)
{
    const char *v = env_get(envp, a);
    return v ? v : (b ? env_get(envp, b) : NULL);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int copy_checked(char *dst, size_t size, const char *src, const char *what,
                        struct cla_error *e)
{
    size_t len = strlen(src);
    if (len >= size)
        return err_set(e, -ENAMETOOLONG, "k8s: %s is longer than %zu bytes", what, size - 1);
    memcpy(dst, src, len + 1);
    return 0;
}

int k8s_join_host_port(const char *host, const char *port, char *buf, size_t size,
                       struct cla_error *e)
{
    uint64_t p;
    if (!port || util_parse_u64(port, strlen(port), 65535, &p) < 0 || p == 0)
        return err_set(e, -EINVAL, "k8s: KUBERNETES_SERVICE_PORT '%.16s' is not a port",
                       port ? port : "");
    size_t hlen = host ? strlen(host) : 0;
    if (hlen == 0 || hlen > K8S_NAME_MAX)
        return err_set(e, -EINVAL, "k8s: KUBERNETES_SERVICE_HOST is empty or too long");
    /* Only what an IP literal or a DNS name can hold: a '/', '@' or '#' would let the value
     * redirect the bearer token to another host or path. */
    for (size_t i = 0; i < hlen; i++) {
        char c = host[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == ':';
        if (!ok)
            return err_set(e, -EINVAL, "k8s: KUBERNETES_SERVICE_HOST has a '%c'",
                           c > 0x20 && c < 0x7f ? c : '?');
    }
    /* Go's net.JoinHostPort brackets any host with a ':'. Zone ids ("fe80::1%eth0") are
     * refused above: a service IP never has one, and '%' would need URL escaping. */
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(buf, size, v6 ? "https://[%s]:%u" : "https://%s:%u", host, (unsigned)p);
    if (n < 0 || (size_t)n >= size)
        return err_set(e, -ENAMETOOLONG, "k8s: API URL too long");
    return 0;
}

/* A URL given by flag: https only, an authority and nothing after it (paths are ours to add),
 * no userinfo (curl would send it as Basic auth). One trailing '/' is dropped. */
static int check_api_url(const char *url, char *dst, size_t size, struct cla_error *e)
{
    static const char scheme[] = "https://";
    size_t len = strlen(url);
    if (len > 0 && url[len - 1] == '/')
        len--;
    if (len <= sizeof(scheme) - 1 || strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return err_set(e, -EINVAL, "k8s: API URL must start with https:// and name a host");
    if (len >= size)
        return err_set(e, -ENAMETOOLONG, "k8s: API URL longer than %zu bytes", size - 1);
    for (size_t i = sizeof(scheme) - 1; i < len; i++) {
        char c = url[i];
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == '@' || c == '?' || c == '#' || c == '\\' ||
            c == '%')
            return err_set(e, -EINVAL, "k8s: API URL may hold only https://host[:port]");
    }
    memcpy(dst, url, len);
    dst[len] = '\0';
    return 0;
}

/* client-go trims the namespace file with strings.TrimSpace, as it does the token. */
static void trim_space(const char *buf, size_t len, size_t *ret_a, size_t *ret_b)
{
    size_t a = 0, b = len;
    while (a < b && is_space(buf[a]))
        a++;
    while (b > a && is_space(buf[b - 1]))
        b--;
    *ret_a = a;
    *ret_b = b;
}

int k8s_namespace_parse(const char *buf, size_t len, char *ret, struct cla_error *e)
{
    size_t a, b;
    trim_space(buf, len, &a, &b);
    if (b - a > K8S_LABEL_MAX)
        return err_set(e, -EINVAL, "k8s: no namespace name");
    memcpy(ret, buf + a, b - a);
    ret[b - a] = '\0';
    /* The namespace goes into URL paths: anything but a DNS label is refused here, not
     * escaped later. */
    if (!k8s_is_dns1123_label(ret))
        return err_set(e, -EINVAL, "k8s: no namespace name");
    return 0;
}

int k8s_token_parse(const char *buf, size_t len, char *ret, struct cla_error *e)
{
    /* client-go trims with strings.TrimSpace: the projected file has no newline, but tokens
     * written by hand or by other tools usually do. */
    size_t a, b;
    trim_space(buf, len, &a, &b);
    if (a == b)
        return err_set(e, -EINVAL, "k8s: the token file is empty");
    if (b - a > K8S_TOKEN_MAX)
        return err_set(e, -EINVAL, "k8s: token longer than %d bytes", K8S_TOKEN_MAX);
    /* The token goes into an Authorization header: a CR/LF or NUL here would be header
     * injection, and no JWT or legacy token holds anything but visible ASCII. */
    for (size_t i = a; i < b; i++)
        if ((unsigned char)buf[i] <= 0x20 || (unsigned char)buf[i] >= 0x7f)
            return err_set(e, -EINVAL, "k8s: the token holds a byte that is not visible ASCII");
    memcpy(ret, buf + a, b - a);
    ret[b - a] = '\0';
    return 0;
}

static int join_path(char *dst, const char *dir, const char *name, struct cla_error *e)
{
    int n = snprintf(dst, K8S_FILE_PATH_MAX + 1, "%s/%s", dir, name);
    if (n < 0 || n > K8S_FILE_PATH_MAX)
        return err_set(e, -ENAMETOOLONG, "k8s: path '%s/%s' too long", dir, name);
    return 0;
}

static bool given(const char *s)
{
    return s && s[0];
}

/* The API URL: the option's, checked, else the one the kubelet's service env vars make. */
static int parse_api_url(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *c,
                         struct cla_error *e)
{
    if (given(o->api_url))
        return check_api_url(o->api_url, c->api_url, sizeof(c->api_url), e);
    /* Both must be set, as in client-go; kubelet injects them even with
     * enableServiceLinks: false, so their absence means "not in a cluster". */
    const char *host = env_get(envp, "KUBERNETES_SERVICE_HOST");
    const char *port = env_get(envp, "KUBERNETES_SERVICE_PORT");
    if (!host || !port) {
        err_set(e, -ENOENT, "k8s: not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
        return err_hint(e, "pass --k8s-api-url, or run inside a pod");
    }
    return k8s_join_host_port(host, port, c->api_url, sizeof(c->api_url), e);
}

int k8s_config_parse_env(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *ret,
                         struct cla_error *e)
{
    static const struct k8s_config_opts none;
    struct k8s_config c;
    int r;
    if (!o)
        o = &none;
    memset(&c, 0, sizeof(c));
    const char *sa_dir = given(o->sa_dir) ? o->sa_dir : K8S_SA_DIR_DEFAULT;

    if ((r = parse_api_url(o, envp, &c, e)) < 0)
        return r;

    if ((r = given(o->token_file)
                 ? copy_checked(c.token_path, sizeof(c.token_path), o->token_file, "token path", e)
                 : join_path(c.token_path, sa_dir, "token", e)) < 0 ||
        (r = given(o->ca_file)
                 ? copy_checked(c.ca_path, sizeof(c.ca_path), o->ca_file, "CA path", e)
                 : join_path(c.ca_path, sa_dir, "ca.crt", e)) < 0)
        return r;

    const char *ns = given(o->namespace_)
                         ? o->namespace_
                         : first_env(envp, "CLRATTACH_POD_NAMESPACE", "POD_NAMESPACE");
    if (ns) {
        if (!k8s_is_dns1123_label(ns))
            return err_set(e, -EINVAL, "k8s: namespace '%.63s' is not a DNS-1123 label", ns);
        memcpy(c.namespace_, ns, strlen(ns) + 1);
    }
    c.connect_timeout_ms = K8S_CONNECT_TIMEOUT_MS_DEFAULT;
    c.total_timeout_ms = K8S_TOTAL_TIMEOUT_MS_DEFAULT;
    c.max_attempts = K8S_MAX_ATTEMPTS_DEFAULT;
    c.retry_budget_ms = K8S_RETRY_BUDGET_MS_DEFAULT;
    *ret = c;
    return 0;
}

static int set_ref_field(char *dst, size_t size, const char *val, bool (*valid)(const char *),
                         const char *what, struct cla_error *e)
{
    if (!val)
        return 0;
    if (strlen(val) >= size || (valid && !valid(val)))
        return err_set(e, -EINVAL, "k8s: %s '%.64s' is malformed", what, val);
    memcpy(dst, val, strlen(val) + 1);
    return 0;
}

static bool uid_ok(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-'))
            return false;
    return true;
}

int k8s_pod_ref_from_env(char *const *envp, struct k8s_pod_ref *ret, struct cla_error *e)
{
    struct k8s_pod_ref p;
    int r;
    memset(&p, 0, sizeof(p));
    const char *name = first_env(envp, "CLRATTACH_POD_NAME", "POD_NAME");
    if (!name)
        name = env_get(envp, "HOSTNAME");
    if (!name) {
        err_set(e, -ENOENT, "k8s: pod name unknown: CLRATTACH_POD_NAME, POD_NAME, HOSTNAME unset");
        return err_hint(e, "set CLRATTACH_POD_NAME from the downward API (metadata.name)");
    }
    if ((r = set_ref_field(p.name, sizeof(p.name), name, k8s_is_dns1123_subdomain, "pod name", e)) <
            0 ||
        (r = set_ref_field(p.namespace_, sizeof(p.namespace_),
                           first_env(envp, "CLRATTACH_POD_NAMESPACE", "POD_NAMESPACE"),
                           k8s_is_dns1123_label, "pod namespace", e)) < 0 ||
        (r = set_ref_field(p.uid, sizeof(p.uid), first_env(envp, "CLRATTACH_POD_UID", "POD_UID"),
                           uid_ok, "pod uid", e)) < 0 ||
        (r = set_ref_field(p.container, sizeof(p.container),
                           env_get(envp, "CLRATTACH_CONTAINER_NAME"), k8s_is_dns1123_label,
                           "container name", e)) < 0)
        return r;
    *ret = p;
    return 0;
}
