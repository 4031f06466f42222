/* SPDX-License-Identifier: Apache-2.0 */
/* The helper process of fsworker.h: its start, the framed requests and replies over the
 * socketpair (fds passed along), deadlines, and the kill of a helper that stopped answering. */
#include "target/fsworker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "base/util.h"

/* Each request and each answer: this header, then `len` bytes; an fd rides on the header. */
struct frame {
    uint32_t len;
    uint32_t magic;
};
#define FRAME_MAGIC 0x6673776bu /* "fswk" */

/* How long a helper that was asked to leave gets to do so at fsworker_free. */
#define EXIT_WAIT_MS 200

struct given_up {
    pid_t pid;
    int pidfd;
};

struct fsworker {
    fsworker_fn fn;
    fsworker_done_fn done;
    void *ctx;
    pid_t owner; /* the process that made this: only it starts, kills and reaps helpers */
    pid_t pid;   /* the helper; 0 when none runs */
    int pidfd;   /* -1 where pidfd_open is missing (Linux < 5.3): then it cannot be killed */
    int sock;
    uint64_t generation;
    const sigset_t *mask;
    volatile sig_atomic_t *stop;
    struct given_up stuck[FSWORKER_STUCK_MAX];
    size_t nstuck;
};

struct fsworker *fsworker_new(fsworker_fn fn, fsworker_done_fn done, void *ctx)
{
    struct fsworker *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->fn = fn;
    w->done = done;
    w->ctx = ctx;
    w->owner = getpid();
    w->pidfd = w->sock = -1;
    return w;
}

void fsworker_set_interrupt(struct fsworker *w, const sigset_t *mask, volatile sig_atomic_t *stop)
{
    w->mask = mask;
    w->stop = stop;
}

uint64_t fsworker_generation(const struct fsworker *w)
{
    return w->generation;
}

/* Sends a frame: one sendmsg for the header (with the fd) and as much of the payload as fits,
 * then the rest. The caller's side never blocks (MSG_DONTWAIT: its request fits the empty
 * socket buffer, or the helper is not reading); the helper's blocks until the caller reads. */
static int send_frame(int sock, const void *buf, size_t len, int fd, bool dontwait)
{
    struct frame h = {.len = (uint32_t)len, .magic = FRAME_MAGIC};
    struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof(h)},
                           {.iov_base = (void *)buf, .iov_len = len}};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (fd >= 0) {
        m.msg_control = cm.buf;
        m.msg_controllen = sizeof(cm.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    int flags = MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0);
    ssize_t n;
    do
        n = sendmsg(sock, &m, flags);
    while (n < 0 && errno == EINTR && !dontwait);
    if (n < 0)
        return -errno;
    size_t done = (size_t)n;
    if (done < sizeof(h))
        return -EPROTO; /* a header is never split by a socket buffer this empty */
    done -= sizeof(h);
    while (done < len) {
        if (dontwait)
            return -EPROTO;
        n = send(sock, (const char *)buf + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        done += (size_t)n;
    }
    return 0;
}

/* Waits until `sock` has data: up to `deadline` on util_now_ms()'s clock (INT64_MAX: for as long
 * as it takes), with the caller's signal mask. Returns 0, -ETIMEDOUT, -EINTR (a stop). */
static int wait_readable(const struct fsworker *w, int sock, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = sock, .events = POLLIN};
        int64_t left = deadline == INT64_MAX ? -1 : deadline - util_now_ms();
        if (deadline != INT64_MAX && left <= 0)
            return -ETIMEDOUT;
        struct timespec ts = {.tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000};
        int n = ppoll(&p, 1, left < 0 ? NULL : &ts, w->mask);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
        if (w->stop && *w->stop)
            return -EINTR;
    }
}

