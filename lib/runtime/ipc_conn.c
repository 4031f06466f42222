/* SPDX-License-Identifier: Apache-2.0 */
/* The socket side of diagnostic IPC: the connect through the checked socket's O_PATH fd, the
 * peer check, one request and its reply under one deadline, ProcessInfo newest version first. */
#include "runtime/ipc_conn.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/util.h"

/* Waits for `events` on fd until the deadline. Returns 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - util_now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        /* Capped so the int argument cannot overflow for a far deadline; the loop re-polls.
         * Any revent ends the wait (POLLHUP, POLLERR too): the next send/recv reports it. */
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n > 0)
            return 0;
    }
}

int ipc_conn_check_peer(int fd, const struct ipc_peer *want, struct cla_error *e)
{
    /* For a connected Unix stream socket the kernel hands over the credentials the listener had
     * when it called listen(): its pid (the thread group's, whichever thread listened) in OUR pid
     * namespace, 0 where it has no number here, and its effective uid in our user namespace.
     * The runtime listens itself, as its effective uid. The target was pinned through our /proc,
     * so it has a pid here: a listener without one (0) is a process in a pid namespace we cannot
     * see, a sibling container sharing the TMPDIR, and never the target. */
    struct ucred uc;
    socklen_t len = sizeof(uc);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
        return err_setsys(e, -errno, "ipc: SO_PEERCRED");
    if (uc.pid == want->pid && uc.uid == want->uid)
        return 0;
    char who[80];
    if (uc.pid == 0)
        snprintf(who, sizeof(who), "a process outside our pid namespace (uid %u)",
                 (unsigned)uc.uid);
    else
        snprintf(who, sizeof(who), "pid %d (uid %u)", (int)uc.pid, (unsigned)uc.uid);
    err_set(e, -EADDRINUSE,
            "ipc: the socket is served by %s, not by pid %d (uid %u) it is named for: another "
            "process bound the runtime's name; nothing was sent",
            who, (int)want->pid, (unsigned)want->uid);
    err_hint(e,
             "clrattach talks only to the process it attaches to; find the process that bound "
             "the name (ss -xlp) and give the app a TMPDIR of its own, shared with no other app");
    return -EADDRINUSE;
}

int ipc_conn_connect(int sock_pathfd, const struct ipc_peer *want, int64_t deadline_ms,
                     struct cla_error *e)
{
    /* Connecting through the O_PATH fd's magic link: the socket's real path (the target's TMPDIR
     * seen through /proc/<pid>/root) can exceed sun_path's 108 bytes, and a path would be
     * resolved again, through directories the target controls, at connect time. */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", sock_pathfd);
    if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
        return err_set(e, -ENAMETOOLONG, "ipc: socket fd path");

    /* Non-blocking from the start: a hostile or stopped target must not hold us in connect(),
     * send() or recv() past the deadline. */
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return err_setsys(e, -errno, "ipc: socket");
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        if (errno == EINTR)
            continue;
        /* A full backlog gives EAGAIN on Unix sockets: the server thread is busy (or a hostile
         * peer never accepts). Retry until the deadline rather than fail at once. */
        if (errno == EAGAIN) {
            if (util_now_ms() >= deadline_ms)
                return err_set(e, -ETIMEDOUT, "ipc: connect: the runtime's backlog stayed full");
            usleep(10000);
            continue;
        }
        /* Not expected on Linux Unix sockets, which connect at once or fail; kept for the
         * generic non-blocking contract, with the result read from SO_ERROR. */
        if (errno == EINPROGRESS) {
            int r = wait_fd(fd, POLLOUT, deadline_ms);
            if (r < 0)
                return err_setsys(e, r, "ipc: connect");
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
                return err_setsys(e, -errno, "ipc: connect");
            if (soerr)
                return err_setsys(e, -soerr, "ipc: connect");
            break;
        }
        return err_setsys(e, -errno, "ipc: connect");
    }
    /* Checked on every connection, before a byte is sent: the request may carry the operator's
     * client data and the profiler's path. */
    int r = ipc_conn_check_peer(fd, want, e);
    if (r < 0)
        return r;
    return util_take_fd(&fd);
}

