/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-cluster configuration, as client-go's rest.InClusterConfig() finds it: the API URL from
 * KUBERNETES_SERVICE_HOST/PORT, the service-account token and CA by path, the namespace, and
 * the pod identity from downward-API env vars. The token is re-read by path, never through a
 * kept fd, because kubelet rotates it with a symlink swap.
 */
#ifndef CLRATTACH_K8S_CONFIG_H
#define CLRATTACH_K8S_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"
#include "report/k8s_event.h"

#define K8S_SA_DIR_DEFAULT  "/var/run/secrets/kubernetes.io/serviceaccount"
#define K8S_TOKEN_REREAD_MS 60000 /* client-go's cached file token source: 1 minute */

struct k8s_config {
    char api_url[K8S_URL_MAX + 1];          /* https://host:port (IPv6 host in brackets) */
    char token_path[K8S_FILE_PATH_MAX + 1]; /* re-read by path, every 60 s and after a 401 */
    char ca_path[K8S_FILE_PATH_MAX + 1];
    char namespace_[K8S_LABEL_MAX + 1];        /* namespace of the pod we report about */
    long connect_timeout_ms, total_timeout_ms; /* per request */
    int max_attempts;                          /* per report, over all requests */
    long retry_budget_ms;                      /* wall time for all attempts and sleeps */
};

struct k8s_config_opts { /* from flags; NULL/empty = auto from env and the SA dir */
    const char *api_url, *token_file, *ca_file, *namespace_, *sa_dir;
};

/* Fills *ret from opts, then the env (`envp`, NULL-terminated "K=V" strings), then the SA
 * dir: api_url from KUBERNETES_SERVICE_HOST/PORT, namespace from CLRATTACH_POD_NAMESPACE,
 * POD_NAMESPACE, <sa_dir>/namespace, else "default". Checks the token is readable and not
 * empty and the CA is a regular file. -ENOENT when not in a cluster (no URL), -EINVAL for a
 * malformed value, file errors as -errno. */
int k8s_config_load_env(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *ret,
                        struct cla_error *e);

/* The part of k8s_config_load_env() that reads no file: api_url, the token and CA paths, the
 * namespace when the options or the env name one (else namespace_ stays empty) and the
 * defaults. Same errors, less those of files. */
int k8s_config_parse_env(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *ret,
                         struct cla_error *e);

/* A namespace file's bytes, trimmed of ASCII whitespace; what is left must be a DNS-1123 label.
 * Writes it NUL-terminated into ret (K8S_LABEL_MAX + 1). -EINVAL otherwise. */
int k8s_namespace_parse(const char *buf, size_t len, char *ret, struct cla_error *e);

/* k8s_config_load_env() on the process environment. */
int k8s_config_load(const struct k8s_config_opts *o, struct k8s_config *ret, struct cla_error *e);

/* Builds "https://<host>:<port>" into buf (K8S_URL_MAX + 1), bracketing an IPv6 host the way
 * Go's net.JoinHostPort does. -EINVAL for a host with URL syntax in it or a bad port. */
int k8s_join_host_port(const char *host, const char *port, char *buf, size_t size,
                       struct cla_error *e);

/* Pod identity from downward-API env: CLRATTACH_POD_NAME / _NAMESPACE / _UID and
 * CLRATTACH_CONTAINER_NAME, else POD_NAME / POD_NAMESPACE / POD_UID, and HOSTNAME for the name
 * as a last resort (it is cut to 63 bytes by kubelet, so it may be wrong for long names).
 * Empty fields stay empty. -ENOENT with no name at all, -EINVAL for a malformed value. */
int k8s_pod_ref_from_env(char *const *envp, struct k8s_pod_ref *ret, struct cla_error *e);

/* Trims ASCII whitespace around a token file's bytes and checks what is left is a non-empty
 * run of visible ASCII (it goes into an HTTP header: no CR/LF). Writes it NUL-terminated into
 * ret (K8S_TOKEN_MAX + 1). -EINVAL when empty or malformed. */
int k8s_token_parse(const char *buf, size_t len, char *ret, struct cla_error *e);

/* A token read by path, with the time it was read. */
struct k8s_token {
    char value[K8S_TOKEN_MAX + 1];
    int64_t read_at_ms; /* monotonic; 0 = never read */
};

/* Returns 1 after (re-)reading the token from cfg->token_path, when `force` (after a 401),
 * never read, or older than K8S_TOKEN_REREAD_MS at `now_ms`; 0 when the cached value is
 * still good. On failure the old value is kept and -errno / -EINVAL returned. */
int k8s_token_refresh(const struct k8s_config *cfg, struct k8s_token *tok, bool force,
                      int64_t now_ms, struct cla_error *e);

#endif
