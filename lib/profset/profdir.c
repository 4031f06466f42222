/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory profiler directory: files added with their bytes (shared objects parsed), the
 * tree sealed (sorted, its manifest digested), its entry library chosen. Pure: no I/O. */
#include "profset/profdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "base/util.h"
#include "profset/tarstream.h"

/* Linear: with at most PROFDIR_FILES_MAX entries a whole tree costs at most 512^2 compares,
 * and the array must stay in arrival order until profdir_seal() sorts it. */
static struct profdir_file *find(const struct profdir *pd, const char *path)
{
    for (size_t i = 0; i < pd->n; i++)
        if (strcmp(pd->files[i].path, path) == 0)
            return &pd->files[i];
    return NULL;
}

static int push(struct profdir *pd, const char *path, bool is_dir, bool executable, uint8_t *data,
                size_t len, struct cla_error *e)
{
    /* The cap bounds our memory and, more, the work done in the target: every entry becomes a
     * file or directory created there as the target's user. A hostile tar stream cannot make
     * clrattach create thousands of files. */
    if (pd->n == PROFDIR_FILES_MAX)
        return err_set(e, -E2BIG, "the profiler directory has more than %d entries",
                       PROFDIR_FILES_MAX);
    if (pd->n == pd->alloc) {
        size_t na = pd->alloc ? pd->alloc * 2 : 16;
        struct profdir_file *nf = realloc(pd->files, na * sizeof(*nf));
        if (!nf)
            return err_set(e, -ENOMEM, "out of memory");
        pd->files = nf;
        pd->alloc = na;
    }
    struct profdir_file *f = &pd->files[pd->n++];
    memset(f, 0, sizeof(*f));
    /* Never cut: profdir_add() refused paths over PROFDIR_PATH_MAX, and parents are shorter. */
    snprintf(f->path, sizeof(f->path), "%s", path);
    f->is_dir = is_dir;
    f->executable = executable;
    f->data = data;
    f->len = len;
    return 0;
}

int profdir_add(struct profdir *pd, const char *path, bool is_dir, bool executable, uint8_t *data,
                size_t len, struct cla_error *e)
{
    size_t plen = strlen(path);
    int r = 0;
    if (plen == 0 || plen > PROFDIR_PATH_MAX) {
        r = err_set(e, -EINVAL, "a profiler file name of %zu bytes", plen);
        goto fail;
    }
    /* Written as a subtraction: total <= PROFILER_MAX_SIZE always, so it cannot wrap, while
     * total + len could for a huge len. */
    if (!is_dir && len > PROFILER_MAX_SIZE - pd->total) {
        r = err_set(e, -E2BIG, "the profiler directory holds more than %d bytes",
                    PROFILER_MAX_SIZE);
        goto fail;
    }
    /* Parents first, so that the tree can be created top-down in any order of arrival. */
    for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
        char parent[PROFDIR_PATH_MAX + 1];
        snprintf(parent, sizeof(parent), "%.*s", (int)(s - path), path);
        struct profdir_file *p = find(pd, parent);
        if (p && !p->is_dir) {
            r = err_set(e, -EEXIST, "'%s' is both a file and a directory", parent);
            goto fail;
        }
        /* An implied parent is a directory, delivered 0555 like every directory. */
        if (!p && (r = push(pd, parent, true, true, NULL, 0, e)) < 0)
            goto fail;
    }
    struct profdir_file *old = find(pd, path);
    /* A directory named again is harmless (tar streams list "lib/" after a "lib/x.so" already
     * implied it). A file named twice is refused rather than "last one wins" as tar extraction
     * does: the digest and the delivered tree must describe one content per name. */
    if (old) {
        if (old->is_dir && is_dir)
            return 0;
        r = err_set(e, -EEXIST, "'%s' appears twice in the profiler directory", path);
        goto fail;
    }
    if ((r = push(pd, path, is_dir, executable, data, len, e)) < 0)
        goto fail;
    if (!is_dir)
        pd->total += len;
    return 0;
fail:
    /* Ownership of `data` was taken on entry: callers never free it, on any path. */
    free(data);
    return r;
}

static int cmp_path(const void *a, const void *b)
{
    const struct profdir_file *x = a, *y = b;
    return strcmp(x->path, y->path);
}

/* "x.so" or "x.so.1.2": the names the loader opens as libraries (the entry, DT_NEEDED). Other
 * files (configs, plugins' data, executables) are never parsed as ELF nor dependency-checked. */
static bool so_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    return (n > 3 && strcmp(base + n - 3, ".so") == 0) || strstr(base, ".so.") != NULL;
}

