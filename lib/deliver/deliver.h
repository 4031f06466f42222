/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placing the profiler inside the target's filesystem view. The target is hostile: every path
 * is resolved below its root without following links, and nothing that is not a regular file is
 * ever opened (rootfs.h). The file is created under a fresh temporary name with O_EXCL, written,
 * synced, checked and read back through the fd it was created with (its name is never looked up
 * again), then linked by that fd to a content-addressed name without replacing anything. An
 * identical file already there is reused; anything else is never overwritten (rewriting a mapped
 * .so crashes the process using it).
 *
 * The content-addressed name is predictable: anyone with the .so can compute it. Where another
 * uid shares the directory (an emptyDir of mode 0777 shared by two apps), it can hold the name
 * first, with our very bytes, and would keep the power to rewrite them under the target. So an
 * entry there owned by a uid that is neither the target's nor root is left alone, and so is any
 * entry we would refuse in a directory where others may rename entries (no sticky bit: it may be
 * the target's own file, renamed over our name by a co-tenant); the profiler then goes under a
 * fallback name of ours, "<usual stem>-<16 random hex>", which nobody can predict or hold in
 * advance. An earlier fallback is reused only when reuse would be allowed under the usual name
 * (the target's or root's, writable by no one else, our exact bytes).
 *
 * A delivery that was killed leaves its temporary behind, ".clrattach-<16 hex of the digest>-
 * <16 hex of a nonce>.tmp" (a file) or ".tmpdir" (a directory of deliver_dir.h), in the target's
 * tmpfs, that is its memory. Every delivery first sweeps those of the directory it writes into
 * that are ours beyond doubt: our exact name pattern, the right type, owned by the target's uid
 * we act as, unchanged for DELIVER_STALE_AFTER_S; removed without following any link and within
 * the caps of bounds.h.
 */
#ifndef CLRATTACH_DELIVER_H
#define CLRATTACH_DELIVER_H

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
    /* DELIVER_NONCE_LEN lowercase hex naming this run's temporary (deliver_new_nonce()), so a
     * caller that must stop mid-way, or a parent that killed it, can remove it with
     * deliver_sweep(); NULL: a fresh one. One per run: two runs with one nonce collide. */
    const char *nonce;
};

struct deliver_result {
    char path[TARGET_PATH_MAX]; /* the path as the target sees it: what the runtime dlopen()s */
    char sha256[65];
    bool reused;
    uint64_t dev, ino; /* the file this run created (reused: 0), for deliver_undo() */
    /* The content-addressed name was held by an entry of squatter_uid that we left alone (of
     * another uid, or refused in a directory others may write): `path` is a fallback name of
     * ours, created or reused. */
    bool squatted;
    uid_t squatter_uid;
};

#define DELIVER_NONCE_LEN 16

/* A fresh nonce for deliver_opts/deliver_dir_opts: DELIVER_NONCE_LEN lowercase hex from
 * getrandom(). Returns 0 or a negative errno. */
int deliver_new_nonce(char out[DELIVER_NONCE_LEN + 1]);

/* NULL, or DELIVER_NONCE_LEN lowercase hex: what deliver_opts.nonce may be. */
bool deliver_nonce_valid(const char *nonce);

/* Removes temporaries of deliveries into `dir` below `rootfd` (every path resolved as for a
 * delivery): with `nonce` NULL the stale ones, as every delivery does first; with a nonce those
 * of the run that used it, whatever their age (it was stopped or killed: nothing else writes
 * them). Only our exact name pattern of the right type, owned by `uid` (the target's user, whom
 * the caller acts as), removed through directory fds without following a link, within the caps
 * of bounds.h. Returns the number of files and directories removed (or tried: each costs one of
 * DELIVER_SWEEP_REMOVE_MAX), or a negative errno (-EINVAL
 * for a nonce deliver_nonce_valid() refuses; the directory could not be opened or listed). */
int deliver_sweep(int rootfd, const char *dir, uid_t uid, const char *nonce, struct cla_error *e);

/* Builds "<stem>-<first 16 hex of the hash>.so" from a basename, keeping [A-Za-z0-9._-] and at
 * most 64 bytes of the stem; a basename ending in ".dll" (a managed assembly) keeps that
 * extension instead. Pure. Returns 0 or -ENAMETOOLONG. */
int deliver_final_name(const char *basename, const char *sha256_hex, char *out, size_t size);

/* Delivers into `dir` below `rootfd`. Returns 0 and fills *ret; -EEXIST when a different file,
 * or something that is not a regular file (FIFO, device, directory, socket), of the target's uid
 * or root holds the name in a directory no one else may rename entries in (else: the fallback);
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

/* Opens what holds the final name `name` in `dirfd` (a directory when `dir`, else a regular file;
 * O_RDONLY, typed as rootfs_open() does) and says whose it is: 0 nothing is there; DELIVER_SQUATTED
 * another uid's entry, whatever it is (its owner read without opening it; the uid in *ret_uid),
 * left alone; 1 anything else, for the caller to judge: *ret_fd the fd or rootfs_open()'s negative
 * errno (message in e), *ret_st its stat (zeroed when unknown). e is cleared but for the last. */