/* Receives one frame of at most `cap` bytes into a new buffer, and the fd that came with it. */
static int recv_frame(const struct fsworker *w, int sock, int64_t deadline, size_t cap,
                      void **ret_buf, size_t *ret_len, int *ret_fd)
{
    struct frame h;
    /* The body's first bytes are read with the header: most frames end there, one recvmsg
     * each (a quiet node's scan is a few of these round trips). One frame is in flight at a
     * time, so nothing of a next one can be read here. */
    char early[2048];
    size_t got = 0, nearly = 0;
    int fd = -1, r = 0;
    char *buf = NULL;
    /* Without a deadline (the helper, between requests) the read itself waits: one call less
     * per request. */
    int dontwait = deadline == INT64_MAX ? 0 : MSG_DONTWAIT;
    while (got < sizeof(h)) {
        if (dontwait && (r = wait_readable(w, sock, deadline)) < 0)
            goto fail;
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int) * 4)];
        } cm;
        struct iovec iov[2] = {{.iov_base = (char *)&h + got, .iov_len = sizeof(h) - got},
                               {.iov_base = early, .iov_len = sizeof(early)}};
        struct msghdr m = {
            .msg_iov = iov, .msg_iovlen = 2, .msg_control = cm.buf, .msg_controllen = sizeof(cm)};
        ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | dontwait);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EPIPE;
            goto fail;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (fd < 0)
                    fd = f;
                else
                    close(f); /* one fd per frame: any more is not ours to keep */
            }
        }
        if (m.msg_flags & MSG_CTRUNC) {
            r = -EPROTO;
            goto fail;
        }
        if ((size_t)n > sizeof(h) - got) {
            nearly = (size_t)n - (sizeof(h) - got);
            got = sizeof(h);
        } else {
            got += (size_t)n;
        }
    }
    if (h.magic != FRAME_MAGIC || h.len > cap || nearly > h.len) {
        r = -EPROTO;
        goto fail;
    }
    if (h.len && !(buf = malloc(h.len))) {
        r = -ENOMEM;
        goto fail;
    }
    if (nearly)
        memcpy(buf, early, nearly);
    for (got = nearly; got < h.len;) {
        if (dontwait && (r = wait_readable(w, sock, deadline)) < 0)
            goto fail;
        ssize_t n = recv(sock, buf + got, h.len - got, dontwait);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EPIPE;
            goto fail;
        }
        got += (size_t)n;
    }
    *ret_buf = buf;
    *ret_len = h.len;
    *ret_fd = fd;
    return 0;
fail:
    free(buf);
    if (fd >= 0)
        close(fd);
    return r;
}

/* The helper: answers requests until the caller's end closes. Nothing here returns to the
 * caller's code: it leaves with _exit (no atexit handler, no stdio flush of the caller's
 * buffers). */
static _Noreturn void helper_main(struct fsworker *w, int sock)
{
    /* No signal of the caller's is ours to act on: the caller ends us by closing the channel,
     * or by SIGKILL. Its blocked set (watch blocks SIGTERM) is kept as it is. */
    for (;;) {
        void *req = NULL, *rep = NULL;
        size_t len = 0, rlen = 0;
        int fd = -1, rfd = -1;
        if (recv_frame(w, sock, INT64_MAX, FSWORKER_REQUEST_MAX, &req, &len, &fd) < 0)
            break;
        w->fn(w->ctx, req, len, fd, &rep, &rlen, &rfd);
        free(req);
        int r = rlen <= FSWORKER_REPLY_MAX ? send_frame(sock, rep, rlen, rfd, false) : -E2BIG;
        free(rep);
        if (rfd >= 0)
            close(rfd);
        if (r < 0)
            break;
    }
    if (w->done)
        w->done(w->ctx);
    close(sock);
    free(w);
    _exit(0);
}

/* Reaps, without waiting, the helpers given up that have ended. */
static void reap(struct fsworker *w)
{
    size_t k = 0;
    for (size_t i = 0; i < w->nstuck; i++) {
        pid_t r = waitpid(w->stuck[i].pid, NULL, WNOHANG);
        if (r == w->stuck[i].pid || (r < 0 && errno == ECHILD)) {
            util_closep(&w->stuck[i].pidfd);
            continue;
        }
        w->stuck[k++] = w->stuck[i];
    }
    w->nstuck = k;
}

bool fsworker_stuck(struct fsworker *w, pid_t pid)
{
    if (getpid() != w->owner)
        return false;
    reap(w);
    for (size_t i = 0; i < w->nstuck; i++)
        if (w->stuck[i].pid == pid)
            return true;
    return false;
}

