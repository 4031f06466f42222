/* SPDX-License-Identifier: Apache-2.0 */
/* A startup hook's references against what is delivered with it and the directories the app
 * resolves assemblies from, found in its maps; the wording of the refusal. Pure: no I/O. */
#include "profset/hookdeps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/render.h"
#include "target/proc_maps.h"

#define FRAMEWORK_NAME "Microsoft.NETCore.App"
#define ASPNET_NAME    "Microsoft.AspNetCore.App"

/* Cuts `path` at its last '/': its directory, in place. False when it has none past the root. */
static bool cut_last(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return false;
    *slash = '\0';
    return true;
}

static void add_dir(struct hookdeps_dirs *d, const char *path)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->dir[i], path) == 0)
            return;
    if (d->n < HOOKDEPS_DIRS_MAX)
        snprintf(d->dir[d->n++], TARGET_PATH_MAX, "%s", path);
}

void hookdeps_dirs_from_maps(const char *maps, size_t len, const char *entry,
                             struct hookdeps_dirs *ret)
{
    char path[TARGET_PATH_MAX], prefix[TARGET_PATH_MAX + sizeof(ASPNET_NAME) + 2];
    memset(ret, 0, sizeof(*ret));
    if (!maps || proc_maps_runtime_library(maps, len, path, sizeof(path)) != 1 || !cut_last(path))
        return;
    add_dir(ret, path); /* .../shared/Microsoft.NETCore.App/<version> */
    /* ASP.NET Core's shared framework lies beside it: .../shared/Microsoft.AspNetCore.App/<v>. */
    char *ver = strrchr(path, '/');
    if (ver && ver > path) {
        *ver = '\0';
        char *fw = strrchr(path, '/');
        if (fw && strcmp(fw + 1, FRAMEWORK_NAME) == 0) {
            fw[1] = '\0';
            snprintf(prefix, sizeof(prefix), "%s%s/", path, ASPNET_NAME);
            if (proc_maps_find(maps, len, prefix, ".dll", path, sizeof(path)) == 1 &&
                cut_last(path))
                add_dir(ret, path);
        }
    }
    /* The app's own directory: where its entry assembly is mapped from. */
    char suffix[ASSEMBLY_NAME_MAX + 6];
    if (!entry || !entry[0] || strlen(entry) >= ASSEMBLY_NAME_MAX || strchr(entry, '/'))
        return;
    snprintf(suffix, sizeof(suffix), "/%s.dll", entry);
    if (proc_maps_find(maps, len, NULL, suffix, path, sizeof(path)) == 1 && cut_last(path))
        add_dir(ret, path);
}

/* Is "<dir>/<name>.dll" (dir "" for the top) one of pd's files? */
static bool delivered(const struct profdir *pd, const char *dir, size_t dl, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < pd->n; i++) {
        const char *p = pd->files[i].path;
        if (pd->files[i].is_dir || strncmp(p, dir, dl) != 0)
            continue;
        p += dl;
        if (strncmp(p, name, nl) == 0 && strcmp(p + nl, ".dll") == 0)
            return true;
    }
    return false;
}

size_t hookdeps_undelivered(const struct assembly_identity *id, const struct profdir *pd,
                            size_t *ret_idx)
{
    size_t n = 0, dl = 0;
    const char *dir = "";
    if (pd && pd->entry < pd->n) {
        dir = pd->files[pd->entry].path;
        const char *slash = strrchr(dir, '/');
        dl = slash ? (size_t)(slash - dir) + 1 : 0;
    }
    for (size_t i = 0; i < id->nrefs && i < ASSEMBLY_REFS_MAX; i++)
        if (!pd || !delivered(pd, dir, dl, id->refs[i]))
            ret_idx[n++] = i;
    return n;
}

int hookdeps_refuse(const char *shown, const struct assembly_identity *id, const size_t *missing,
                    size_t n, const struct hookdeps_dirs *dirs, struct cla_error *e)
{
    char names[512] = "", where[1024] = "", part[TARGET_PATH_MAX];
    size_t len = 0;
    for (size_t i = 0; i < n && len + 1 < sizeof(names); i++) {
        render_text(id->refs[missing[i]], strlen(id->refs[missing[i]]), part, 160);
        len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", part);
    }
    len = 0;
    for (size_t i = 0; i < dirs->n && len + 1 < sizeof(where); i++) {
        render_text(dirs->dir[i], strlen(dirs->dir[i]), part, 300);
        len += (size_t)snprintf(where + len, sizeof(where) - len, "%s%s", i ? ", " : "", part);
    }
    err_set(e, -ENOENT,
            "%s references %zu assembl%s neither delivered with it nor where the app resolves "
            "assemblies (%s): %s; the runtime would throw FileNotFoundException out of "
            "Initialize, and an exception in a hook applied to a running app ends it",
            shown, n, n == 1 ? "y" : "ies", where, names);
    return err_hint(e, "pass the hook's directory with --assembly DIR (its build output, with "
                       "these assemblies beside the hook), or make sure the app has them");
}