/* Sends all of buf, waiting with poll() on a non-blocking socket until the deadline. */
static int transfer(int fd, uint8_t *buf, size_t len, int64_t deadline_ms)
{
    while (len > 0) {
        /* MSG_NOSIGNAL: a target that closes its end gives EPIPE here instead of a SIGPIPE
         * that would kill us. */
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                int r = wait_fd(fd, POLLOUT, deadline_ms);
                if (r < 0)
                    return r;
                continue;
            }
            return -errno;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

void ipc_conn_rx_free(struct ipc_conn_rx *rx)
{
    free(rx->payload);
    *rx = (struct ipc_conn_rx){0};
}

/* Receives what has arrived into buf[*got..want): 1 when it is all in, 0 when more must arrive,
 * -ECONNRESET when the peer closed, -errno. */
static int rx_some(int fd, uint8_t *buf, size_t want, size_t *got)
{
    while (*got < want) {
        ssize_t n = recv(fd, buf + *got, want - *got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -errno;
        }
        if (n == 0)
            return -ECONNRESET;
        *got += (size_t)n;
    }
    return 1;
}

int ipc_conn_rx_step(int fd, struct ipc_conn_rx *rx, struct cla_error *e)
{
    int r;
    if (!rx->have_hdr) {
        r = rx_some(fd, rx->hbuf, sizeof(rx->hbuf), &rx->got);
        if (r == -ECONNRESET)
            return err_set(e, r, "ipc: the target closed the connection without a reply");
        if (r <= 0)
            return r < 0 ? err_setsys(e, r, "ipc: receive") : 0;
        /* The header is checked (magic, size >= its own length) before its size is used to
         * allocate or read: the reply is the target's. */
        if ((r = ipc_decode_header(rx->hbuf, sizeof(rx->hbuf), &rx->hdr, e)) < 0)
            return r;
        rx->have_hdr = true;
        rx->got = 0;
        /* size is a u16, so the payload is bounded by the protocol itself (< 64 KiB). */
        rx->plen = (size_t)rx->hdr.size - IPC_HEADER_SIZE;
        if (rx->plen > 0 && !(rx->payload = malloc(rx->plen)))
            return err_set(e, -ENOMEM, "ipc: out of memory");
    }
    r = rx_some(fd, rx->payload, rx->plen, &rx->got);
    if (r == -ECONNRESET)
        return err_set(e, -EPROTO,
                       "ipc: reply truncated: the target closed the connection inside a %zu-byte "
                       "payload",
                       rx->plen);
    if (r < 0)
        return err_setsys(e, r, "ipc: receive");
    return r;
}

/* Reads one whole reply into *rx, waiting until the deadline. Returns 1, or a negative code
 * with its message. */
static int rx_until(int fd, struct ipc_conn_rx *rx, int64_t deadline_ms, struct cla_error *e)
{
    for (;;) {
        int r = ipc_conn_rx_step(fd, rx, e);
        if (r != 0)
            return r;
        r = wait_fd(fd, POLLIN, deadline_ms);
        if (r == -ETIMEDOUT && rx->have_hdr)
            return err_set(e, r,
                           "ipc: reply truncated: %zu-byte payload not received before the "
                           "deadline",
                           rx->plen);
        if (r == -ETIMEDOUT)
            return err_set(e, r, "ipc: no reply before the deadline");
        if (r < 0)
            return err_setsys(e, r, "ipc: poll");
    }
}

int ipc_conn_transact(int fd, const uint8_t *req, size_t req_len, int64_t deadline_ms,
                      struct ipc_header *ret_hdr, uint8_t **ret_payload, size_t *ret_len,
                      struct cla_error *e)
{
    /* The request is only read: transfer() takes a mutable buffer. */
    int r = transfer(fd, (uint8_t *)(uintptr_t)req, req_len, deadline_ms);
    if (r == -ETIMEDOUT)
        return err_set(e, r, "ipc: sending the request timed out");
    if (r < 0)
        return err_setsys(e, r, "ipc: send");

    struct ipc_conn_rx rx = {0};
    if ((r = rx_until(fd, &rx, deadline_ms, e)) < 0) {
        ipc_conn_rx_free(&rx);
        return r;
    }
    *ret_hdr = rx.hdr;
    *ret_payload = rx.payload;
    *ret_len = rx.plen;
    return 0;
}

/* The runtime's answer to a command it does not know (older runtimes, Mono). */
#define HR_UNKNOWN_COMMAND 0x80131385u

/* One connection per command: the runtime serves one request on a connection and closes it. */
int ipc_conn_status_command(int sock_pathfd, const struct ipc_peer *want, const uint8_t *req,
                            size_t req_len, int64_t deadline_ms, uint32_t *ret_hresult,
                            struct cla_error *e)
{
    _cleanup_close_ int fd = ipc_conn_connect(sock_pathfd, want, deadline_ms, e);
    if (fd < 0)
        return fd;
    struct ipc_header hdr;
    _cleanup_free_ uint8_t *payload = NULL;
    size_t len;
    int r = ipc_conn_transact(fd, req, req_len, deadline_ms, &hdr, &payload, &len, e);
    if (r < 0)
        return r;
    return ipc_decode_status(&hdr, payload, len, ret_hresult, e);
}

/* Newest first: ProcessInfo3 (.NET 8) adds the runtime's RID, ProcessInfo2 (.NET 7) its
 * version; an older runtime answers UNKNOWN_COMMAND and the next one is tried, each on a new
 * connection since the runtime closes the old one after replying. */
static const struct {
    uint8_t id;
    int version;
} pi_tries[IPC_PROCESS_INFO_TRIES] = {
    {IPC_PROCESS_INFO3, 3}, {IPC_PROCESS_INFO2, 2}, {IPC_PROCESS_INFO, 1}};

int ipc_conn_process_info_start(int sock_pathfd, const struct ipc_peer *want, int attempt,
                                int64_t deadline_ms, struct cla_error *e)
{
    if (attempt < 0 || attempt >= IPC_PROCESS_INFO_TRIES)
        return err_set(e, -EINVAL, "ipc: no ProcessInfo attempt %d", attempt);
    uint8_t req[IPC_HEADER_SIZE];
    int n = ipc_encode_simple(IPC_SET_PROCESS, pi_tries[attempt].id, req, sizeof(req), e);
    if (n < 0)
        return n;
    _cleanup_close_ int fd = ipc_conn_connect(sock_pathfd, want, deadline_ms, e);
    if (fd < 0)
        return fd;
    int r = transfer(fd, req, (size_t)n, deadline_ms);
    if (r == -ETIMEDOUT)
        return err_set(e, r, "ipc: sending the request timed out");
    if (r < 0)
        return err_setsys(e, r, "ipc: send");
    return util_take_fd(&fd);
}

int ipc_conn_process_info_finish(int attempt, const struct ipc_conn_rx *rx,
                                 struct ipc_process_info *ret_info, uint32_t *ret_hresult,
                                 struct cla_error *e)
{
    const struct ipc_header *hdr = &rx->hdr;
    if (hdr->command_set == IPC_SET_SERVER && hdr->command_id == IPC_SERVER_ERROR) {
        uint32_t hr;
        int r = ipc_decode_status(hdr, rx->payload, rx->plen, &hr, e);
        if (r < 0)
            return r;
        if (hr == HR_UNKNOWN_COMMAND && attempt + 1 < IPC_PROCESS_INFO_TRIES)
            return -EAGAIN;
        *ret_hresult = hr;
        if (hr == HR_UNKNOWN_COMMAND)
            return err_set(e, -EREMOTEIO, "ipc: the runtime knows no ProcessInfo command");
        return err_set(e, -EREMOTEIO, "ipc: ProcessInfo answered HRESULT 0x%08X", hr);
    }
    if (hdr->command_set != IPC_SET_SERVER || hdr->command_id != IPC_SERVER_OK)
        return err_set(e, -EPROTO, "ipc: unexpected reply 0x%02x/0x%02x to ProcessInfo",
                       hdr->command_set, hdr->command_id);
    return ipc_decode_process_info(pi_tries[attempt].version, rx->payload, rx->plen, ret_info, e);
}

int ipc_conn_process_info(int sock_pathfd, const struct ipc_peer *want, int64_t deadline_ms,
                          struct ipc_process_info *ret_info, uint32_t *ret_hresult,
                          struct cla_error *e)
{
    for (int attempt = 0;; attempt++) {
        _cleanup_close_ int fd =
            ipc_conn_process_info_start(sock_pathfd, want, attempt, deadline_ms, e);
        if (fd < 0)
            return fd;
        struct ipc_conn_rx rx = {0};
        int r = rx_until(fd, &rx, deadline_ms, e);
        if (r > 0)
            r = ipc_conn_process_info_finish(attempt, &rx, ret_info, ret_hresult, e);
        ipc_conn_rx_free(&rx);
        if (r != -EAGAIN)
            return r;
    }
}
