/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_DELIVER_H
#define CLRATTACH_DELIVER_H

/*
 * Placing the profiler inside the target's filesystem view. The target is hostile: every path
 * is resolved below its root without following links, and nothing that is not a regular file is
 * ever opened (rootfs.h). The file is created under a fresh temporary name with O_EXCL, written,
 * synced, checked and read back through the fd it was created with (its name is never looked up
 * again), then linked by that fd to a content-addressed name without replacing anything. An
 * identical file already there is reused; anything else is never overwritten (rewriting a mapped
 * .so crashes the process using it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"

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
    uint64_t dev, ino; /* the file this run created (reused: 0), for deliver_undo() */
};

/* Builds "<stem>-<first 16 hex of the hash>.so" from a basename, keeping [A-Za-z0-9._-] and at
 * most 64 bytes of the stem. Pure. Returns 0 or -ENAMETOOLONG. */
int deliver_final_name(const char *basename, const char *sha256_hex, char *out, size_t size);

/* Delivers into `dir` below `rootfd`. Returns 0 and fills *ret; -EEXIST when a different file,
 * or something that is not a regular file (FIFO, device, directory, socket), holds the name;
 * -ELOOP/-ENOTDIR for links on the way; -EACCES/-EROFS/-ENOSPC from the target's filesystem;
 * -EIO when the read-back differs or the target replaced the temporary file meanwhile. Nothing
 * of ours is left behind on failure, and nothing of the target's is removed. */
int deliver_profiler(int rootfd, const struct deliver_opts *o, struct deliver_result *ret,
                     struct cla_error *e);

/* Building blocks shared with deliver_dir.c. deliver_fill() writes o->data into the freshly
 * created `fd` (created as `st`, named `name` in messages) and verifies it through that fd only:
 * same inode, still linked, regular, owned by o->uid, exactly the o->len bytes of o->data.
 * deliver_is_ours() tells whether `name` in `dirfd` is the inode `ours` (pinned O_PATH, nothing
 * followed); deliver_remove_if_ours() unlinks it only then. */
int deliver_fill(int fd, const struct stat *st, const struct deliver_opts *o, const char *name,
                 struct cla_error *e);
bool deliver_is_ours(int dirfd, const char *name, const struct stat *ours);
void deliver_remove_if_ours(int dirfd, const char *name, const struct stat *ours);

/* Hashes a whole file descriptor from offset 0 (at most PROFILER_MAX_SIZE bytes) into hex.
 * Returns the size, or a negative errno. */
int64_t deliver_hash_fd(int fd, char hex[65]);

/* Tests only: `before_publish` runs right before the temporary file gets its final name (so a
 * test can swap it as a hostile target would); `force_rename` skips the link-by-fd and publishes
 * by renameat2(RENAME_NOREPLACE), as on a filesystem without hard links. NULL resets. */
struct deliver_test_hooks {
    void (*before_publish)(int dirfd, const char *tmp_name, void *arg);
    void *arg;
    bool force_rename;
};
void deliver_set_test_hooks(const struct deliver_test_hooks *h);

#endif
