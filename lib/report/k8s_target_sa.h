/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reporting from an ephemeral container: `kubectl debug` containers get no service-account
 * mount, but the app container next to us has one. Its token, CA and namespace are opened
 * inside the target's root (the kubelet's ..data links followed, never out of that root), as
 * the target's user (creds.h), and handed to the Kubernetes client as /proc/self/fd/N paths, so
 * nothing is ever re-resolved through a path the target controls, and nothing is read that the
 * target itself could not read.
 */
#ifndef CLRATTACH_K8S_TARGET_SA_H
#define CLRATTACH_K8S_TARGET_SA_H

#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "target/target.h"

struct k8s_target_sa {
    int token_fd;
    int ca_fd;
    char token_path[32]; /* /proc/self/fd/N */
    char ca_path[32];
    char namespace_[K8S_LABEL_MAX + 1]; /* "" when the file is absent */
};

/* Opens the service-account files of the pinned process `t` (the one the attach is about,
 * never the pid looked up again), acting as its user. Returns 0, or -ENOENT/-EACCES with a
 * message naming the file that is missing or that the target's user may not read, -EFBIG for
 * one above its cap, -EPERM when we cannot act as that user, -ESRCH once the process has
 * exited. */
int k8s_target_sa_open(const struct target *t, struct k8s_target_sa *ret, struct cla_error *e);

void k8s_target_sa_close(struct k8s_target_sa *sa);

#endif
