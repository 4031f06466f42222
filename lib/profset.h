/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_PROFSET_H
#define CLRATTACH_PROFSET_H

/*
 * The profiler as the user gave it: one shared object, or a bundle directory with one build per
 * runtime identifier (linux-x64/, linux-musl-x64/, linux-arm64/, ...). Every build is read and
 * its ELF header inspected up front, on our side and as ourselves; the build for a target is then
 * chosen by its RID, and a single .so that cannot load there (wrong machine, wrong libc) is
 * refused before anything is sent: the runtime's only answer would be 0x8007007E.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elfinfo.h"
#include "err.h"
#include "rid.h"

#define PROFSET_MAX 8

struct profset_build {
    char variant[32]; /* bundle subdirectory ("linux-musl-x64"), "" for a single file */
    char name[256];   /* file name, for the content-addressed name in the target */
    uint8_t *data;
    size_t len;
    struct elf_info elf;
};

struct profset {
    bool bundle;
    struct profset_build builds[PROFSET_MAX];
    size_t n;
};

/* Loads `path`: a regular file (one build), or a directory whose known RID subdirectories each
 * hold exactly one *.so. Returns 0, or -EINVAL (not ELF, not a shared object, an empty bundle,
 * a subdirectory with several .so files), -ENOENT, -EFBIG. Free with profset_free(). */
int profset_load(const char *path, struct profset *ret, struct cla_error *e);

void profset_free(struct profset *ps);

/* Picks the build for `rid` (its libc and arch may be unknown). From a bundle: the first
 * rid_bundle_names() entry present, -ENOENT when the RID is unknown or has no build. A single
 * file: itself, or -EXDEV when its ELF machine or libc is known to differ from the target's.
 * The message names both sides; the hint says what to do. */
int profset_choose(const struct profset *ps, const struct rid *rid,
                   const struct profset_build **ret, struct cla_error *e);

#endif
