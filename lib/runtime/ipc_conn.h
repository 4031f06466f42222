/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The diagnostic socket transport: connect, send one request, read one reply, each bounded by a
 * deadline (the runtime's server is single-threaded and has no timeout of its own, and a hostile
 * target may simply never answer). Nothing here parses more than the header's size field.
 */
#ifndef CLRATTACH_IPC_CONN_H
#define CLRATTACH_IPC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "runtime/ipc.h"

/* Who must be listening on the socket: the pinned target process, its pid as WE see it (our pid
 * namespace, not its NSpid) and its effective uid. */
struct ipc_peer {
    pid_t pid;
    uid_t uid;
};

/* Checks the process behind a connected fd (SO_PEERCRED: the one that called listen(), with its
 * effective uid then) against `want`. Returns 0; -EADDRINUSE when it is another process (the
 * message names it, the hint the way out), a process we cannot see included. */
int ipc_conn_check_peer(int fd, const struct ipc_peer *want, struct cla_error *e);

/* Connects to the socket inode held by `sock_pathfd` (an O_PATH fd, verified to be a socket)
 * through /proc/self/fd/<n>: the path is never re-resolved, cannot be swapped for a symlink and
 * is never truncated to sun_path; then checks that `want` is listening (ipc_conn_check_peer).
 * `deadline_ms` is on util_now_ms()'s clock. Returns the connected fd; -ECONNREFUSED for a stale
 * socket (no listener); -EACCES; -ETIMEDOUT; -EADDRINUSE for another process's socket. Every
 * function below connects this way: nothing is sent before the peer is known. */
int ipc_conn_connect(int sock_pathfd, const struct ipc_peer *want, int64_t deadline_ms,
                     struct cla_error *e);

/* Sends `req` and reads one whole reply (header, then exactly size-20 bytes) into a new buffer.
 * Returns 0 with the decoded header and the payload (caller frees; may be NULL when empty);
 * -ETIMEDOUT past the deadline, -ECONNRESET/-EPIPE when the peer closes early, -EPROTO for a bad
 * header. */
int ipc_conn_transact(int fd, const uint8_t *req, size_t req_len, int64_t deadline_ms,
                      struct ipc_header *ret_hdr, uint8_t **ret_payload, size_t *ret_len,
                      struct cla_error *e);

/* One reply being read from a non-blocking fd, in pieces as they arrive: the state a caller
 * keeps for each connection it reads in its own poll loop. Zero-initialised to start. */
struct ipc_conn_rx {
    uint8_t hbuf[IPC_HEADER_SIZE];
    size_t got; /* bytes of the header, then of the payload, received */
    bool have_hdr;
    struct ipc_header hdr;
    uint8_t *payload; /* size-20 bytes, allocated once the header is decoded */
    size_t plen;
};

/* Receives whatever has arrived on fd, never waiting. Returns 1 when the whole reply is in, 0
 * when more must arrive (poll for POLLIN), -ECONNRESET when the peer closed before a header,
 * -EPROTO for a bad header or a truncated payload, -errno. */
int ipc_conn_rx_step(int fd, struct ipc_conn_rx *rx, struct cla_error *e);
void ipc_conn_rx_free(struct ipc_conn_rx *rx);

/* Asks the runtime who it is: ProcessInfo3, falling back to ProcessInfo2 and ProcessInfo on
 * older runtimes (they answer UNKNOWN_COMMAND), each on its own connection. Returns 0 with
 * *ret_info; -ECONNREFUSED for a stale socket; -EPROTO for a malformed reply; -EREMOTEIO when
 * the runtime answered with an error HRESULT (given in *ret_hresult). */
int ipc_conn_process_info(int sock_pathfd, const struct ipc_peer *want, int64_t deadline_ms,
                          struct ipc_process_info *ret_info, uint32_t *ret_hresult,
                          struct cla_error *e);

/* The same exchange in two halves, for a caller that waits on many runtimes at once.
 * ipc_conn_process_info_start connects (ipc_conn_connect: the peer is checked) and sends the
 * request of `attempt` (0 .. IPC_PROCESS_INFO_TRIES-1, newest command first); it returns the fd
 * to read the reply from with ipc_conn_rx_step. ipc_conn_process_info_finish decodes that reply:
 * as ipc_conn_process_info, and -EAGAIN when the runtime does not know the command and the next
 * attempt (on a new connection) should be started. */
#define IPC_PROCESS_INFO_TRIES 3
int ipc_conn_process_info_start(int sock_pathfd, const struct ipc_peer *want, int attempt,
                                int64_t deadline_ms, struct cla_error *e);
int ipc_conn_process_info_finish(int attempt, const struct ipc_conn_rx *rx,
                                 struct ipc_process_info *ret_info, uint32_t *ret_hresult,
                                 struct cla_error *e);

/* One request on its own connection, for commands answered by a bare HRESULT (AttachProfiler,
 * StartupProfiler, ResumeRuntime). Returns 0 with *ret_hresult (success or failure code). */
int ipc_conn_status_command(int sock_pathfd, const struct ipc_peer *want, const uint8_t *req,
                            size_t req_len, int64_t deadline_ms, uint32_t *ret_hresult,
                            struct cla_error *e);
#endif
