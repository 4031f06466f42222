/* SPDX-License-Identifier: Apache-2.0 */
/* A startup hook's references looked for in the app's view: its maps read for the directories it
 * resolves from, then "<name>.dll" in each, through its root. */
#include "profset/target_hookdeps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"
#include "profset/hookdeps.h"
#include "target/rootfs.h"
#include "target/target.h"

/* Is "<dir>/<name>.dll" a regular file in the app's view (links followed inside its root)? */
static bool present(const struct target *t, const char *dir, const char *name)
{
    char path[TARGET_PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.dll", dir, name) >= sizeof(path))
        return false;
    int fd = rootfs_open_contained(t->rootfd, path, ROOTFS_REG, O_PATH, NULL);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int target_hookdeps_check(const struct target *t, const struct assembly_identity *id,
                          const struct profdir *pd, const char *entry, const char *shown,
                          char *note, size_t note_size, struct cla_error *e)
{
    size_t missing[ASSEMBLY_REFS_MAX], n = hookdeps_undelivered(id, pd, missing), left = 0;
    note[0] = '\0';
    if (!n)
        return 0;
    size_t len = 0;
    const char *maps = target_maps((struct target *)t, &len);
    _cleanup_free_ struct hookdeps_dirs *dirs = malloc(sizeof(*dirs));
    if (!dirs)
        return err_set(e, -ENOMEM, "out of memory");
    hookdeps_dirs_from_maps(maps, len, entry, dirs);
    if (!dirs->n) {
        snprintf(note, note_size,
                 "not checked: %zu referenced assembl%s not delivered with the hook (no shared "
                 "framework in the app's maps: a single-file app?)",
                 n, n == 1 ? "y" : "ies");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t d = 0; d < dirs->n && !found; d++)
            found = present(t, dirs->dir[d], id->refs[missing[i]]);
        if (!found)
            missing[left++] = missing[i];
    }
    return left ? hookdeps_refuse(shown, id, missing, left, dirs, e) : 0;
}
