/* SPDX-License-Identifier: Apache-2.0 */
/* A vendor home's RID folders told from its other entries, and the entry library a RID folder
 * gives. Pure: no I/O. */
#include "profset/profhome.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

/* The operating systems and architectures of .NET's portable RIDs (the RID catalog's portable
 * part): "<os>[-musl|-bionic]-<arch>". */
static const char *const oses[] = {"linux", "win",         "osx",     "freebsd", "android", "ios",
                                   "tvos",  "maccatalyst", "illumos", "solaris", "browser", "wasi"};
static const char *const arches[] = {"x64",     "x86",         "arm",   "arm64",
                                     "armel",   "armv6",       "s390x", "ppc64le",
                                     "riscv64", "loongarch64", "wasm",  "mips64"};

static bool one_of(const char *s, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && memcmp(list[i], s, n) == 0)
            return true;
    return false;
}

bool profhome_rid_folder(const char *name)
{
    const char *dash = strchr(name, '-'), *last = strrchr(name, '-');
    if (!dash || !one_of(name, (size_t)(dash - name), oses, ARRAY_SIZE(oses)) ||
        !one_of(last + 1, strlen(last + 1), arches, ARRAY_SIZE(arches)))
        return false;
    /* Between the two: nothing, or a libc ("linux-musl-x64", "linux-bionic-arm64"). */
    size_t mid = (size_t)(last - dash);
    return mid == 0 || (mid == 5 && memcmp(dash, "-musl", 5) == 0) ||
           (mid == 7 && memcmp(dash, "-bionic", 7) == 0);
}

/* Does `path` lie below the folder `rid`? */
static bool below(const char *path, const char *rid)
{
    size_t n = strlen(rid);
    return strncmp(path, rid, n) == 0 && path[n] == '/';
}

bool profhome_has_folder(const struct profdir *pd, const char *rid)
{
    for (size_t i = 0; i < pd->n; i++)
        if (!pd->files[i].is_dir && below(pd->files[i].path, rid))
            return true;
    return false;
}

/* "a.so, b.so" of the profiler libraries below `rid`, for a message; cut to `size`. */
static size_t list_entries(const struct profdir *pd, const char *rid, char *out, size_t size,
                           size_t *ret_at)
{
    size_t found = 0, used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < pd->n; i++) {
        const struct profdir_file *f = &pd->files[i];
        if (!f->elf || !f->elf->exports_class_factory || !below(f->path, rid))
            continue;
        *ret_at = i;
        found++;
        int w =
            used < size ? snprintf(out + used, size - used, "%s%s", used ? ", " : "", f->path) : 0;
        if (w > 0)
            used = used + (size_t)w < size ? used + (size_t)w : size;
    }
    return found;
}

int profhome_choose_entry(struct profdir *pd, const char *rid, const char *want, const char *shown,
                          struct cla_error *e)
{
    char have[400];
    size_t at = 0;
    if (want) {
        char path[PROFDIR_PATH_MAX + 1];
        if (snprintf(path, sizeof(path), "%s/%s", rid, want) >= (int)sizeof(path))
            return -ENOENT;
        for (size_t i = 0; i < pd->n; i++) {
            const struct profdir_file *f = &pd->files[i];
            if (f->is_dir || strcmp(f->path, path) != 0)
                continue;
            if (!f->elf || !f->elf->exports_class_factory) {
                err_set(e, -EINVAL, "--entry '%s' in %s is not a CLR profiler library (%s)", path,
                        shown,
                        f->elf ? "it does not export DllGetClassObject"
                               : "not an ELF shared "
                                 "object");
                list_entries(pd, rid, have, sizeof(have), &at);
                return err_hint(e, "the libraries in %s/ that export DllGetClassObject: %s", rid,
                                have[0] ? have : "none");
            }
            pd->entry = i;
            return 0;
        }
        return -ENOENT;
    }
    size_t found = list_entries(pd, rid, have, sizeof(have), &at);
    if (found == 1) {
        pd->entry = at;
        return 0;
    }
    if (found == 0) {
        err_set(e, -EINVAL,
                "the home %s has a %s/ folder with no library exporting "
                "DllGetClassObject in it",
                shown, rid);
        return err_hint(e,
                        "a home's RID folders hold its native profiler for that RID; name the "
                        "entry with --entry PATH (relative to %s)",
                        shown);
    }
    err_set(e, -EINVAL, "several libraries in %s/%s/ export DllGetClassObject: %s", shown, rid,
            have);
    return err_hint(e, "choose one with --entry NAME (its name inside %s/)", rid);
}
