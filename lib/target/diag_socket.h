/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where is the diagnostic socket? In the target's own filesystem view: its TMPDIR (read from its
 * environment, default /tmp/) below /proc/<pid>/root, links in it resolved inside that root,
 * named dotnet-diagnostic-<namespace pid>-<start time>-socket. Several entries for one pid happen
 * (a crashed earlier process with the same namespace pid left its socket); the runtime's own
 * client picks the newest, and so do we, preferring the one whose key is the start time we read.
 *
 * The socket must be the target's own: the runtime binds it with its effective uid, so an entry
 * owned by any other uid (root included, for a non-root target) was bound by someone else in a
 * TMPDIR shared with other users, and is never connected to.
 */
#ifndef CLRATTACH_DIAG_SOCKET_H
#define CLRATTACH_DIAG_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "target/target.h"

enum socket_state {
    SOCKET_ABSENT,        /* no entry for this pid: not .NET, diagnostics off, or not started */
    SOCKET_FOUND,         /* chosen; its key is the start time we read */
    SOCKET_FOUND_UNKEYED, /* chosen as the newest; its key differs (time namespace, or stale) */
    SOCKET_NOT_SOCKET,    /* the name matches but the entry is a file, FIFO or link: refused */
    SOCKET_FOREIGN,       /* the only entries for this pid belong to another user: refused */
    SOCKET_DIR_ERROR,     /* the TMPDIR could not be opened in the target's view */
};

struct diag_socket_entry {
    char name[96];
    pid_t pid;
    uint64_t key;
    int64_t mtime_ns;
    bool is_socket;
    unsigned file_type; /* st_mode & S_IFMT, to name what was planted instead of a socket */
    uid_t owner;        /* st_uid */
};

struct diag_socket {
    enum socket_state state;
    char name[96];
    uint64_t key;
    int candidates;     /* entries named for this pid */
    int stale;          /* candidates not chosen */
    int dir_errno;      /* for SOCKET_DIR_ERROR */
    unsigned file_type; /* of the chosen entry (st_mode & S_IFMT) */
    uid_t owner;        /* of the chosen entry */
};

/* "symbolic link", "regular file", "FIFO", ... for a file type from diag_socket. */
const char *diag_socket_file_type_name(unsigned file_type);

/* Picks the socket for (nspid, starttime) of a process running as `uid` (its effective uid)
 * among `n` listed entries, as described above: entries owned by `uid` first, so that names
 * another user planted never hide the process's own socket. Pure. Returns the state it fills
 * into *ret. */
enum socket_state diag_socket_choose(const struct diag_socket_entry *entries, size_t n, pid_t nspid,
                                     uint64_t starttime, uid_t uid, struct diag_socket *ret);

/* How far a socket's key may be from the start time and still be this process's own: under
 * qemu-user the runtime's start time (its own /proc read, through the emulator) comes out 1-2
 * ticks later than the kernel's. */
#define DIAG_SOCKET_KEY_SKEW_TICKS 2

/* For an unkeyed socket: the sentence `ps` shows (pure, NUL-terminated in `size` bytes). A key
 * within DIAG_SOCKET_KEY_SKEW_TICKS of `starttime` says by how many ticks and why that happens;
 * any other key says the socket may belong to an earlier process. */
void diag_socket_unkeyed_detail(uint64_t key, uint64_t starttime, char *buf, size_t size);

struct diag_socket_cache;

/* A cache of TMPDIR listings keyed by (root inode, mount namespace, TMPDIR, the process's
 * credentials: uid, gid, groups, capabilities), so that `ps` lists each container's /tmp once
 * per user however many processes share it. */
struct diag_socket_cache *diag_socket_cache_new(void);
void diag_socket_cache_free(struct diag_socket_cache *c);

/* Lists the target's TMPDIR in its own root (opening the root when needed) and fills *ret.
 * Returns 0 whenever a state could be decided (including ABSENT and DIR_ERROR), or a negative
 * errno for a failure to inspect the target at all (-EACCES on its root, -ESRCH).
 * `cache` may be NULL. */
int diag_socket_find(struct target *t, struct diag_socket_cache *cache, struct diag_socket *ret,
                     struct cla_error *e);

/* Opens the chosen socket's inode O_PATH (the TMPDIR's links resolved inside the target's root,
 * the socket's own name never followed) and verifies it is a socket owned by the target's
 * effective uid. Returns the fd, -ENOTSOCK, -ELOOP, -ENOENT, or -EPERM for a socket of another
 * user (the message names its owner, the hint the way out). */
int diag_socket_open(struct target *t, const struct diag_socket *s, struct cla_error *e);

#endif