static int start(struct fsworker *w)
{
    reap(w);
    if (w->nstuck >= FSWORKER_STUCK_MAX)
        return -EAGAIN;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int r = -errno;
        close(sv[0]);
        close(sv[1]);
        return r;
    }
    if (pid == 0) {
        /* Named apart from its parent, whose command line it shares: in a process listing (a
         * helper stuck in a filesystem shows there in state D) and for whoever counts the
         * watcher's attach children. */
        (void)prctl(PR_SET_NAME, FSWORKER_COMM, 0, 0, 0);
        close(sv[0]);
        for (size_t i = 0; i < w->nstuck; i++)
            util_closep(&w->stuck[i].pidfd);
        helper_main(w, sv[1]);
    }
    close(sv[1]);
    w->pid = pid;
    w->sock = sv[0];
    w->pidfd = sys_pidfd_open(pid, 0);
    w->generation++;
    return 0;
}

/* Gives the helper up: SIGKILL (it dies at once unless it sleeps uninterruptibly, in which case
 * it dies when the filesystem answers or aborts), the channel closed, and it is kept to be
 * reaped later. Returns its pid while it is not reaped yet, else 0. */
static pid_t give_up(struct fsworker *w)
{
    pid_t pid = w->pid;
    util_closep(&w->sock);
    if (w->pidfd >= 0)
        (void)sys_pidfd_send_signal(w->pidfd, SIGKILL, NULL, 0);
    w->pid = 0;
    if (waitpid(pid, NULL, WNOHANG) == pid) {
        util_closep(&w->pidfd);
        return 0;
    }
    /* start() left room: it starts no helper while FSWORKER_STUCK_MAX are kept. */
    w->stuck[w->nstuck++] = (struct given_up){.pid = pid, .pidfd = w->pidfd};
    w->pidfd = -1;
    return pid;
}

int fsworker_call(struct fsworker *w, const void *req, size_t len, int fd, int64_t timeout_ms,
                  void **ret_reply, size_t *ret_len, int *ret_fd, pid_t *ret_stuck)
{
    *ret_stuck = 0;
    if (w->stop && *w->stop)
        return -EINTR;
    if (len > FSWORKER_REQUEST_MAX || getpid() != w->owner)
        return -EINVAL;
    int r;
    /* Given-up helpers whose filesystem came back have ended: reaped here, not left as
     * zombies until the next stall (a watcher may be pid 1 of its container). */
    if (w->nstuck)
        reap(w);
    if (!w->pid && (r = start(w)) < 0)
        return r;
    int64_t deadline = util_now_ms() + timeout_ms;
    if ((r = send_frame(w->sock, req, len, fd, true)) < 0 ||
        (r = recv_frame(w, w->sock, deadline, FSWORKER_REPLY_MAX, ret_reply, ret_len, ret_fd)) <
            0) {
        if (r == -EAGAIN)
            r = -ETIMEDOUT; /* the request did not fit: the helper reads no more */
        *ret_stuck = give_up(w);
        return r == -ECONNRESET ? -EPIPE : r;
    }
    return 0;
}

void fsworker_free(struct fsworker *w)
{
    if (!w)
        return;
    if (getpid() != w->owner) {
        util_closep(&w->sock);
        util_closep(&w->pidfd);
        for (size_t i = 0; i < w->nstuck; i++)
            util_closep(&w->stuck[i].pidfd);
        free(w);
        return;
    }
    if (w->pid) {
        /* The end of the channel is the helper's cue to leave. */
        util_closep(&w->sock);
        if (w->pidfd >= 0) {
            struct pollfd p = {.fd = w->pidfd, .events = POLLIN};
            (void)poll(&p, 1, EXIT_WAIT_MS);
        }
        if (waitpid(w->pid, NULL, WNOHANG) == w->pid)
            util_closep(&w->pidfd);
        else
            (void)give_up(w);
        w->pid = 0;
    }
    reap(w);
    for (size_t i = 0; i < w->nstuck; i++)
        util_closep(&w->stuck[i].pidfd);
    util_closep(&w->pidfd);
    free(w);
}
