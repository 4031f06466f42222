/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The build actually delivered when settings must reach the profiler's getenv() (--env, a known
 * vendor's startup settings) or {dir} is asked of a single file: a directory of our own holding
 * the profiler, the env loader for the target's libc (built into clrattach) and its settings.
 */
#ifndef CLRATTACH_ENVWRAP_H
#define CLRATTACH_ENVWRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "profset/profset.h"
#include "profset/rid.h"

/* The loader's file name in the directory, and its settings file's (profiler/envload_conf.h). */
#define ENVWRAP_LOADER_NAME "libclrenvload.so"
#define ENVWRAP_CONF_NAME   "clrenvload.conf"

struct envwrap {
    struct profset_build build; /* a directory build: its entry the loader, or the profiler */
    /* The real profiler's path inside the directory ("lib/libx.so"): {entry} is the directory
     * joined with it, and the maps are searched for its name. */
    char real[PROFDIR_PATH_MAX + 1];
    bool loader; /* the env loader is the entry */
};

/* The env loader built into clrattach for a target of `libc` (glibc or musl) on clrattach's own
 * CPU: its bytes, or -ENOENT when `libc` is unknown or `arch` (known) is another CPU's, with a
 * message and the next step. */
int envwrap_loader(enum rid_libc libc, enum rid_arch arch, const uint8_t **ret_data,
                   size_t *ret_len, struct cla_error *e);

/* Wraps build `b` for a target of `rid`: with `loader`, the loader chosen by the target's libc
 * (else the build's own) and a clrenvload.conf naming the profiler and each of the `env_count`
 * "NAME=VALUE" (checked already, names unique; {dir}/{entry} left for the loader to expand
 * where it lands); without, the profiler alone in a directory. Returns 0 with *ret filled (free
 * with envwrap_free()), or a negative errno with e set. */
int envwrap_build(const struct profset_build *b, const struct rid *rid, bool loader,
                  const char *const *env, size_t env_count, struct envwrap *ret,
                  struct cla_error *e);

/* The conf file's bytes (pure, for tests): "clrenvload 1\nprofiler=REAL\n" then each variable
 * on its line. Returns the length written (at most `size`), or -E2BIG. */
int envwrap_conf(const char *real, const char *const *env, size_t env_count, char *out,
                 size_t size);

void envwrap_free(struct envwrap *w);

#endif
