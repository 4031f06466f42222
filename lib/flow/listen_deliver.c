/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s delivery step: the build for the runtime's identifier written into the shared
 * directory, named as the app sees it (--app-dir), its dependencies checked as far as can be
 * known without the app's root, and removed again after a refusal.
 */
#include "flow/listen_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/render.h"
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"
#include "deliver/placeholders.h"
#include "profset/elfinfo.h"
#include "profset/envwrap.h"
#include "profset/profdir.h"
#include "profset/rid.h"

/* "<app-dir>/<name>": the path the runtime is given, from what we delivered below our fd. */
static int app_view(const struct listen_opts *o, const char *ours, char *out, size_t size)
{
    const char *app = o->app_dir ? o->app_dir : o->deliver_dir;
    size_t n = strlen(app);
    while (n > 1 && app[n - 1] == '/')
        n--;
    int w = snprintf(out, size, "%.*s%s", (int)n, app, ours);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

/* Libraries every .NET app on Linux has loaded before a profiler comes: the runtime itself needs
 * them (the C library and its loader, libm, libdl, libpthread, librt, libgcc_s, libstdc++). */
static bool base_library(const char *name)
{
    static const char *const base[] = {
        "libc.so", "libm.so",   "libdl.so",  "libpthread.so", "librt.so",      "ld-linux",
        "ld-musl", "libc.musl", "libgcc_s.", "libstdc++.so",  "linux-vdso.so", "ld64.so"};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (strncmp(name, base[i], strlen(base[i])) == 0)
            return true;
    return false;
}

/* Is `name` a file of the profiler directory in one of `runpath`'s $ORIGIN directories, $ORIGIN
 * being `dir` (the needing file's directory in the profiler directory, "" for its top)? */
static bool in_origin(const struct profdir *pd, const char *dir, const char *runpath,
                      const char *name)
{
    char entry[ELF_RUNPATH_MAX + 1];
    for (const char *p = runpath; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(entry, sizeof(entry), "%.*s", (int)n, p);
        p += n + (p[n] == ':');
        const char *rest = NULL;
        if (strncmp(entry, "$ORIGIN", 7) == 0)
            rest = entry + 7;
        else if (strncmp(entry, "${ORIGIN}", 9) == 0)
            rest = entry + 9;
        if (!rest || (*rest && *rest != '/'))
            continue;
        char want[PROFDIR_PATH_MAX + ELF_RUNPATH_MAX + ELF_NEEDED_BYTES + 3];
        snprintf(want, sizeof(want), "%s%s%s/%s", dir, *dir ? "/" : "", rest[0] ? rest + 1 : "",
                 name);
        /* "a//b" and a trailing "/." as the loader reads them; ".." is not followed (a
         * profiler directory keeps its libraries below itself). */
        char norm[sizeof(want)];
        size_t o = 0;
        for (const char *c = want; *c; c++)
            if (!(*c == '/' && (o == 0 || norm[o - 1] == '/')))
                norm[o++] = *c;
        norm[o] = '\0';
        for (size_t i = 0; i < pd->n; i++)
            if (!pd->files[i].is_dir && strcmp(pd->files[i].path, norm) == 0)
                return true;
    }
    return false;
}

/* The dependency check of what can be known without the app's root: every DT_NEEDED of what is
 * delivered is a library every .NET app has, or a file delivered with it (RUNPATH $ORIGIN).
 * Anything else may or may not be in the app's image: named in the result, never a refusal. */
static void known_dependencies(const struct profset_build *b, char *note, size_t size)
{
    size_t nfiles = b->dir ? b->dir->n : 1;
    for (size_t f = 0; f < nfiles; f++) {
        const struct elf_info *ei = b->dir ? b->dir->files[f].elf : &b->elf;
        if (!ei)
            continue;
        const char *who = b->dir ? b->dir->files[f].path : b->name;
        char dir[PROFDIR_PATH_MAX + 1] = "";
        const char *slash = strrchr(who, '/');
        if (b->dir && slash)
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - who), who);
        const char *name = ei->needed;
        for (unsigned i = 0; i < ei->n_needed; i++, name += strlen(name) + 1) {
            if (base_library(name) || (b->dir && in_origin(b->dir, dir, ei->runpath, name)))
                continue;
            /* A note cut short still says what it is. */
            int n = snprintf(note, size,
                             "not checked: %.48s (needed by %.64s): not delivered with the "
                             "profiler nor a runtime library; the app's files are not visible",
                             name, who);
            (void)n;
            return;
        }
    }
    snprintf(note, size,
             "checked against the delivered files and the runtime's own libraries only: the app's "
             "filesystem is not visible from a listening clrattach");
}

/* A wrapped delivery: the loader is what the runtime is given, {entry} the real profiler. */
static int wrapped_paths(struct inst *in, const struct envwrap *w, struct cla_error *e)
{
    if (w->loader)
        snprintf(in->load_path, sizeof(in->load_path), "%s", in->app_path);
    int n = snprintf(in->app_path, sizeof(in->app_path), "%s/%s", in->app_dir, w->real);
    if (n < 0 || (size_t)n >= sizeof(in->app_path))
        return err_set(e, -ENAMETOOLONG, "listen: --app-dir and the name are too long");
    render_text(in->app_path, strlen(in->app_path), in->res.delivered_path,
                sizeof(in->res.delivered_path));
    render_text(in->load_path, strlen(in->load_path), in->res.loader_path,
                sizeof(in->res.loader_path));
    return 0;
}

