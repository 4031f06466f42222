/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file side of the cluster configuration: the service-account token, CA and namespace
 * files, read by path. What they hold and what the environment says are parsed in
 * k8s_config.c, on buffers.
 */
#include "report/k8s_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

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
    if (k8s_namespace_parse(buf, len, ret, NULL) < 0)
        return err_set(e, -EINVAL, "k8s: '%s' holds no namespace name", path);
    return 1;
}

int k8s_config_load_env(const struct k8s_config_opts *o, char *const *envp, struct k8s_config *ret,
                        struct cla_error *e)
{
    struct k8s_config c;
    int r = k8s_config_parse_env(o, envp, &c, e);
    if (r < 0)
        return r;
    const char *sa_dir = o && o->sa_dir && o->sa_dir[0] ? o->sa_dir : K8S_SA_DIR_DEFAULT;
    if (!c.namespace_[0]) {
        if ((r = read_namespace_file(sa_dir, c.namespace_, e)) < 0)
            return r;
        if (r == 0)
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
