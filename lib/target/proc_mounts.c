/* SPDX-License-Identifier: Apache-2.0 */
/* The /proc/<pid>/mountinfo parser: each line checked whole, octal escapes decoded, and the
 * mount that holds a path. Pure: no I/O. */
#include "target/proc_mounts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Copies one space-delimited mountinfo field, decoding the kernel's \ooo escapes. */
static int mi_field(const char **pp, const char *end, char *out, size_t size)
{
    const char *p = *pp;
    size_t o = 0;
    while (p < end && *p != ' ') {
        char c = *p++;
        if (c == '\\') {
            if (end - p < 3)
                return -EPROTO;
            int v = 0;
            for (int k = 0; k < 3; k++) {
                if (p[k] < '0' || p[k] > '7')
                    return -EPROTO;
                v = v * 8 + (p[k] - '0');
            }
            /* A NUL would cut the decoded path short of what the kernel meant; "\400" and up
             * is no byte. */
            if (v == 0 || v > 255)
                return -EPROTO;
            c = (char)v;
            p += 3;
        }
        /* Refused rather than cut: a shortened mount point would match the wrong paths. */
        if (o + 1 >= size)
            return -EPROTO;
        out[o++] = c;
    }
    if (o == 0)
        return -EPROTO;
    out[o] = '\0';
    if (p < end)
        p++; /* the space */
    *pp = p;
    return 0;
}

/* Does the comma-separated option list (not NUL-terminated) hold `opt` exactly? */
static bool has_opt(const char *list, size_t len, const char *opt)
{
    size_t ol = strlen(opt);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *fe = c ? c : end;
        if ((size_t)(fe - p) == ol && memcmp(p, opt, ol) == 0)
            return true;
        p = fe + 1;
    }
    return false;
}

static int mi_line(const char *p, const char *end, struct proc_mount *m)
{
    char tmp[TARGET_PATH_MAX_MOUNT];
    /* 1 mount id, 2 parent id, 3 major:minor, 4 root, 5 mount point, 6 options. */
    for (int f = 1; f <= 3; f++)
        if (mi_field(&p, end, tmp, sizeof(tmp)) < 0)
            return -EPROTO;
    if (mi_field(&p, end, tmp, sizeof(tmp)) < 0)
        return -EPROTO;
    if (mi_field(&p, end, m->mount_point, sizeof(m->mount_point)) < 0 || m->mount_point[0] != '/')
        return -EPROTO;
    const char *opts = p;
    while (p < end && *p != ' ')
        p++;
    size_t optlen = (size_t)(p - opts);
    if (optlen == 0 || p >= end)
        return -EPROTO;
    m->read_only = has_opt(opts, optlen, "ro");
    m->noexec = has_opt(opts, optlen, "noexec");
    /* Optional fields up to the lone "-". */
    for (;;) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            return -EPROTO;
        if (*p == '-' && (p + 1 == end || p[1] == ' ')) {
            p++;
            break;
        }
        while (p < end && *p != ' ')
            p++;
    }
    while (p < end && *p == ' ')
        p++;
    if (mi_field(&p, end, m->fstype, sizeof(m->fstype)) < 0)
        return -EPROTO;
    if (mi_field(&p, end, tmp, sizeof(tmp)) < 0) /* source */
        return -EPROTO;
    const char *super = p;
    while (p < end && *p != ' ')
        p++;
    /* A mount is read-only if either its own options or its superblock's say so. */
    if (has_opt(super, (size_t)(p - super), "ro"))
        m->read_only = true;
    return 0;
}

int proc_parse_mountinfo(const char *buf, size_t len, struct proc_mount **ret_mounts, size_t *ret_n,
                         struct cla_error *e)
{
    struct proc_mount *list = NULL;
    size_t n = 0, alloc = 0, lineno = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (le > p) {
            /* A process can create mounts in its own namespace by the ten thousand (fs.mount-max
             * is 100000 by default): the cap keeps the parse and the linear search bounded. */
            if (n == PROC_MOUNTS_MAX) {
                free(list);
                return err_set(e, -E2BIG, "mountinfo has more than %d mounts", PROC_MOUNTS_MAX);
            }
            if (n == alloc) {
                alloc = alloc ? alloc * 2 : 32;
                struct proc_mount *nlist = realloc(list, alloc * sizeof(*nlist));
                if (!nlist) {
                    free(list);
                    return err_set(e, -ENOMEM, "out of memory");
                }
                list = nlist;
            }
            memset(&list[n], 0, sizeof(list[n]));
            if (mi_line(p, le, &list[n]) < 0) {
                free(list);
                return err_set(e, -EPROTO, "mountinfo line %zu is malformed", lineno);
            }
            n++;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    *ret_mounts = list;
    *ret_n = n;
    return 0;
}

const struct proc_mount *proc_mount_for_path(const struct proc_mount *mounts, size_t n,
                                             const char *path)
{
    const struct proc_mount *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *mp = mounts[i].mount_point;
        size_t ml = strlen(mp);
        /* "/" is a prefix of everything; "/tmp" holds "/tmp" and "/tmp/x" but not "/tmpx". */
        bool prefix = ml == 1 || (strncmp(path, mp, ml) == 0 && (path[ml] == '/' || !path[ml]));
        /* Stacked mounts: the last listed is on top, except on "/": a mount stacked on the
         * process's own root is never reached from it (lookups start below it), and the kernel
         * lists the process's root mount first. */
        bool wins = ml == 1 ? best_len == 0 && !best : ml >= best_len;
        if (prefix && wins) {
            best = &mounts[i];
            best_len = ml;
        }
    }
    return best;
}
