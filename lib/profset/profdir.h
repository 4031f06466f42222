/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profiler directory: what vendor profilers ship (the CLR Instrumentation Engine with its
 * plugin and config, Datadog, OpenTelemetry, ...): an entry library that exports
 * DllGetClassObject, beside libraries it needs and files it finds relative to its own path. It
 * is delivered whole, names kept, under one content-addressed directory, so those relative
 * lookups keep working in the target's view.
 *
 * This module is the in-memory model, pure: files are added with their bytes, shared objects
 * are parsed, the entry is chosen and the tree's digest computed. It reads nothing itself:
 * profdir_read.h fills it, from a directory on disk or a tar stream, and is what a loader calls.
 * Caps: PROFDIR_FILES_MAX entries, PROFDIR_DEPTH_MAX levels, PROFILER_MAX_SIZE bytes in all.
 */
#ifndef CLRATTACH_PROFDIR_H
#define CLRATTACH_PROFDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bounds.h"
#include "profset/elfinfo.h"
#include "base/err.h"

struct profdir_file {
    char path[PROFDIR_PATH_MAX + 1]; /* relative, normalised ("lib/libhelper.so") */
    bool is_dir;
    bool executable; /* delivered 0555 rather than 0444 */
    uint8_t *data;   /* owned; NULL for a directory */
    size_t len;
    char sha256[65];      /* of the bytes; "" for a directory */
    struct elf_info *elf; /* owned; set for a shared object (a ".so" name that parses) */
};

struct profdir {
    struct profdir_file *files; /* sorted by path once profdir_seal() ran */
    size_t n, alloc;
    size_t total;    /* bytes of all files */
    size_t entry;    /* index of the entry library, valid after profdir_choose_entry() */
    char digest[65]; /* sha256 of the manifest (paths, kinds, modes, content hashes) */
};

/* Adds a file (taking ownership of `data`, malloc'd, also on failure) or, with data NULL and
 * is_dir, a directory. `path` must be normalised (tar_normalise_path). Parent directories are
 * added as needed. Returns 0, -E2BIG past a cap, -EEXIST for a repeated path, -ENOMEM. */
int profdir_add(struct profdir *pd, const char *path, bool is_dir, bool executable, uint8_t *data,
                size_t len, struct cla_error *e);

/* Sorts, hashes every file, parses every ".so"-named ELF shared object, and computes the
 * digest. Returns 0, -EINVAL when the tree holds no file, -ENOMEM. */
int profdir_seal(struct profdir *pd, struct cla_error *e);

/* Checks --entry's `want` and normalises it into `out` ("./lib//x.so" -> "lib/x.so"). Returns 0,
 * or -EINVAL for an absolute path, a ".." component, a control byte or an empty or overlong
 * name (the hint names `shown`, the directory it is relative to). */
int profdir_entry_path(const char *want, const char *shown, char out[PROFDIR_PATH_MAX + 1],
                       struct cla_error *e);

/* Chooses the entry library: `want` (a relative path, "./" allowed, or a file name that is
 * unique in the tree; profdir_entry_path()) when given, else the only shared object that exports
 * DllGetClassObject. Returns 0, or -EINVAL naming the candidates (none, several, `want` absent or
 * not a profiler). `shown` names the directory in messages. */
int profdir_choose_entry(struct profdir *pd, const char *want, const char *shown,
                         struct cla_error *e);

void profdir_free(struct profdir *pd);

#endif
