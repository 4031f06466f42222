/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container and pod IDs read from a process's cgroup paths and from the kubelet's containerID,
 * on buffers: the cgroup names are chosen by the runtime, but the path can be anything.
 */
#include "target/cgroup_id.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "base/util.h"

/* One line's or the whole file's findings. */
struct cgroup_found {
    bool have_id;
    char id[CGROUP_ID_LEN + 1];
    enum cgroup_runtime runtime;
    bool have_pod;
    char pod_uid[K8S_UID_MAX + 1];
};

/* Each runtime's scheme in a containerID, and its name for a container's cgroup under the
 * systemd driver, prefix + ID [+ ".scope"] (tests/fixtures/cgroup/README.md cites the sources).
 * "crio-conmon-<id>" is CRI-O's monitor process, not the container, and does not match
 * "crio-" + 64 hex digits. */
static const struct {
    enum cgroup_runtime runtime;
    const char *scheme;
    const char *cgroup_prefix;
} runtimes[] = {
    {CGROUP_RT_DOCKER, "docker://", "docker-"},
    {CGROUP_RT_CONTAINERD, "containerd://", "cri-containerd-"},
    {CGROUP_RT_CRIO, "cri-o://", "crio-"},
};

const char *cgroup_runtime_name(enum cgroup_runtime rt)
{
    switch (rt) {
    case CGROUP_RT_DOCKER: return "docker";
    case CGROUP_RT_CONTAINERD: return "containerd";
    case CGROUP_RT_CRIO: return "cri-o";
    default: return "unknown";
    }
}

static bool is_hex_id(const char *p, size_t n)
{
    if (n != CGROUP_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static bool starts_with(const char *p, size_t n, const char *pre)
{
    size_t pl = strlen(pre);
    return n >= pl && memcmp(p, pre, pl) == 0;
}

static bool ends_with(const char *p, size_t n, const char *suf)
{
    size_t sl = strlen(suf);
    return n >= sl && memcmp(p + n - sl, suf, sl) == 0;
}

/* A container ID component: 64 hex digits (cgroupfs driver), or a runtime's prefixed name. */
static bool component_id(const char *p, size_t n, const char *parent, size_t parent_n,
                         struct cgroup_found *f)
{
    if (is_hex_id(p, n)) {
        memcpy(f->id, p, CGROUP_ID_LEN);
        f->id[CGROUP_ID_LEN] = '\0';
        /* Docker's cgroupfs driver puts containers under /docker. */
        f->runtime = parent_n == 6 && memcmp(parent, "docker", 6) == 0 ? CGROUP_RT_DOCKER
                                                                       : CGROUP_RT_UNKNOWN;
        f->have_id = true;
        return true;
    }
    size_t m = ends_with(p, n, ".scope") ? n - 6 : n;
    for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++) {
        size_t pl = strlen(runtimes[i].cgroup_prefix);
        if (m == pl + CGROUP_ID_LEN && starts_with(p, m, runtimes[i].cgroup_prefix) &&
            is_hex_id(p + pl, CGROUP_ID_LEN)) {
            memcpy(f->id, p + pl, CGROUP_ID_LEN);
            f->id[CGROUP_ID_LEN] = '\0';
            f->runtime = runtimes[i].runtime;
            f->have_id = true;
            return true;
        }
    }
    return false;
}

/* Copies a pod UID of `n` bytes, `sep` ('_' for systemd slices) turned into '-'. Kubernetes
 * UIDs are UUIDs, a static pod's a hash in hex: lowercase hex digits and dashes only. */
static bool take_uid(const char *p, size_t n, char sep, struct cgroup_found *f)
{
    if (n == 0 || n > K8S_UID_MAX)
        return false;
    char uid[K8S_UID_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        if (p[i] == sep)
            uid[i] = '-';
        else if ((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))
            uid[i] = p[i];
        else
            return false;
    }
    uid[n] = '\0';
    memcpy(f->pod_uid, uid, n + 1);
    f->have_pod = true;
    return true;
}

/* A pod component: "pod<uid>" below a kubepods component (cgroupfs driver), or
 * "kubepods[-<qos>]-pod<uid_with_underscores>.slice" (systemd driver; "kubelet-kubepods-..."
 * where the kubelet's cgroup root is /kubelet, as in kind). */
static void component_pod(const char *p, size_t n, bool below_kubepods, struct cgroup_found *f)
{
    if (below_kubepods && starts_with(p, n, "pod")) {
        take_uid(p + 3, n - 3, '-', f);
        return;
    }
    if (!ends_with(p, n, ".slice") || !memmem(p, n, "kubepods", 8))
        return;
    size_t m = n - 6;
    for (size_t i = m; i >= 4; i--)
        if (memcmp(p + i - 4, "-pod", 4) == 0) {
            take_uid(p + i, m - i, '_', f);
            return;
        }
}

/* The path of one line: components between '/', ".." only at the start (a cgroup outside the
 * reader's cgroup namespace), the innermost container and pod kept. */
static int parse_path(const char *p, size_t n, struct cgroup_found *f, struct cla_error *e)
{
    if (n == 0 || p[0] != '/')
        return err_set(e, -EPROTO, "cgroup: path does not start with '/'");
    if (n == 1)
        return 0;
    bool leading = true, below_kubepods = false;
    const char *parent = "";
    size_t parent_n = 0;
    size_t i = 1;
    while (i <= n) {
        const char *c = p + i;
        const char *slash = memchr(c, '/', n - i);
        size_t cn = slash ? (size_t)(slash - c) : n - i;
        if (cn == 0)
            return err_set(e, -EPROTO, "cgroup: empty path component");
        if (cn == 1 && c[0] == '.')
            return err_set(e, -EPROTO, "cgroup: '.' path component");
        if (cn == 2 && c[0] == '.' && c[1] == '.') {
            if (!leading)
                return err_set(e, -EPROTO, "cgroup: '..' after a named component");
        } else {
            leading = false;
            if (!component_id(c, cn, parent, parent_n, f))
                component_pod(c, cn, below_kubepods, f);
            if (starts_with(c, cn, "kubepods") || starts_with(c, cn, "kubelet-kubepods"))
                below_kubepods = true;
            parent = c;
            parent_n = cn;
        }
        i += cn + 1;
    }
    return 0;
}

/* One line "N:controllers:path": N decimal, 0 exactly for the v2 line, which names no
 * controller; a v1 line names at least one. The path is everything after the second ':'. */
static int parse_line(const char *p, size_t n, struct cgroup_found *f, struct cla_error *e)
{
    const char *c1 = memchr(p, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - p)) : NULL;
    if (!c2)
        return err_set(e, -EPROTO, "cgroup: line is not 'N:controllers:path'");
    uint64_t hid;
    if (util_parse_u64(p, (size_t)(c1 - p), INT_MAX, &hid) < 0)
        return err_set(e, -EPROTO, "cgroup: hierarchy ID is not a number");
    size_t cl = (size_t)(c2 - c1 - 1);
    if ((hid == 0) != (cl == 0))
        return err_set(e, -EPROTO, "cgroup: hierarchy %llu with%s controllers",
                       (unsigned long long)hid, cl == 0 ? "out" : "");
    for (const char *q = c1 + 1; q < c2; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
              *q == '_' || *q == ',' || *q == '=' || *q == '.' || *q == '-'))
            return err_set(e, -EPROTO, "cgroup: controller list holds byte 0x%02x",
                           (unsigned char)*q);
    return parse_path(c2 + 1, n - (size_t)(c2 + 1 - p), f, e);
}

