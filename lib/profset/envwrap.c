/* SPDX-License-Identifier: Apache-2.0 */
/* The delivered directory of our own: the profiler (a single file or its whole tree), the env
 * loader built into clrattach for the target's libc, and the loader's settings file. */
#include "profset/envwrap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The loaders, embedded at build time (the Makefile's envload_blob.S: .incbin of the glibc and
 * the musl build of profiler/envload.c, for the CPU clrattach is built for). */
extern const uint8_t clrattach_envload_glibc[], clrattach_envload_glibc_end[];
extern const uint8_t clrattach_envload_musl[], clrattach_envload_musl_end[];

#if defined(__x86_64__)
#define OWN_ARCH RID_ARCH_X64
#elif defined(__aarch64__)
#define OWN_ARCH RID_ARCH_ARM64
#else
#define OWN_ARCH RID_ARCH_UNKNOWN
#endif

/* Bytes between two labels of the blob (as addresses: they are two symbols to the compiler). */
static size_t span(const uint8_t *start, const uint8_t *end)
{
    return (size_t)((uintptr_t)end - (uintptr_t)start);
}

int envwrap_loader(enum rid_libc libc, enum rid_arch arch, const uint8_t **ret_data,
                   size_t *ret_len, struct cla_error *e)
{
    if (arch != RID_ARCH_UNKNOWN && arch != OWN_ARCH) {
        err_set(e, -ENOENT,
                "--env: the settings reach the profiler through clrattach's env loader, built "
                "for %s only, and the target runs %s",
                rid_arch_name(OWN_ARCH), rid_arch_name(arch));
        return err_hint(e, "run the clrattach built for %s", rid_arch_name(arch));
    }
    if (libc == RID_LIBC_GLIBC) {
        *ret_data = clrattach_envload_glibc;
        *ret_len = span(clrattach_envload_glibc, clrattach_envload_glibc_end);
    } else if (libc == RID_LIBC_MUSL) {
        *ret_data = clrattach_envload_musl;
        *ret_len = span(clrattach_envload_musl, clrattach_envload_musl_end);
    } else {
        err_set(e, -ENOENT,
                "--env: the target's C library is unknown, so the env loader that would hand "
                "the settings to the profiler cannot be chosen");
        return err_hint(e, "pass --rid (linux-x64 for glibc, linux-musl-x64 for musl)");
    }
    return 0;
}

int envwrap_conf(const char *real, const char *const *env, size_t env_count, char *out, size_t size)
{
    size_t used = 0;
    int w = snprintf(out, size, "clrenvload 1\nprofiler=%s\n", real);
    if (w < 0 || (size_t)w >= size)
        return -E2BIG;
    used = (size_t)w;
    for (size_t i = 0; i < env_count; i++) {
        w = snprintf(out + used, size - used, "%s\n", env[i]);
        if (w < 0 || (size_t)w >= size - used)
            return -E2BIG;
        used += (size_t)w;
    }
    return (int)used;
}

/* A copy of `len` bytes added to `pd` as `path` (profdir_add takes ownership). */
static int add_copy(struct profdir *pd, const char *path, bool is_dir, bool executable,
                    const uint8_t *data, size_t len, struct cla_error *e)
{
    uint8_t *copy = NULL;
    if (!is_dir) {
        if (!(copy = malloc(len ? len : 1)))
            return err_set(e, -ENOMEM, "out of memory");
        if (len)
            memcpy(copy, data, len);
    }
    return profdir_add(pd, path, is_dir, executable, copy, len, e);
}

/* The profiler's files, names kept: a directory build's tree, or the single file. */
static int add_profiler(struct profdir *pd, const struct profset_build *b, char *real, size_t size,
                        struct cla_error *e)
{
    if (!b->dir) {
        snprintf(real, size, "%s", b->name);
        return add_copy(pd, b->name, false, false, b->data, b->len, e);
    }
    snprintf(real, size, "%s", b->dir->files[b->dir->entry].path);
    for (size_t i = 0; i < b->dir->n; i++) {
        const struct profdir_file *f = &b->dir->files[i];
        if (strcmp(f->path, ENVWRAP_LOADER_NAME) == 0 || strcmp(f->path, ENVWRAP_CONF_NAME) == 0)
            return err_set(e, -EEXIST,
                           "the profiler directory has its own '%s', where clrattach's env "
                           "loader goes",
                           f->path);
        int r = add_copy(pd, f->path, f->is_dir, f->executable, f->data, f->len, e);
        if (r < 0)
            return r;
    }
    return 0;
}

static int add_loader(struct profdir *pd, const struct profset_build *b, const struct rid *rid,
                      const char *real, const char *const *env, size_t env_count,
                      struct cla_error *e)
{
    const uint8_t *data;
    size_t len;
    enum rid_libc libc = rid->libc != RID_LIBC_UNKNOWN ? rid->libc : b->elf.libc;
    int r = envwrap_loader(libc, rid->arch, &data, &len, e);
    if (r < 0)
        return r;
    if ((r = add_copy(pd, ENVWRAP_LOADER_NAME, false, false, data, len, e)) < 0)
        return r;
    /* At most ENV_VARS_MAX lines of ENV_VAR_BYTES_MAX, and the profiler's relative path. */
    size_t cap = 64 + PROFDIR_PATH_MAX + ENV_VARS_MAX * (ENV_VAR_BYTES_MAX + 1);
    char *conf = malloc(cap);
    if (!conf)
        return err_set(e, -ENOMEM, "out of memory");
    int n = envwrap_conf(real, env, env_count, conf, cap);
    if (n < 0) {
        free(conf);
        return err_set(e, -E2BIG, "--env: the env loader's settings are over %zu bytes", cap);
    }
    return profdir_add(pd, ENVWRAP_CONF_NAME, false, false, (uint8_t *)conf, (size_t)n, e);
}

int envwrap_build(const struct profset_build *b, const struct rid *rid, bool loader,
                  const char *const *env, size_t env_count, struct envwrap *ret,
                  struct cla_error *e)
{
    memset(ret, 0, sizeof(*ret));
    if (env_count > ENV_VARS_MAX)
        return err_set(e, -E2BIG, "--env: %zu variables with the vendor's own, over %d", env_count,
                       ENV_VARS_MAX);
    struct profdir *pd = calloc(1, sizeof(*pd));
    if (!pd)
        return err_set(e, -ENOMEM, "out of memory");
    int r = add_profiler(pd, b, ret->real, sizeof(ret->real), e);
    if (r == 0 && loader)
        r = add_loader(pd, b, rid, ret->real, env, env_count, e);
    if (r == 0)
        r = profdir_seal(pd, e);
    if (r == 0)
        r = profdir_choose_entry(pd, loader ? ENVWRAP_LOADER_NAME : ret->real,
                                 "the delivered directory", e);
    if (r < 0) {
        profdir_free(pd);
        free(pd);
        return r;
    }
    if (!pd->files[pd->entry].elf) {
        profdir_free(pd);
        free(pd);
        return err_set(e, -EINVAL, "the profiler '%s' is not a shared object", ret->real);
    }
    memcpy(ret->build.variant, b->variant, sizeof(ret->build.variant));
    ret->build.dir = pd;
    ret->build.elf = *pd->files[pd->entry].elf;
    ret->loader = loader;
    return 0;
}

void envwrap_free(struct envwrap *w)
{
    if (w->build.dir) {
        profdir_free(w->build.dir);
        free(w->build.dir);
        w->build.dir = NULL;
    }
}
