/* SPDX-License-Identifier: Apache-2.0 */
#include "profset/depcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profset/ldsearch.h"
#include "target/proc_maps.h"
#include "base/render.h"
#include "target/rootfs.h"
#include "base/util.h"

/* Caps on what the target's text can make us hold: its maps list every mapped file and its
 * musl path file is its own. A process with more than MAPPED_MAX libraries is checked against
 * the first ones only; a miss then still names the library, and can be skipped. */
#define MAPPED_MAX    256
#define MAPPED_BUF    (64 * 1024)
#define MUSL_PATH_MAX 4096

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Does a regular file exist at `path` in the target's root? Links inside the root are followed
 * (shared libraries are links to versioned files), with or without openat2. */
static bool exists_in_root(int rootfd, const char *path)
{
    /* O_PATH: the file is never read or opened for I/O, so a FIFO or device planted in a
     * library directory cannot block us; the type is still checked on what the path reaches. */
    int fd = rootfs_open_contained(rootfd, path, ROOTFS_REG, O_PATH, NULL);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Names the loader resolves to itself: musl's libc under its several names. */
static bool loader_builtin(enum rid_libc libc, const char *name)
{
    return libc == RID_LIBC_MUSL &&
           (strcmp(name, "libc.so") == 0 || strncmp(name, "libc.musl-", 10) == 0 ||
            strncmp(name, "ld-musl-", 8) == 0);
}

struct ctx {
    const struct depcheck_input *in;
    char *mapped; /* packed paths of mapped libraries; NULL until the maps were asked for */
    size_t n_mapped;
    bool mapped_tried;
    char *musl_path;
    size_t musl_path_len;
};

/* The mapped libraries, from the target's maps asked for on first use. -ENOMEM, else 0 (maps
 * that cannot be read leave the list empty: nothing counts as mapped). */
static int load_mapped(struct ctx *c)
{
    if (c->mapped_tried)
        return c->mapped ? 0 : -ENOMEM;
    c->mapped_tried = true;
    c->mapped = malloc(MAPPED_BUF);
    if (!c->mapped)
        return -ENOMEM;
    size_t len = 0;
    const char *maps = c->in->maps ? c->in->maps(c->in->maps_arg, &len) : NULL;
    c->n_mapped = maps ? proc_maps_libraries(maps, len, c->mapped, MAPPED_BUF, MAPPED_MAX) : 0;
    return 0;
}

/* A library already loaded is not looked for again: the loader matches a DT_NEEDED name against
 * the objects it has loaded. Matched here on the mapped file's base name. The directories are
 * tried before this (resolve): found there or loaded, the loader is satisfied either way. */
static bool mapped_by_name(const struct ctx *c, const char *name)
{
    const char *p = c->mapped;
    for (size_t i = 0; i < c->n_mapped; i++, p += strlen(p) + 1)
        if (strcmp(base_of(p), name) == 0)
            return true;
    return false;
}

/* Appends " dir," entries to a message buffer while it has room. */
static void note_dir(char *out, size_t size, size_t *used, const char *dir)
{
    if (*used >= size)
        return;
    int w = snprintf(out + *used, size - *used, "%s%s", *used ? ", " : "", dir);
    *used = w < 0 ? size : *used + (size_t)w;
}

/* Resolves one DT_NEEDED `name` of the object at `origin`/`elf`: 0 found, -ENOENT (message),
 * -ENOMEM. */
static int resolve(struct ctx *c, const struct elf_info *elf, const char *origin, const char *who,
                   const char *name, struct cla_error *e)
{
    const struct depcheck_input *in = c->in;
    if (loader_builtin(in->libc, name))
        return 0;
    /* A name with a '/' is a path, used as it is with no search. A relative one is relative to
     * the target's working directory at load time, which we cannot know: it is let through. */
    if (strchr(name, '/'))
        return name[0] != '/' || exists_in_root(in->rootfd, name) ? 0 : -ENOENT;
    struct ld_request rq = {
        .libc = in->libc,
        .arch = in->arch,
        .runpath = elf->runpath,
        .runpath_is_rpath = elf->runpath_is_rpath,
        .origin = origin,
        .ld_library_path = in->ld_library_path,
        .ld_library_path_len = in->ld_library_path_len,
        .musl_path = c->musl_path,
        .musl_path_len = c->musl_path_len,
    };
    /* On the heap: with every directory's text (LDSEARCH_BUF per list) it is over 32 KiB. */
    struct ld_search *s = malloc(sizeof(*s));
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    ldsearch_dirs(&rq, s);
    int r = 0;
    /* Only for the message; a long search list is cut and marked with "...". */
    char looked[300];
    size_t used = 0;
    looked[0] = '\0';
    char path[TARGET_PATH_MAX];
    for (size_t i = 0; r == 0 && i < s->n; i++) {
        /* A path longer than TARGET_PATH_MAX is one we never open: skipped, not cut. */
        if (snprintf(path, sizeof(path), "%s/%s", s->dir[i], name) >= (int)sizeof(path))
            continue;
        if (exists_in_root(in->rootfd, path))
            goto found;
        note_dir(looked, sizeof(looked), &used, s->dir[i]);
    }
    if (r == 0 && (r = load_mapped(c)) < 0)
        err_set(e, r, "out of memory");
    if (r == 0 && mapped_by_name(c, name))
        goto found;
    /* The directories of libraries already mapped (a runtime's own, a distro's): what a
     * self-contained app ships beside itself is found there. */
    const char *p = c->mapped;
    for (size_t i = 0; r == 0 && i < c->n_mapped; i++, p += strlen(p) + 1) {
        size_t dl = (size_t)(base_of(p) - p);
        if (snprintf(path, sizeof(path), "%.*s%s", (int)dl, p, name) >= (int)sizeof(path))
            continue;
        if (exists_in_root(in->rootfd, path))
            goto found;
    }
    /* Past the caps some directories were never looked in: the miss is told as what it is, a
     * miss in the places checked, and the attach can still be sent on the operator's word (the
     * hint). */
    char verdict[200];
    if (s->unchecked)
        snprintf(verdict, sizeof(verdict),
                 "which is in none of the places checked (%zu %s entries not checked: each list "
                 "is checked up to %d directories and %d bytes)",
                 s->unchecked, s->unchecked_why, LDSEARCH_MAX_DIRS, LDSEARCH_BUF);
    else
        snprintf(verdict, sizeof(verdict), "which the target's loader would not find");
    free(s);
    if (r < 0)
        return r;
    /* The directories come from the target (LD_LIBRARY_PATH, its path file, its maps): they are
     * rendered (render.h) before they reach a message. */
    char who_shown[160], name_shown[160], looked_shown[400];
    render_text(who, strlen(who), who_shown, sizeof(who_shown));
    render_text(name, strlen(name), name_shown, sizeof(name_shown));
    render_text(looked, strlen(looked), looked_shown, sizeof(looked_shown));
    err_set(e, -ENOENT,
            "%s needs %s (DT_NEEDED), %s: not mapped in the target, not in %s%s, nor beside the "
            "%zu libraries it has mapped",
            who_shown, name_shown, verdict, looked_shown, used >= sizeof(looked) - 1 ? "..." : "",
            c->n_mapped);
    return err_hint(e,
                    "ship %s with the profiler (a profiler directory, found through RUNPATH "
                    "$ORIGIN), or add it to the app's image; --skip-dependency-check sends the "
                    "attach anyway",
                    name_shown);
found:
    free(s);
    return 0;
}

/* Stops at the first miss: one library named per message, the one to ship first. */
static int check_object(struct ctx *c, const struct elf_info *elf, const char *origin,
                        const char *who, struct cla_error *e)
{
    for (unsigned i = 0; i < elf->n_needed; i++) {
        int r = resolve(c, elf, origin, who, elfinfo_needed(elf, i), e);
        if (r < 0)
            return r;
    }
    return 0;
}

/* musl's loader reads /etc/ld-musl-<arch>.path in place of its default directories when it
 * exists. Read inside the target's root; absent or unreadable means the default, as for musl. */
static void read_musl_path(struct ctx *c)
{
    const char *arch = ldsearch_musl_arch(c->in->arch);
    if (c->in->libc != RID_LIBC_MUSL || !arch)
        return;
    char path[64];
    snprintf(path, sizeof(path), "/etc/ld-musl-%s.path", arch);
    _cleanup_close_ int fd = rootfs_open(c->in->rootfd, path, ROOTFS_REG, O_RDONLY, 0, NULL);
    if (fd < 0 || util_read_all(fd, MUSL_PATH_MAX, &c->musl_path, &c->musl_path_len) < 0)
        c->musl_path = NULL;
}

int depcheck_run(const struct depcheck_input *in, struct cla_error *e)
{
    struct ctx c = {.in = in};
    read_musl_path(&c);
    int r = 0;
    const struct profset_build *b = in->build;
    char origin[TARGET_PATH_MAX];
    /* $ORIGIN is the directory of the object that has the RUNPATH, as the target sees it: the
     * delivered file's directory, or each library's own directory inside the delivered one. */
    if (!b->dir) {
        const char *base = base_of(in->delivered);
        snprintf(origin, sizeof(origin), "%.*s", (int)(base - in->delivered - 1), in->delivered);
        r = check_object(&c, &b->elf, origin, base, e);
    }
    for (size_t i = 0; b->dir && r == 0 && i < b->dir->n; i++) {
        const struct profdir_file *f = &b->dir->files[i];
        if (!f->elf)
            continue;
        const char *base = base_of(f->path);
        snprintf(origin, sizeof(origin), "%s%s%.*s", in->delivered, base == f->path ? "" : "/",
                 (int)(base == f->path ? 0 : base - f->path - 1), f->path);
        r = check_object(&c, f->elf, origin, f->path, e);
    }
    free(c.mapped);
    free(c.musl_path);
    return r;
}