/* Folds one line's findings into the file's: every line naming a container or pod names the
 * same one, or the text is not one process's. */
static int merge(struct cgroup_found *all, const struct cgroup_found *line, struct cla_error *e)
{
    if (line->have_id) {
        if (all->have_id && (strcmp(all->id, line->id) != 0 || all->runtime != line->runtime))
            return err_set(e, -EPROTO, "cgroup: lines name different containers (%.12s, %.12s)",
                           all->id, line->id);
        memcpy(all->id, line->id, sizeof(all->id));
        all->runtime = line->runtime;
        all->have_id = true;
    }
    if (line->have_pod) {
        if (all->have_pod && strcmp(all->pod_uid, line->pod_uid) != 0)
            return err_set(e, -EPROTO, "cgroup: lines name different pods");
        memcpy(all->pod_uid, line->pod_uid, sizeof(all->pod_uid));
        all->have_pod = true;
    }
    return 0;
}

int cgroup_id_parse(const char *buf, size_t len, struct cgroup_container *ret, struct cla_error *e)
{
    if (len > PROC_CGROUP_MAX)
        return err_set(e, -E2BIG, "cgroup: %zu bytes is above the %d-byte cap", len,
                       PROC_CGROUP_MAX);
    if (len == 0)
        return err_set(e, -EPROTO, "cgroup: empty (every process is in a cgroup)");
    if (memchr(buf, '\0', len))
        return err_set(e, -EPROTO, "cgroup: NUL byte in the text");
    struct cgroup_found all = {0};
    size_t off = 0, lineno = 0;
    while (off < len) {
        const char *nl = memchr(buf + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
        lineno++;
        struct cgroup_found line = {0};
        int r = parse_line(buf + off, n, &line, e);
        if (r < 0)
            return err_prefix(e, "line %zu", lineno);
        r = merge(&all, &line, e);
        if (r < 0)
            return r;
        off += n + 1;
    }
    if (!all.have_id)
        return 0;
    memcpy(ret->id, all.id, sizeof(ret->id));
    ret->runtime = all.runtime;
    memcpy(ret->pod_uid, all.pod_uid, sizeof(ret->pod_uid));
    return 1;
}

int cgroup_id_parse_status(const char *s, size_t len, struct cgroup_status_id *ret,
                           struct cla_error *e)
{
    for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++) {
        size_t sl = strlen(runtimes[i].scheme);
        if (!starts_with(s, len, runtimes[i].scheme))
            continue;
        if (!is_hex_id(s + sl, len - sl))
            return err_set(e, -EPROTO,
                           "containerID: the %s ID is not %d lowercase hexadecimal digits",
                           cgroup_runtime_name(runtimes[i].runtime), CGROUP_ID_LEN);
        ret->runtime = runtimes[i].runtime;
        memcpy(ret->id, s + sl, CGROUP_ID_LEN);
        ret->id[CGROUP_ID_LEN] = '\0';
        return 0;
    }
    return err_set(e, -EPROTO,
                   "containerID: not docker://, containerd:// or cri-o:// followed by an ID");
}

int cgroup_id_matches(const char *buf, size_t len, const struct cgroup_status_id *want,
                      const char *pod_uid, struct cla_error *e)
{
    if (!is_hex_id(want->id, strnlen(want->id, sizeof(want->id))))
        return err_set(e, -EINVAL, "containerID: not a parsed ID");
    struct cgroup_container c;
    int r = cgroup_id_parse(buf, len, &c, e);
    if (r <= 0)
        return r;
    if (memcmp(c.id, want->id, CGROUP_ID_LEN) != 0)
        return 0;
    if (c.runtime != CGROUP_RT_UNKNOWN && c.runtime != want->runtime)
        return 0;
    if (pod_uid && c.pod_uid[0] && strcmp(c.pod_uid, pod_uid) != 0)
        return 0;
    return 1;
}
