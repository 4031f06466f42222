/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profiler as the operator gave it:
 *   - one shared object;
 *   - a profiler directory: the profiler with the files it needs (profdir.h), for any RID;
 *   - a bundle: nothing but one build per runtime identifier (linux-x64/, linux-musl-x64/, ...),
 *     each either a single .so or a profiler directory;
 *   - a home (profhome.h): RID folders beside other files or folders (OpenTelemetry's linux-x64/
 *     beside net/ and LICENSE), delivered whole, the entry the library in the target's RID folder;
 *   - a NuGet package root, or its runtimes/ folder: runtimes/<rid>/native/ per RID;
 *   - "-": a .so or a tar stream of a profiler directory on stdin.
 * Every build is read and its ELF headers inspected up front, on our side and as ourselves; the
 * build for a target is then chosen by its RID, and one that cannot load there (wrong machine,
 * wrong libc) is refused before anything is sent: the runtime's only answer would be 0x8007007E.
 */
#ifndef CLRATTACH_PROFSET_H
#define CLRATTACH_PROFSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profset/elfinfo.h"
#include "base/err.h"
#include "profset/profdir.h"
#include "profset/rid.h"

#define PROFSET_MAX 8

struct profset_build {
    char variant[32]; /* RID of a bundle build ("linux-musl-x64"), "" otherwise */
    char name[256];   /* a single file's name, for its content-addressed name in the target */
    uint8_t *data;    /* a single file's bytes (NULL for a directory build) */
    size_t len;
    struct elf_info elf; /* of the single file, or of a directory's entry library */
    struct profdir *dir; /* a directory build: delivered whole (deliver_dir.h); else NULL */
    bool dir_shared;     /* `dir`'s files are another build's (a home's RID builds share one) */
};

struct profset {
    bool bundle;                  /* builds are per RID */
    const char *layout;           /* "file", "directory", "bundle", "home", "nuget" or "stdin" */
    struct profset_build *builds; /* n of them (at most PROFSET_MAX), each on the heap: a
                                     build is 6 KiB and most sets hold one */
    size_t n;
};

/* Loads `path` (see above; "-" reads stdin). `entry` (--entry, may be NULL) names the profiler
 * library inside a directory build, a relative path ("./" allowed, never ".." nor absolute) or a
 * name unique in it; without it the only library exporting DllGetClassObject is chosen. In a
 * home, a path makes one build for every RID, a bare name is looked for in each RID folder. A
 * build directory holding one .so and nothing else is a single-file build. Returns 0,
 * or -EINVAL (not ELF, not a shared object, no build, no or several entry candidates), -ENOENT,
 * -EFBIG, -E2BIG (over the caps). Free with profset_free(). */
int profset_load(const char *path, const char *entry, struct profset *ret, struct cla_error *e);

/* Loads a .so or a tar stream from `fd` (at most PROFILER_MAX_SIZE bytes). As profset_load(). */
int profset_load_fd(int fd, const char *entry, struct profset *ret, struct cla_error *e);

void profset_free(struct profset *ps);

/* Picks the build for `rid` (its libc and arch may be unknown). From a bundle: the first
 * rid_bundle_names() entry present, -ENOENT when the RID is unknown or has no build. A single
 * file: itself, or -EXDEV when its ELF machine or libc is known to differ from the target's.
 * The message names both sides; the hint says what to do. */
int profset_choose(const struct profset *ps, const struct rid *rid,
                   const struct profset_build **ret, struct cla_error *e);

#endif
