/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a startup hook's referenced assemblies will be there for it: delivered with it, or in
 * a directory the app resolves assemblies from (its shared frameworks, its own directory), read
 * from the app's maps. Pure: no I/O; target_hookdeps.c looks in the app's view.
 */
#ifndef CLRATTACH_HOOKDEPS_H
#define CLRATTACH_HOOKDEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/assembly.h"
#include "profset/profdir.h"

/* Where the app resolves an assembly by name, as it sees them (its maps' text: render to show):
 * the shared framework of its runtime (libcoreclr.so's directory, Microsoft.NETCore.App/<ver>),
 * ASP.NET Core's beside it when the app has one of its assemblies mapped, and the directory of
 * its entry assembly. */
#define HOOKDEPS_DIRS_MAX 3
struct hookdeps_dirs {
    size_t n;
    char dir[HOOKDEPS_DIRS_MAX][TARGET_PATH_MAX];
};

/* Fills *ret from the maps text and the entry assembly's simple name (ProcessInfo2; NULL or not
 * a plain name: no app directory). n is 0 when no runtime library is mapped (a single-file
 * app): then nothing can be said. */
void hookdeps_dirs_from_maps(const char *maps, size_t len, const char *entry,
                             struct hookdeps_dirs *ret);

/* The references of `id` not delivered with the hook: with `pd` (the hook's directory, NULL when
 * it came alone), those without a file "<name>.dll" in the directory of pd's entry. Their
 * indexes into id->refs go to ret_idx (room for ASSEMBLY_REFS_MAX); returns how many. */
size_t hookdeps_undelivered(const struct assembly_identity *id, const struct profdir *pd,
                            size_t *ret_idx);

/* The refusal of a hook whose references `missing` (n of them, indexes into id->refs) are
 * neither delivered nor in `dirs`: e names them and where they were looked for, the hint the
 * next step. Returns -ENOENT. */
int hookdeps_refuse(const char *shown, const struct assembly_identity *id, const size_t *missing,
                    size_t n, const struct hookdeps_dirs *dirs, struct cla_error *e);

#endif
