/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_DELIVER_H
#define CLRATTACH_DELIVER_H

/*
 * Placing the profiler inside the target's filesystem view. The target is hostile: every path
 * is resolved below its root without following links (rootfs.h), the file is created under a
 * fresh temporary name with O_EXCL, written, synced, read back and hashed, then renamed to a
 * content-addressed name without replacing anything. An identical file already there is reused;
 * a different one is never overwritten (rewriting a mapped .so crashes the process using it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "caps.h"
#include "err.h"

struct deliver_opts {
    const uint8_t *data; /* the profiler's bytes */
    size_t len;
    const char *basename; /* "libclrprobe.so": names the file; sanitised */
    const char *dir;      /* absolute directory as the target sees it */
    uid_t uid;            /* the owner the file must have: the target's user */
};

struct deliver_result {
    char path[TARGET_PATH_MAX]; /* the path as the target sees it: what the runtime dlopen()s */
    char sha256[65];
    bool reused;
};

/* Builds "<stem>-<first 16 hex of the hash>.so" from a basename, keeping [A-Za-z0-9._-] and at
 * most 64 bytes of the stem. Pure. Returns 0 or -ENAMETOOLONG. */
int deliver_final_name(const char *basename, const char *sha256_hex, char *out, size_t size);

/* Delivers into `dir` below `rootfd`. Returns 0 and fills *ret; -EEXIST when a different file
 * holds the name; -ELOOP/-ENOTDIR for links on the way; -EACCES/-EROFS/-ENOSPC from the target's
 * filesystem; -EIO when the read-back differs. Nothing of ours is left behind on failure. */
int deliver_profiler(int rootfd, const struct deliver_opts *o, struct deliver_result *ret,
                     struct cla_error *e);

/* Hashes a whole file descriptor from offset 0 (at most PROFILER_MAX_SIZE bytes) into hex.
 * Returns the size, or a negative errno. */
int64_t deliver_hash_fd(int fd, char hex[65]);

#endif
