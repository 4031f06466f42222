/* SPDX-License-Identifier: Apache-2.0 */
#include "k8s_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

extern char **environ;

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

/* Opens a file we trust by path (kubelet's projected volume is a symlink farm, so symlinks
 * are followed) and checks it is a regular file. */
static int open_regular(const char *path, struct cla_error *e)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return err_setsys(e, -errno, "k8s: open '%s'", path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "k8s: fstat '%s'", path);
    if (!S_ISREG(st.st_mode))
        return err_set(e, -EINVAL, "k8s: '%s' is not a regular file", path);
    return util_take_fd(&fd);
}

int k8s_token_parse(const char *buf, size_t len, char *ret, struct cla_error *e)
{
    /* client-go trims with strings.TrimSpace: the projected file has no newline, but tokens
     * written by hand or by other tools usually do. */
    size_t a = 0, b = len;
    while (a < b && is_space(buf[a]))
        a++;
    while (b > a && is_space(buf[b - 1]))
        b--;
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

int k8s_token_refresh(const struct k8s_config *cfg, struct k8s_token *tok, bool force,
                      int64_t now_ms, struct cla_error *e)
{
    if (!force && tok->read_at_ms != 0 && now_ms - tok->read_at_ms < K8S_TOKEN_REREAD_MS)
        return 0;
    /* Re-opened every time: kubelet swaps the ..data symlink on rotation, and an fd kept
     * open would go on reading the revoked token. */
    _cleanup_close_ int fd = open_regular(cfg->token_path, e);
    if (fd < 0)
        return fd;
    char *buf = NULL;
    size_t len = 0;
    int r = util_read_all(fd, K8S_TOKEN_MAX + 64, &buf, &len);
    if (r < 0)
        return err_setsys(e, r, "k8s: read token '%s'", cfg->token_path);
    char fresh[K8S_TOKEN_MAX + 1];
    r = k8s_token_parse(buf, len, fresh, e);
    explicit_bzero(buf, len);
    free(buf);
    if (r < 0) {
        explicit_bzero(fresh, sizeof(fresh));
        return err_prefix(e, "'%s'", cfg->token_path);
    }
    memcpy(tok->value, fresh, strlen(fresh) + 1);
    explicit_bzero(fresh, sizeof(fresh));
    tok->read_at_ms = now_ms;
    return 1;
}

/* <sa_dir>/namespace, trimmed. Returns 1 when found, 0 when the file is absent. */
static int read_namespace_file(const char *sa_dir, char *ret, struct cla_error *e)
{
    char path[K8S_FILE_PATH_MAX + 1];
    int n = snprintf(path, sizeof(path), "%s/namespace", sa_dir);
    if (n < 0 || (size_t)n >= sizeof(path))
        return err_set(e, -ENAMETOOLONG, "k8s: service-account dir path too long");
    _cleanup_close_ int fd = open_regular(path, e);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    int r = util_read_all(fd, K8S_NAMESPACE_FILE_MAX, &buf, &len);
    if (r < 0)
        return err_setsys(e, r, "k8s: read '%s'", path);
    size_t a = 0, b = len;
    while (a < b && is_space(buf[a]))
        a++;
    while (b > a && is_space(buf[b - 1]))
        b--;
    if (b - a > K8S_LABEL_MAX)
        return err_set(e, -EINVAL, "k8s: '%s' holds no namespace name", path);
    memcpy(ret, buf + a, b - a);
    ret[b - a] = '\0';
    /* The namespace goes into URL paths: anything but a DNS label is refused here, not
     * escaped later. */
    if (!k8s_is_dns1123_label(ret))
        return err_set(e, -EINVAL, "k8s: '%s' holds no namespace name", path);
    return 1;
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

int k8s_config_load_env(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *ret,
                        struct cla_error *e)
{
    static const struct k8s_config_opts none;
    struct k8s_config c;
    int r;
    if (!o)
        o = &none;
    memset(&c, 0, sizeof(c));
    const char *sa_dir = given(o->sa_dir) ? o->sa_dir : K8S_SA_DIR_DEFAULT;

    if (given(o->api_url)) {
        if ((r = check_api_url(o->api_url, c.api_url, sizeof(c.api_url), e)) < 0)
            return r;
    } else {
        /* Both must be set, as in client-go; kubelet injects them even with
         * enableServiceLinks: false, so their absence means "not in a cluster". */
        const char *host = env_get(envp, "KUBERNETES_SERVICE_HOST");
        const char *port = env_get(envp, "KUBERNETES_SERVICE_PORT");
        if (!host || !port) {
            err_set(e, -ENOENT, "k8s: not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
            return err_hint(e, "pass --k8s-api-url, or run inside a pod");
        }
        if ((r = k8s_join_host_port(host, port, c.api_url, sizeof(c.api_url), e)) < 0)
            return r;
    }

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
    } else if ((r = read_namespace_file(sa_dir, c.namespace_, e)) < 0) {
        return r;
    } else if (r == 0) {
        memcpy(c.namespace_, "default", sizeof("default"));
    }

    /* Fail here rather than on the first request: an ephemeral container without the
     * service-account volume is the common case, and its hint differs. */
    struct k8s_token *tok = calloc(1, sizeof(*tok));
    if (!tok)
        return err_set(e, -ENOMEM, "k8s: out of memory");
    r = k8s_token_refresh(&c, tok, true, util_now_ms(), e);
    explicit_bzero(tok, sizeof(*tok));
    free(tok);
    if (r < 0)
        return err_hint(e, "ephemeral containers get no service-account volume: mount the "
                           "pod's kube-api-access volume via kubectl debug --custom");
    _cleanup_close_ int cafd = open_regular(c.ca_path, e);
    if (cafd < 0)
        return cafd;

    c.connect_timeout_ms = K8S_CONNECT_TIMEOUT_MS_DEFAULT;
    c.total_timeout_ms = K8S_TOTAL_TIMEOUT_MS_DEFAULT;
    c.max_attempts = K8S_MAX_ATTEMPTS_DEFAULT;
    c.retry_budget_ms = K8S_RETRY_BUDGET_MS_DEFAULT;
    *ret = c;
    return 0;
}

int k8s_config_load(const struct k8s_config_opts *o, struct k8s_config *ret, struct cla_error *e)
{
    /* Under secure execution (setuid, file capabilities) the environment belongs to whoever
     * started us: a KUBERNETES_SERVICE_HOST of their choosing would receive the token. Only
     * explicit options count then. */
    static char *const empty_env[] = {NULL};
    return k8s_config_load_env(o, getauxval(AT_SECURE) ? empty_env : environ, ret, e);
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