/* `b` written into the shared directory (below). */
static int deliver_build(struct loop *l, struct inst *in, const struct profset_build *b,
                         struct cla_error *e)
{
    const struct listen_opts *o = l->o;
    struct attach_result *res = &in->res;
    int r;
    /* Ours, read-only for everyone: the app (another uid, most often) reads and maps it and
     * can neither rewrite nor remove it; a sidecar running as the app's uid makes it the app's. */
    uid_t uid = geteuid();
    char nonce[DELIVER_NONCE_LEN + 1];
    if ((r = deliver_new_nonce(nonce)) < 0)
        return err_setsys(e, r, "getrandom");
    if (b->dir) {
        struct deliver_dir_opts dopts = {.pd = b->dir, .dir = "/", .uid = uid, .nonce = nonce};
        struct deliver_dir_result dr;
        if ((r = deliver_dir(l->dirfd, &dopts, &dr, e)) < 0)
            return r;
        snprintf(in->ours, sizeof(in->ours), "%s", dr.path);
        memcpy(res->sha256, b->dir->digest, sizeof(res->sha256));
        in->reused = dr.reused, in->dev = dr.dev, in->ino = dr.ino;
        if (app_view(o, dr.entry, in->app_path, sizeof(in->app_path)) < 0 ||
            app_view(o, dr.path, in->app_dir, sizeof(in->app_dir)) < 0)
            return err_set(e, -ENAMETOOLONG, "listen: --app-dir and the name are too long");
        render_text(in->app_dir, strlen(in->app_dir), res->delivered_dir,
                    sizeof(res->delivered_dir));
    } else {
        struct deliver_opts dopts = {.data = b->data,
                                     .len = b->len,
                                     .basename = b->name,
                                     .dir = "/",
                                     .uid = uid,
                                     .nonce = nonce};
        struct deliver_result dr;
        if ((r = deliver_profiler(l->dirfd, &dopts, &dr, e)) < 0)
            return r;
        snprintf(in->ours, sizeof(in->ours), "%s", dr.path);
        memcpy(res->sha256, dr.sha256, sizeof(res->sha256));
        in->reused = dr.reused, in->dev = dr.dev, in->ino = dr.ino;
        if (app_view(o, dr.path, in->app_path, sizeof(in->app_path)) < 0 ||
            app_view(o, "", in->app_dir, sizeof(in->app_dir)) < 0)
            return err_set(e, -ENAMETOOLONG, "listen: --app-dir and the name are too long");
    }
    in->delivered = true;
    res->reused = in->reused;
    render_text(in->app_path, strlen(in->app_path), res->delivered_path,
                sizeof(res->delivered_path));
    return 0;
}

/* The build for the runtime's identifier (ProcessInfo3, or --rid), delivered into the shared
 * directory with every guarantee delivery has (deliver.h): exclusive creation, verification
 * through the fd that wrote it, no link followed, nothing overwritten. */
int listen_deliver(struct loop *l, struct inst *in, struct cla_error *e)
{
    const struct listen_opts *o = l->o;
    struct attach_result *res = &in->res;
    struct rid rid = {0};
    const char *rid_s = o->rid;
    if ((!rid_s || !o->force_rid) && in->pi.runtime_identifier && in->pi.runtime_identifier[0])
        rid_s = in->pi.runtime_identifier;
    res->rid_source = rid_s == o->rid && rid_s ? "--rid" : "runtime";
    if (rid_s && rid_parse(rid_s, &rid) < 0)
        memset(&rid, 0, sizeof(rid));
    snprintf(res->target_rid, sizeof(res->target_rid), "%s", rid.portable);
    const struct profset_build *b;
    int r = profset_choose(&l->ps, &rid, &b, e);
    if (r < 0)
        return r;
    memcpy(res->variant, b->variant, sizeof(res->variant));
    /* With --env, the profiler goes with the env loader for the runtime's libc (envwrap.h). */
    struct envwrap w = {0};
    bool dir = placeholders_has(o->client_data, o->client_data_len, "dir");
    for (size_t i = 0; i < l->env_count && !dir; i++)
        dir = placeholders_has((const uint8_t *)l->env[i], strlen(l->env[i]), "dir");
    if (l->env_count || (dir && !b->dir)) {
        if ((r = envwrap_build(b, &rid, l->env_count > 0, l->env, l->env_count, &w, e)) < 0)
            return r;
        b = &w.build;
    }
    r = deliver_build(l, in, b, e);
    if (r == 0 && w.build.dir)
        r = wrapped_paths(in, &w, e);
    if (r == 0)
        /* Without the app's root, its loader's directories cannot be searched: what the
         * profiler needs beside the runtime's own libraries must come with it (RUNPATH
         * $ORIGIN). */
        known_dependencies(b, res->dependency_note, sizeof(res->dependency_note));
    envwrap_free(&w);
    return r;
}

/* What the runtime refused is removed, unless --keep (nothing maps it). */
void listen_undo(struct loop *l, struct inst *in)
{
    if (!in->delivered || in->reused || l->o->keep)
        return;
    in->res.removed = deliver_undo(l->dirfd, in->ours, in->dev, in->ino, NULL) == 0;
}
