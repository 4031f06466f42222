/* SPDX-License-Identifier: Apache-2.0 */
/* What deliver.c and deliver_publish.c share: our temporary file, the steps that put it under a
 * name, and the test hooks; nothing outside lib/deliver/deliver*.c includes it. */
#ifndef CLRATTACH_DELIVER_INTERNAL_H
#define CLRATTACH_DELIVER_INTERNAL_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/err.h"
#include "deliver/deliver.h"

/* Our temporary file: created on first need, filled and verified; `fd` -1 until then. */
struct deliver_temp {
    int fd;
    struct stat st;
    char name[96];
};

/* Puts our bytes under `name` in `dirfd`: reuses an identical file there (1), or publishes our
 * temporary `t`, made on first need, under it (0); DELIVER_SQUATTED when another uid holds it
 * (its uid in *ret_uid); < 0 refused. */
int deliver_put(int dirfd, const struct deliver_opts *o, const char *sha256, const char *name,
                struct deliver_temp *t, uid_t *ret_uid, struct cla_error *e);

/* The usual name `name` is another uid's: an earlier fallback of ours is reused (1), or `t` is
 * published under a fresh one (0); `name` (of `size` bytes) becomes the name used. */
int deliver_put_fallback(int dirfd, const struct deliver_opts *o, const char *sha256, char *name,
                         size_t size, struct deliver_temp *t, struct cla_error *e);

/* The hooks deliver_set_test_hooks() set (all off outside tests). */
const struct deliver_test_hooks *deliver_hooks(void);

#endif
