/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Filesystem calls in other processes' roots, made by a helper process that answers over a
 * socketpair, each request within a deadline. A filesystem that stops answering (a hung NFS or
 * CIFS hard mount, a stuck CSI volume, a FUSE daemon that reads a request and never replies) puts
 * the caller of open, stat or getdents into an uninterruptible wait that no signal ends, not even
 * SIGKILL, for as long as the filesystem is silent. In a thread that wait would also keep the
 * whole process from exiting; in a helper process it holds the helper only. The caller gives up
 * on it (SIGKILL through its pidfd, no wait that can block: it is reaped later without waiting),
 * and the next request starts a fresh helper.
 *
 * The helper is a fork of the caller, so the handler runs on a copy of the caller's memory as it
 * was at the fork: requests carry everything the handler needs; its own state (directories held
 * open) lives in the helper and is lost with it (fsworker_generation tells the caller).
 */
#ifndef CLRATTACH_FSWORKER_H
#define CLRATTACH_FSWORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"

/* Runs in the helper for each request (`len` bytes, at most FSWORKER_REQUEST_MAX, with `fd` when
 * the caller passed one, else -1; the handler owns it). Sets *ret_reply to a malloc'd reply of
 * *ret_len bytes (at most FSWORKER_REPLY_MAX; NULL with 0: an empty one) and *ret_fd to an fd to
 * hand back (-1: none), which the helper closes once sent. */
typedef void (*fsworker_fn)(void *ctx, const void *req, size_t len, int fd, void **ret_reply,
                            size_t *ret_len, int *ret_fd);

/* Runs in the helper as it leaves at the caller's end of the channel: frees its state. */
typedef void (*fsworker_done_fn)(void *ctx);

/* The helper's process name (comm), apart from its parent's. */
#define FSWORKER_COMM "clrattach-fs"

struct fsworker;

/* A helper for `fn` with `ctx` (as the helper's copy sees it); none is started until the first
 * call. Returns NULL when out of memory. */
struct fsworker *fsworker_new(fsworker_fn fn, fsworker_done_fn done, void *ctx);

/* The waits for an answer are made with `mask` as the signal mask (ppoll), and a signal that
 * sets *stop during one ends it: the call returns -EINTR and the helper is given up. For a
 * caller that blocks its stop signals while it works and lets them in only while it waits
 * (watch). Without it the mask is left as it is. */
void fsworker_set_interrupt(struct fsworker *w, const sigset_t *mask, volatile sig_atomic_t *stop);

/*
 * Sends one request (with `fd`, or -1) and waits up to `timeout_ms` for its answer. Returns 0
 * with *ret_reply (malloc'd, caller frees; NULL when empty), *ret_len and *ret_fd (-1 when none).
 * Errors: -ETIMEDOUT (no answer in time), -EPROTO (a malformed answer), -EPIPE (the helper
 * ended), -EINTR (a stop: see above), each after the helper was given up, with its pid in
 * *ret_stuck when it was still there (else 0); -EAGAIN when FSWORKER_STUCK_MAX helpers given up
 * are still stuck and no new one is started; -errno when none can be started (fork, socketpair).
 */
int fsworker_call(struct fsworker *w, const void *req, size_t len, int fd, int64_t timeout_ms,
                  void **ret_reply, size_t *ret_len, int *ret_fd, pid_t *ret_stuck);

/* Is the helper `pid`, given up earlier, still stuck (not yet reaped)? Reaps the ones that have
 * ended, without waiting. */
bool fsworker_stuck(struct fsworker *w, pid_t pid);

/* Counts the helpers started: a handler's state of an earlier count is gone. */
uint64_t fsworker_generation(const struct fsworker *w);

/* Ends the helper (its end of the channel closed, then a short wait for its exit before it is
 * killed) and reaps the ones given up that have ended. In a process that did not create `w` (a
 * child forked while it existed) only the fds are closed: the helpers are not its own. NULL is a
 * no-op. */
void fsworker_free(struct fsworker *w);

#endif
