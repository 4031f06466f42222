/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which container a process is in, from the text of /proc/<pid>/cgroup, and which container the
 * kubelet means by a pod status's containerID: the two the agent matches exactly. Pure: no I/O.
 */
#ifndef CLRATTACH_CGROUP_ID_H
#define CLRATTACH_CGROUP_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"

/* Every container runtime Kubernetes names in a containerID writes a 64-hex-digit ID (dockershim,
 * containerd's CRI plugin and CRI-O alike); nothing shorter or in another case is accepted. */
#define CGROUP_ID_LEN 64

enum cgroup_runtime {
    CGROUP_RT_UNKNOWN = 0, /* a bare ID directory (the cgroupfs driver) says no runtime */
    CGROUP_RT_DOCKER,
    CGROUP_RT_CONTAINERD,
    CGROUP_RT_CRIO,
};

/* What a process's cgroup text names: the innermost container ID of its paths, the runtime when
 * the name says it (`docker-`, `cri-containerd-`, `crio-`), and the pod UID when a kubepods
 * component carries one (underscores of the systemd driver turned back into dashes). */
struct cgroup_container {
    char id[CGROUP_ID_LEN + 1];
    enum cgroup_runtime runtime;
    char pod_uid[K8S_UID_MAX + 1]; /* "" when no component names a pod */
};

/* Parses /proc/<pid>/cgroup (v1 lines "N:controllers:path", v2 "0::path", paths relative to
 * the reader's cgroup namespace as "/../..." included). Returns 1 with *ret filled when a line
 * names a container, 0 when none does (a host process, conmon, a path hidden by a cgroup
 * namespace), -E2BIG above PROC_CGROUP_MAX, -EPROTO for a malformed line or for lines naming
 * different containers or pods. *ret is written only on 1. */
int cgroup_id_parse(const char *buf, size_t len, struct cgroup_container *ret, struct cla_error *e);

/* A pod status's containerID, "docker://<id>", "containerd://<id>" or "cri-o://<id>". */
struct cgroup_status_id {
    enum cgroup_runtime runtime;
    char id[CGROUP_ID_LEN + 1];
};

/* Parses a containerID of `len` bytes. Returns 0, or -EPROTO for another scheme or an ID that
 * is not 64 lowercase hex digits. */
int cgroup_id_parse_status(const char *s, size_t len, struct cgroup_status_id *ret,
                           struct cla_error *e);

/* Does the process whose cgroup text is `buf` run in the container `want`, and, when `pod_uid`
 * is not NULL and the text names a pod, in that pod? Exact comparison of whole IDs; a runtime
 * the path names must be want's. Returns 1, 0, or the negative code of cgroup_id_parse(). */
int cgroup_id_matches(const char *buf, size_t len, const struct cgroup_status_id *want,
                      const char *pod_uid, struct cla_error *e);

/* "docker", "containerd", "cri-o" or "unknown". */
const char *cgroup_runtime_name(enum cgroup_runtime rt);

#endif
