/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the app container's service-account token, CA and namespace through the target's
 * root, acting as the target's user. */
#include "report/k8s_target_sa.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/k8s_config.h"
#include "target/creds.h"
#include "target/rootfs.h"
#include "target/target.h"
#include "base/util.h"

/* Opens K8S_SA_DIR_DEFAULT/name under the target's root. The kubelet makes these files links
 * into a ..data directory, so links are followed, but only inside the root (rootfs), and the type
 * is checked on the file reached: a FIFO or tty planted there would block our read forever. A
 * file above `max` bytes is refused: the client reads it whole. */
static int open_file(int rootfd, const char *name, off_t max, struct cla_error *e)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", K8S_SA_DIR_DEFAULT, name);
    _cleanup_close_ int fd = rootfs_open_contained(rootfd, path, ROOTFS_REG, O_RDONLY, e);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s' in the target", path);
    if (!S_ISREG(st.st_mode))
        return err_set(e, -EINVAL, "'%s' in the target is not a regular file", path);
    if (st.st_size > max)
        return err_set(e, -EFBIG, "'%s' in the target has %lld bytes, above the cap of %lld", path,
                       (long long)st.st_size, (long long)max);
    return util_take_fd(&fd);
}

/* The namespace file is optional (an older kubelet, a projected volume without it): any
 * failure leaves ret empty and the caller takes the namespace from elsewhere. */
static void read_namespace(int rootfd, char ret[static K8S_LABEL_MAX + 1])
{
    _cleanup_close_ int nfd = open_file(rootfd, "namespace", K8S_NAMESPACE_FILE_MAX, NULL);
    char *buf;
    size_t len;
    ret[0] = '\0';
    if (nfd < 0 || util_read_all(nfd, K8S_NAMESPACE_FILE_MAX, &buf, &len) < 0)
        return;
    /* Trimmed, and kept only when it is a plausible name: it came from the target. */
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    bool ok = len > 0 && len <= K8S_LABEL_MAX;
    for (size_t i = 0; ok && i < len; i++)
        ok = (buf[i] >= 'a' && buf[i] <= 'z') || (buf[i] >= '0' && buf[i] <= '9') || buf[i] == '-';
    if (ok)
        memcpy(ret, buf, len + 1);
    free(buf);
}

/* The three files, opened while acting as the target's user. */
static int open_all(const struct target *t, struct k8s_target_sa *ret, struct cla_error *e)
{
    /* Our own root fd of the pinned process: the caller's target stays as it was. "root" is a
     * magic link of our trusted procfs; what lies below it is reached with rootfs only. */
    _cleanup_close_ int rootfd = openat(t->procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return err_setsys(e, errno == ENOENT ? -ESRCH : -errno, "open /proc/%d/root", (int)t->pid);
    struct k8s_target_sa sa = {.token_fd = -1, .ca_fd = -1};
    int r;
    if ((r = sa.token_fd = open_file(rootfd, "token", K8S_TOKEN_MAX + 64, e)) < 0 ||
        (r = sa.ca_fd = open_file(rootfd, "ca.crt", K8S_CA_FILE_MAX, e)) < 0) {
        k8s_target_sa_close(&sa);
        return r;
    }
    read_namespace(rootfd, sa.namespace_);
    /* The client reads these paths later: /proc/self/fd/N reopens our fd's file, never a name
     * the target could swap in between. */
    snprintf(sa.token_path, sizeof(sa.token_path), "/proc/self/fd/%d", sa.token_fd);
    snprintf(sa.ca_path, sizeof(sa.ca_path), "/proc/self/fd/%d", sa.ca_fd);
    *ret = sa;
    return 0;
}

int k8s_target_sa_open(const struct target *t, struct k8s_target_sa *ret, struct cla_error *e)
{
    /* Checked first: the pinned /proc dirfd never leads to another process, but once ours has
     * exited its root is gone, and the error would blame a missing token instead of the exit. */
    int r = target_check_alive(t, e);
    if (r < 0)
        return err_prefix(e, "the target's service account");
    /* As every access to a target's files: as its user, with its groups and only its own
     * filesystem capabilities (creds.h). With ours, a token linked to a file only root may read
     * would be read and sent as the bearer token, to a server trusted through the target's own
     * ca.crt. */
    struct creds_target ct;
    struct creds_saved cs = {0};
    creds_target_of(t->procfd, &t->status, &ct);
    if ((r = creds_check(&ct, e)) == 0 && (r = creds_become(&ct, &cs, e)) == 0) {
        r = open_all(t, ret, e);
        creds_restore(&cs);
    }
    if (r < 0)
        return err_prefix(e, "the target's service account");
    return 0;
}

void k8s_target_sa_close(struct k8s_target_sa *sa)
{
    util_closep(&sa->token_fd);
    util_closep(&sa->ca_fd);
}
