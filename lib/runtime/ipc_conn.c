/* SPDX-License-Identifier: Apache-2.0 */
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

/* Sends all of buf (send = true) or receives exactly len bytes into it, waiting with poll() on
 * a non-blocking socket until the deadline. -ECONNRESET when the peer closes early. */
static int transfer(int fd, uint8_t *buf, size_t len, bool send_dir, int64_t deadline_ms)
{
    while (len > 0) {
        /* MSG_NOSIGNAL: a target that closes its end gives EPIPE here instead of a SIGPIPE
         * that would kill us. */
        ssize_t n = send_dir ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                int r = wait_fd(fd, send_dir ? POLLOUT : POLLIN, deadline_ms);
                if (r < 0)
                    return r;
                continue;
            }
            return -errno;
        }
        if (n == 0)
            return -ECONNRESET;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int ipc_conn_transact(int fd, const uint8_t *req, size_t req_len, int64_t deadline_ms,
                      struct ipc_header *ret_hdr, uint8_t **ret_payload, size_t *ret_len,
                      struct cla_error *e)
{
    /* The request is only read: transfer() takes a mutable buffer for both directions. */
    int r = transfer(fd, (uint8_t *)(uintptr_t)req, req_len, true, deadline_ms);
    if (r == -ETIMEDOUT)
        return err_set(e, r, "ipc: sending the request timed out");
    if (r < 0)
        return err_setsys(e, r, "ipc: send");

    uint8_t hbuf[IPC_HEADER_SIZE];
    r = transfer(fd, hbuf, sizeof(hbuf), false, deadline_ms);
    if (r == -ETIMEDOUT)
        return err_set(e, r, "ipc: no reply before the deadline");
    if (r == -ECONNRESET)
        return err_set(e, r, "ipc: the target closed the connection without a reply");
    if (r < 0)
        return err_setsys(e, r, "ipc: receive");
    /* The header is checked (magic, size >= its own length) before its size is used to
     * allocate or read: the reply is the target's. */
    struct ipc_header hdr;
    if ((r = ipc_decode_header(hbuf, sizeof(hbuf), &hdr, e)) < 0)
        return r;

    /* size is a u16, so the payload is bounded by the protocol itself (< 64 KiB). */
    size_t plen = (size_t)hdr.size - IPC_HEADER_SIZE;
    _cleanup_free_ uint8_t *payload = NULL;
    if (plen > 0) {
        payload = malloc(plen);
        if (!payload)
            return err_set(e, -ENOMEM, "ipc: out of memory");
        r = transfer(fd, payload, plen, false, deadline_ms);
        if (r == -ETIMEDOUT)
            return err_set(e, r,
                           "ipc: reply truncated: %zu-byte payload not received before the "
                           "deadline",
                           plen);
        if (r == -ECONNRESET)
            return err_set(e, -EPROTO,
                           "ipc: reply truncated: the target closed the connection "
                           "inside a %zu-byte payload",
                           plen);
        if (r < 0)
            return err_setsys(e, r, "ipc: receive");
    }
    *ret_hdr = hdr;
    *ret_payload = util_take_ptr(&payload);
    *ret_len = plen;
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

int ipc_conn_process_info(int sock_pathfd, const struct ipc_peer *want, int64_t deadline_ms,
                          struct ipc_process_info *ret_info, uint32_t *ret_hresult,
                          struct cla_error *e)
{
    static const struct {
        uint8_t id;
        int version;
    } tries[] = {{IPC_PROCESS_INFO3, 3}, {IPC_PROCESS_INFO2, 2}, {IPC_PROCESS_INFO, 1}};
    /* Newest first: ProcessInfo3 (.NET 8) adds the runtime's RID, ProcessInfo2 (.NET 7) its
     * version; an older runtime answers UNKNOWN_COMMAND and the next one is tried, each on a
     * new connection since the runtime closes the old one after replying. */
    for (size_t i = 0; i < ARRAY_SIZE(tries); i++) {
        uint8_t req[IPC_HEADER_SIZE];
        int n = ipc_encode_simple(IPC_SET_PROCESS, tries[i].id, req, sizeof(req), e);
        if (n < 0)
            return n;
        _cleanup_close_ int fd = ipc_conn_connect(sock_pathfd, want, deadline_ms, e);
        if (fd < 0)
            return fd;
        struct ipc_header hdr;
        _cleanup_free_ uint8_t *payload = NULL;
        size_t len;
        int r = ipc_conn_transact(fd, req, (size_t)n, deadline_ms, &hdr, &payload, &len, e);
        if (r < 0)
            return r;
        if (hdr.command_set == IPC_SET_SERVER && hdr.command_id == IPC_SERVER_ERROR) {
            uint32_t hr;
            if ((r = ipc_decode_status(&hdr, payload, len, &hr, e)) < 0)
                return r;
            if (hr == HR_UNKNOWN_COMMAND)
                continue;
            *ret_hresult = hr;
            return err_set(e, -EREMOTEIO, "ipc: ProcessInfo answered HRESULT 0x%08X", hr);
        }
        if (hdr.command_set != IPC_SET_SERVER || hdr.command_id != IPC_SERVER_OK)
            return err_set(e, -EPROTO, "ipc: unexpected reply 0x%02x/0x%02x to ProcessInfo",
                           hdr.command_set, hdr.command_id);
        return ipc_decode_process_info(tries[i].version, payload, len, ret_info, e);
    }
    *ret_hresult = HR_UNKNOWN_COMMAND;
    return err_set(e, -EREMOTEIO, "ipc: the runtime knows no ProcessInfo command");
}