#define DELIVER_SQUATTED 2
int deliver_probe_open(int dirfd, const char *name, bool dir, uid_t uid, int *ret_fd,
                       struct stat *ret_st, uid_t *ret_uid, struct cla_error *e);

/* Ends a probe that refused what holds the name (r < 0, message in e). A conflict (-EEXIST,
 * -ELOOP) becomes DELIVER_SQUATTED (the owner of `held` in *ret_uid, e cleared) when uids other
 * than `uid` and root may add or rename entries in the directory: group or others may write it
 * without the sticky bit holding each to its own, or another uid owns it. The entry, whoever owns
 * it, may then be one of the target's own files renamed over our name by a co-tenant. Otherwise
 * only the target's user or root can have put it there: returns r, with the next step. */
int deliver_refused(int dirfd, uid_t uid, int r, const struct stat *held, uid_t *ret_uid,
                    struct cla_error *e);

/* Whom an entry under our name belongs to. deliver_foreign(): to a uid that is neither `uid` (the
 * target's) nor root, a squatter as far as we can tell, whatever the entry is. deliver_trusted():
 * not foreign and writable by no one else, which reuse requires. */
bool deliver_foreign(const struct stat *st, uid_t uid);
bool deliver_trusted(const struct stat *st, uid_t uid);

/* "<dir>/<name>" into `out`, one '/' between. Returns 0 or -ENAMETOOLONG. */
int deliver_join(const char *dir, const char *name, char *out, size_t size);

/* ".clrattach-<first 16 hex of digest_hex>-<nonce><suffix>", the nonce drawn when NULL. Returns
 * 0, -EINVAL for a nonce deliver_nonce_valid() refuses, or -errno (getrandom). */
int deliver_temp_name(const char *digest_hex, const char *nonce, const char *suffix, char *out,
                      size_t size);

/* Where another uid holds the usual name `stem` + `ext`: deliver_fallback_name() draws a fresh
 * "<stem>-<16 random hex><ext>"; deliver_find_fallback() looks in the directory for an earlier
 * one of type `type` (S_IFREG, S_IFDIR) that deliver_trusted() allows and `same` proves to be
 * ours (1; it opens the name itself and checks the content through the fd), calling `same` at
 * most DELIVER_FALLBACK_CHECKS_MAX times among DELIVER_SCAN_ENTRIES_MAX entries. Each returns 0
 * (and the name: for find, 1 when found) or a negative errno. */
int deliver_fallback_name(const char *stem, const char *ext, char *out, size_t size);
int deliver_find_fallback(int dirfd, const char *stem, const char *ext, mode_t type, uid_t uid,
                          int (*same)(int dirfd, const char *name, void *arg), void *arg,
                          char *ret_name, size_t size);

/* Removes the directory `name` in `parentfd` with everything in it, only while it holds the inode
 * `ours`: each directory made writable (0700) first, entries removed depth first through
 * directory fds, no link followed, at most PROFDIR_DEPTH_MAX levels. Each entry removed, the top
 * included, costs one of *budget; at zero the rest stays (-E2BIG). Returns 0, -ESTALE when the
 * name holds something else, -ENOTDIR when it is not a directory, or another negative errno. */
int deliver_remove_dir(int parentfd, const char *name, const struct stat *ours, int *budget);

/* The sweep of deliver_sweep() with `nonce` NULL, on a directory already open (O_PATH will do):
 * what every delivery runs first. Returns the number removed or a negative errno. */
int deliver_sweep_at(int dirfd, uid_t uid, const char *nonce);

/* Hashes a whole file descriptor from offset 0 (at most PROFILER_MAX_SIZE bytes) into hex.
 * Returns the size, or a negative errno. */
int64_t deliver_hash_fd(int fd, char hex[65]);

/* Tests only: `before_publish` runs right before the temporary file gets its final name (so a
 * test can swap it as a hostile target would); `force_rename` skips the link-by-fd and publishes
 * by renameat2(RENAME_NOREPLACE), as on a filesystem without hard links; `now_ns`, when not 0,
 * is the sweep's clock (CLOCK_REALTIME in ns), as ctime cannot be set back. NULL resets. */
struct deliver_test_hooks {
    void (*before_publish)(int dirfd, const char *tmp_name, void *arg);
    void *arg;
    bool force_rename;
    int64_t now_ns;
};
void deliver_set_test_hooks(const struct deliver_test_hooks *h);

#endif