int profdir_seal(struct profdir *pd, struct cla_error *e)
{
    size_t files = 0;
    /* An empty directory has no array at all: qsort() must not be handed its NULL. */
    if (pd->n > 1)
        qsort(pd->files, pd->n, sizeof(*pd->files), cmp_path);
    /* Sorted first, so the digest (and so the delivered directory's name) does not depend on
     * readdir or tar order: the same tree gets the same name and is reused in the target. The
     * manifest holds kind, mode, content hash and path of each entry, so a tree that differs in
     * any of them gets another name instead of being taken for the one already there. */
    struct sha256_ctx manifest;
    sha256_init(&manifest);
    for (size_t i = 0; i < pd->n; i++) {
        struct profdir_file *f = &pd->files[i];
        /* "F x <64 hex> <path>\n" is 70 bytes plus the path: never cut. */
        char line[PROFDIR_PATH_MAX + 96];
        int w;
        if (f->is_dir) {
            w = snprintf(line, sizeof(line), "D %s\n", f->path);
        } else {
            uint8_t digest[SHA256_DIGEST_SIZE];
            sha256_buf(f->data, f->len, digest);
            sha256_hex(digest, f->sha256);
            w = snprintf(line, sizeof(line), "F %c %s %s\n", f->executable ? 'x' : '-', f->sha256,
                         f->path);
            files++;
            /* A ".so" name that does not parse is kept as a plain file, without error: only
             * libraries are candidates for the entry and for the dependency check. */
            struct elf_info ei;
            if (so_name(f->path) && elfinfo_parse(f->data, f->len, &ei, NULL) == 0 &&
                ei.is_shared_object) {
                f->elf = malloc(sizeof(*f->elf));
                if (!f->elf)
                    return err_set(e, -ENOMEM, "out of memory");
                *f->elf = ei;
            }
        }
        sha256_update(&manifest, (const uint8_t *)line, (size_t)w);
    }
    /* Only directories: nothing the runtime could load. */
    if (files == 0)
        return err_set(e, -EINVAL, "the profiler directory holds no file");
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_final(&manifest, digest);
    sha256_hex(digest, pd->digest);
    return 0;
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "a.so, lib/b.so" of the shared objects that export DllGetClassObject (or all, when `any`). */
static void list_libs(const struct profdir *pd, bool any, char *out, size_t size)
{
    /* Only for a message: a list longer than `size` is cut (snprintf keeps it terminated and
     * `used` reaching `size` ends the loop). */
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < pd->n && used < size; i++) {
        const struct profdir_file *f = &pd->files[i];
        if (!f->elf || (!any && !f->elf->exports_class_factory))
            continue;
        int w = snprintf(out + used, size - used, "%s%s", used ? ", " : "", f->path);
        if (w > 0)
            used += (size_t)w;
    }
}

int profdir_entry_path(const char *want, const char *shown, char out[PROFDIR_PATH_MAX + 1],
                       struct cla_error *e)
{
    struct cla_error ne = {0};
    if (tar_normalise_path(want, strlen(want), out, PROFDIR_PATH_MAX + 1, &ne) == 0)
        return 0;
    err_set(e, -EINVAL, "--entry '%s': %s", want, ne.msg);
    return err_hint(e,
                    "name the profiler library by its path relative to %s (\"./\" may lead "
                    "it; never \"..\" nor an absolute path)",
                    shown);
}

int profdir_choose_entry(struct profdir *pd, const char *want, const char *shown,
                         struct cla_error *e)
{
    char have[512], norm[PROFDIR_PATH_MAX + 1];
    int r;
    /* "./linux-x64/x.so" is "linux-x64/x.so": the path as the tree holds it. */
    if (want && (r = profdir_entry_path(want, shown, norm, e)) < 0)
        return r;
    if (want)
        want = norm;
    size_t found = 0, at = 0;
    for (size_t i = 0; i < pd->n; i++) {
        const struct profdir_file *f = &pd->files[i];
        if (f->is_dir)
            continue;
        /* A bare file name is accepted so that --entry libInstrumentationEngine.so works without
         * the bundle's subdirectory; a name found twice is refused below, never guessed. */
        bool match = want ? (strcmp(f->path, want) == 0 || strcmp(base_of(f->path), want) == 0)
                          : f->elf && f->elf->exports_class_factory;
        if (match) {
            found++;
            at = i;
        }
    }
    if (want) {
        list_libs(pd, true, have, sizeof(have));
        if (found == 0) {
            err_set(e, -EINVAL, "--entry '%s': no such file in %s (its libraries: %s)", want, shown,
                    have[0] ? have : "none");
            return err_hint(e, "name the profiler library as a path relative to %s", shown);
        }
        if (found > 1) {
            err_set(e, -EINVAL, "--entry '%s' names several files in %s", want, shown);
            return err_hint(e, "name it by its path relative to %s", shown);
        }
        /* Refused here, before anything reaches the target: the runtime would find out only
         * after loading the library into the app's process. */
        const struct profdir_file *f = &pd->files[at];
        if (!f->elf || !f->elf->exports_class_factory) {
            err_set(e, -EINVAL, "--entry '%s' in %s is %s", want, shown,
                    f->elf ? "a shared object that does not export DllGetClassObject: not a CLR "
                             "profiler (a plugin or a helper library?)"
                           : "not an ELF shared object");
            list_libs(pd, false, have, sizeof(have));
            return err_hint(e, "the libraries that export DllGetClassObject: %s",
                            have[0] ? have : "none");
        }
    } else if (found != 1) {
        list_libs(pd, found == 0, have, sizeof(have));
        if (found == 0) {
            err_set(e, -EINVAL,
                    "no library in %s exports DllGetClassObject (its shared objects: %s): not "
                    "a CLR profiler directory",
                    shown, have[0] ? have : "none");
            return err_hint(e, "point --profiler at the profiler's own directory or library");
        }
        err_set(e, -EINVAL, "several libraries in %s export DllGetClassObject: %s", shown, have);
        return err_hint(e, "choose the profiler with --entry NAME (for the CLR Instrumentation "
                           "Engine: --entry libInstrumentationEngine.so)");
    }
    pd->entry = at;
    return 0;
}

void profdir_free(struct profdir *pd)
{
    for (size_t i = 0; i < pd->n; i++) {
        free(pd->files[i].data);
        free(pd->files[i].elf);
    }
    free(pd->files);
    /* Zeroed, so a second profdir_free() (from a cleanup path) is harmless. */
    memset(pd, 0, sizeof(*pd));
}
