/* SPDX-License-Identifier: Apache-2.0 */
#include "placement.h"

#include <stdio.h>
#include <string.h>

#include "render.h"

static const char *const defaults[] = {"/tmp/", "/var/tmp/", "/dev/shm/"};

static size_t add(struct placement *out, size_t k, const char *dir, const char *source,
                  const struct proc_mount *mounts, size_t n)
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
    if (mounts && n) {
        const struct proc_mount *m = proc_mount_for_path(mounts, n, p.dir);
        /* The target's mount table: its octal escapes are decoded, so a mount point or type may
         * hold anything; quoted rendered. */
        char fstype[40], mp[96];
        if (m) {
            render_text(m->fstype, strlen(m->fstype), fstype, sizeof(fstype));
            render_text(m->mount_point, strlen(m->mount_point), mp, sizeof(mp));
        }
        if (m && m->noexec)
            snprintf(p.rejected, sizeof(p.rejected), "mounted noexec (%s on %s)", fstype, mp);
        else if (m && m->read_only)
            snprintf(p.rejected, sizeof(p.rejected), "mounted read-only (%s on %s)", fstype, mp);
    }
    out[k] = p;
    return k + 1;
}

size_t placement_candidates(const char *tmpdir, const char *user_dir,
                            const struct proc_mount *mounts, size_t n,
                            struct placement out[PLACEMENT_MAX])
{
    /* An explicit directory is the user's decision: it is checked, never silently replaced. */
    if (user_dir)
        return add(out, 0, user_dir, "--target-dir", mounts, n);
    size_t k = add(out, 0, tmpdir, "TMPDIR", mounts, n);
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        k = add(out, k, defaults[i], "default", mounts, n);
    return k;
}
