/* SPDX-License-Identifier: Apache-2.0 */
#include "report/k8s_target_sa.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/k8s_config.h"
#include "target/rootfs.h"
#include "target/target.h"
#include "base/util.h"

/* Opens K8S_SA_DIR_DEFAULT/name under the target's root. The kubelet makes these files links
 * into a ..data directory, so links are followed, but only inside the root (rootfs), and the type
 * is checked on the file reached: a FIFO or tty planted there would block our read forever. */
static int open_file(int rootfd, const char *name, struct cla_error *e)
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
    return util_take_fd(&fd);
}

int k8s_target_sa_open(const struct target *t, struct k8s_target_sa *ret, struct cla_error *e)
{
    /* Checked first: the pinned /proc dirfd never leads to another process, but once ours has
     * exited its root is gone, and the error would blame a missing token instead of the exit. */
    int r = target_check_alive(t, e);
    if (r < 0)
        return err_prefix(e, "the target's service account");
    /* Our own root fd of the pinned process: the caller's target stays as it was. "root" is a
     * magic link of our trusted procfs; what lies below it is reached with rootfs only. */
    _cleanup_close_ int rootfd = openat(t->procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return err_setsys(e, errno == ENOENT ? -ESRCH : -errno,
                          "the target's service account: open /proc/%d/root", (int)t->pid);
    struct k8s_target_sa sa = {.token_fd = -1, .ca_fd = -1};
    if ((sa.token_fd = open_file(rootfd, "token", e)) < 0) {
        r = sa.token_fd;
        goto out;
    }
    if ((sa.ca_fd = open_file(rootfd, "ca.crt", e)) < 0) {
        r = sa.ca_fd;
        goto out;
    }
    /* The namespace file is optional (an older kubelet, a projected volume without it): any
     * failure leaves namespace_ empty and the caller takes the namespace from elsewhere. */
    {
        _cleanup_close_ int nfd = open_file(rootfd, "namespace", NULL);
        char *buf;
        size_t len;
        if (nfd >= 0 && util_read_all(nfd, K8S_LABEL_MAX + 8, &buf, &len) == 0) {
            /* Trimmed, and kept only when it is a plausible name: it came from the target. */
            while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                buf[--len] = '\0';
            bool ok = len > 0 && len <= K8S_LABEL_MAX;
            for (size_t i = 0; ok && i < len; i++)
                ok = (buf[i] >= 'a' && buf[i] <= 'z') || (buf[i] >= '0' && buf[i] <= '9') ||
                     buf[i] == '-';
            if (ok)
                memcpy(sa.namespace_, buf, len + 1);
            free(buf);
        }
    }
    /* The client reads these paths later: /proc/self/fd/N reopens our fd's file, never a name
     * the target could swap in between. */
    snprintf(sa.token_path, sizeof(sa.token_path), "/proc/self/fd/%d", sa.token_fd);
    snprintf(sa.ca_path, sizeof(sa.ca_path), "/proc/self/fd/%d", sa.ca_fd);
    *ret = sa;
    sa.token_fd = sa.ca_fd = -1;
    r = 0;
out:
    if (r < 0) {
        err_prefix(e, "the target's service account");
        util_closep(&sa.token_fd);
        util_closep(&sa.ca_fd);
    }
    return r;
}

void k8s_target_sa_close(struct k8s_target_sa *sa)
{
    util_closep(&sa->token_fd);
    util_closep(&sa->ca_fd);
}
