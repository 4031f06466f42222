/* SPDX-License-Identifier: Apache-2.0 */
/* The candidate directories in the order they are tried, and the verdict on one from what its
 * mount says. Pure: no I/O. */
#include "deliver/placement.h"

#include <stdio.h>
#include <string.h>

#include "base/render.h"

static const char *const defaults[] = {"/tmp/", "/var/tmp/", "/dev/shm/"};

static size_t add(struct placement *out, size_t k, const char *dir, const char *source)
{
    if (k >= PLACEMENT_MAX)
        return k;
    size_t len = strlen(dir);
    if (len == 0 || dir[0] != '/' || len + 2 > sizeof(out[0].dir))
        return k;
    struct placement p = {.source = source};
    memcpy(p.dir, dir, len + 1);
    if (p.dir[len - 1] != '/') {
        p.dir[len] = '/';
        p.dir[len + 1] = '\0';
    }
    for (size_t i = 0; i < k; i++)
        if (strcmp(out[i].dir, p.dir) == 0)
            return k;
    out[k] = p;
    return k + 1;
}

size_t placement_candidates(const char *tmpdir, const char *user_dir,
                            struct placement out[PLACEMENT_MAX])
{
    /* An explicit directory is the user's decision: it is checked, never silently replaced. */
    if (user_dir)
        return add(out, 0, user_dir, "--target-dir");
    size_t k = add(out, 0, tmpdir, "TMPDIR");
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        k = add(out, k, defaults[i], "default");
    return k;
}

bool placement_judge(struct placement *p, bool noexec, bool read_only,
                     const struct proc_mount *mounts, size_t n)
{
    if (!noexec && !read_only)
        return false;
    const char *what = noexec ? "noexec" : "read-only";
    const struct proc_mount *m = mounts && n ? proc_mount_for_path(mounts, n, p->dir) : NULL;
    /* Named only when the table agrees: it is matched by path, where statfs saw through any
     * link to the directory itself. */
    if (m && (noexec ? m->noexec : m->read_only)) {
        /* The target's mount table: its octal escapes are decoded, so a mount point or type
         * may hold anything; quoted rendered. */
        char fstype[40], mp[96];
        render_text(m->fstype, strlen(m->fstype), fstype, sizeof(fstype));
        render_text(m->mount_point, strlen(m->mount_point), mp, sizeof(mp));
        snprintf(p->rejected, sizeof(p->rejected), "mounted %s (%s on %s)", what, fstype, mp);
    } else {
        snprintf(p->rejected, sizeof(p->rejected), "mounted %s", what);
    }
    return true;
}
