/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The listening end of a diagnostic port in connect mode (`--listen PATH`): clrattach binds a
 * Unix socket in a directory it shares with the app, and the app's runtime, started with
 * DOTNET_DiagnosticPorts=PATH, connects to it and advertises itself (runtime/advert.h).
 *
 * Everything that can reach the directory may connect, so the socket is a door to hostile
 * input. This module keeps what a peer can cost bounded: connections are accepted without
 * blocking (accept4, SOCK_NONBLOCK) and at most LISTEN_ACCEPT_BATCH per step; one that has not
 * sent its 34-byte advertisement waits at most LISTEN_ADVERT_MS, among at most
 * LISTEN_PENDING_MAX such ones (the oldest is dropped for a newcomer); one that sends more than
 * an advertisement, or a bad one, is closed at once. A runtime is never behind them: it writes
 * its advertisement the moment it connects, so its connection is complete when it is accepted.
 *
 * The I/O sibling of runtime/advert.h; it knows nothing of what is asked over a connection.
 */
#ifndef CLRATTACH_LISTEN_SOCK_H
#define CLRATTACH_LISTEN_SOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "runtime/advert.h"

struct listen_sock_opts {
    /* Permission bits of the socket inode: who may connect (connect() needs write permission).
     * 0600 when only our uid (the app's, when clrattach runs as it) may; 0660 with a group
     * shared by both containers (fsGroup). */
    mode_t mode;
    uid_t uid; /* (uid_t)-1: leave as created (our euid); else chown (CAP_CHOWN) */
    gid_t gid; /* (gid_t)-1: leave as created (the directory's setgid group, or our egid) */
};

/* A connection whose advertisement checked out, handed to the caller (who owns fd). */
struct listen_conn {
    int fd;            /* non-blocking, close-on-exec; nothing read past the advertisement */
    struct advert adv; /* who the peer says it is */
    pid_t peer_pid;    /* SO_PEERCRED: in OUR pid namespace, 0 when it has no number here */
    uid_t peer_uid;
    gid_t peer_gid;
};

/* What peers cost so far, for the result and the tests. */
struct listen_stats {
    uint64_t accepted;
    uint64_t advertised; /* handed over as a listen_conn */
    uint64_t bad;        /* closed: not an advertisement, or more bytes than one */
    uint64_t slow;       /* closed: no whole advertisement within LISTEN_ADVERT_MS */
    uint64_t evicted;    /* closed: the oldest waiting when LISTEN_PENDING_MAX were waiting */
    uint64_t hung_up;    /* closed by the peer before its advertisement */
};

struct listen_sock;

/* The longest path a Unix socket may be connected to by (sun_path less its NUL): 107 bytes. */
#define LISTEN_PATH_MAX 107

/*
 * Is `path` (what = the option that gave it, for the message) short enough for a peer to
 * connect to it by name? A runtime given DOTNET_DiagnosticPorts=PATH puts PATH in sun_path, so a
 * longer one is never reached, whatever clrattach itself can bind. Returns 0, or -ENAMETOOLONG
 * with e naming the path, its length, the limit and the next step.
 */
int listen_sock_path_fits(const char *path, const char *what, struct cla_error *e);

/*
 * Binds and listens at `path`. The directory part is opened once (O_PATH, following links: it
 * is the operator's path, the shared volume's mount point) and the socket is bound by its last
 * component through /proc/self/fd/<dir>/NAME, so no later swap of a directory in the path can
 * redirect it and the path is never truncated to sun_path. What is already at NAME is replaced
 * only when it is a stale socket of our own: a socket inode owned by our effective uid on which
 * connect() is refused (nobody listens: a clrattach before us that was killed). Anything else -
 * a live socket (another listener), another uid's socket, a symlink, a file, a directory - is
 * refused with -EEXIST and never touched. The socket is created with opts->mode exactly (the
 * umask is lifted around bind()), then chowned as asked. A path over LISTEN_PATH_MAX is refused
 * (listen_sock_path_fits): no runtime could connect to it.
 * Returns 0 with *ret (listen_sock_close() it); -EEXIST, -ENAMETOOLONG, -EINVAL for a path
 * without a name, -errno.
 */
int listen_sock_open(const char *path, const struct listen_sock_opts *opts,
                     struct listen_sock **ret, struct cla_error *e);

/* Closes the listening socket and every connection still waiting, and removes the name if it
 * still holds the socket inode bound (a name the app replaced is left alone). NULL is fine. */
void listen_sock_close(struct listen_sock *ls);

/* The fds to poll (POLLIN): the listening socket, then each waiting connection. Returns how
 * many were written (at most `max`; 1 + LISTEN_PENDING_MAX always suffices). */
size_t listen_sock_pollfds(const struct listen_sock *ls, struct pollfd *fds, size_t max);

/* The earliest deadline of a waiting connection (util_now_ms() clock), INT64_MAX for none. */
int64_t listen_sock_next_deadline(const struct listen_sock *ls);

/* Does one round of work without blocking: accepts at most LISTEN_ACCEPT_BATCH connections,
 * reads what each waiting connection has sent, closes the bad, slow and evicted ones, and hands
 * over at most `max` advertised connections in ret (the rest stay for the next call). Returns
 * the number handed over, or -errno when the listening socket itself failed. */
int listen_sock_step(struct listen_sock *ls, int64_t now_ms, struct listen_conn *ret, size_t max,
                     struct cla_error *e);

/* Does the name still hold the socket inode bound? 0, or -ESTALE with e saying what is there now
 * (the app, which shares the directory, removed it or put something else in its place: runtimes
 * starting from now on cannot reach us). */
int listen_sock_check(const struct listen_sock *ls, struct cla_error *e);

const struct listen_stats *listen_sock_stats(const struct listen_sock *ls);

/* The listening fd, for a caller that polls it itself (listen_sock_pollfds() gives it first). */
int listen_sock_fd(const struct listen_sock *ls);

#endif
