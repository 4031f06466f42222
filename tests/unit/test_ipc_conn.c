/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipc_conn: the socket transport against a forked peer playing the runtime, and a hostile one.
 * A reply in small pieces, a peer that stalls before or inside its reply, closes early, sends
 * garbage or never reads our request: every case ends with the documented code before its
 * deadline, and BOUNDED() fails the test instead of hanging the suite if it does not. The
 * connect tests use a real socket file opened O_PATH, as diag_socket.c hands it over.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "guards.h"
#include "root.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "base/util.h"

#define HR_UNKNOWN_COMMAND 0x80131385u
#define HR_ALREADY_ACTIVE  0x8013136Au

static const uint8_t magic[14] = "DOTNET_IPC_V1";

/* A frame: header for `set`/`id` and `plen` payload bytes after it (filled by the caller). */
static size_t frame(uint8_t *buf, uint8_t set, uint8_t id, size_t plen)
{
    memcpy(buf, magic, sizeof(magic));
    uint16_t size = (uint16_t)(IPC_HEADER_SIZE + plen);
    buf[14] = (uint8_t)size;
    buf[15] = (uint8_t)(size >> 8);
    buf[16] = set;
    buf[17] = id;
    buf[18] = buf[19] = 0;
    return IPC_HEADER_SIZE + plen;
}

static size_t status_frame(uint8_t *buf, bool ok, uint32_t hr)
{
    size_t n = frame(buf, IPC_SET_SERVER, ok ? IPC_SERVER_OK : IPC_SERVER_ERROR, 4);
    for (int i = 0; i < 4; i++)
        buf[IPC_HEADER_SIZE + i] = (uint8_t)(hr >> (8 * i));
    return n;
}

/* Blocking helpers for the peer's side: any failure ends the peer with a distinct status. */
static void peer_read(int fd, uint8_t *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = read(fd, buf, n);
        if (k <= 0)
            _exit(3);
        buf += k;
        n -= (size_t)k;
    }
}

static void peer_write(int fd, const uint8_t *buf, size_t n, size_t chunk, useconds_t pause)
{
    while (n > 0) {
        size_t k = n < chunk ? n : chunk;
        if (write(fd, buf, k) != (ssize_t)k)
            _exit(4);
        buf += k;
        n -= k;
        if (pause)
            usleep(pause);
    }
}

/* What the peer does after reading the 20-byte request. */
enum peer_act {
    PEER_REPLY,       /* sends `reply` in `chunk`-byte pieces, `pause` µs apart, then waits */
    PEER_STALL,       /* sends nothing and holds the connection open */
    PEER_CLOSE,       /* closes at once */
    PEER_REPLY_CLOSE, /* sends `reply` (a truncated frame) and closes */
    PEER_REPLY_STALL, /* sends `reply` (a truncated frame) and holds the connection open */
};

struct peer {
    enum peer_act act;
    const uint8_t *reply;
    size_t reply_len;
    size_t chunk;
    useconds_t pause;
    size_t req_len; /* what the peer reads first (0: it reads nothing at all) */
    size_t read_chunk;
};

static pid_t peer_start(int fd, const struct peer *p)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid)
        return pid;
    /* Reads the request, in slow pieces when asked, and checks it carries the magic. */
    uint8_t *req = malloc(p->req_len + 1);
    size_t got = 0;
    while (got < p->req_len) {
        size_t want = p->read_chunk ? p->read_chunk : p->req_len - got;
        if (want > p->req_len - got)
            want = p->req_len - got;
        peer_read(fd, req + got, want);
        got += want;
        if (p->read_chunk)
            usleep(1000);
    }
    if (p->req_len >= sizeof(magic) && memcmp(req, magic, sizeof(magic)) != 0)
        _exit(5);
    /* A long request carries a counting pattern after its header: every byte in its place. */
    for (size_t i = IPC_HEADER_SIZE; i < p->req_len; i++)
        if (req[i] != (uint8_t)(i % 253))
            _exit(6);
    free(req);
    switch (p->act) {
    case PEER_REPLY:
        peer_write(fd, p->reply, p->reply_len, p->chunk ? p->chunk : p->reply_len, p->pause);
        pause();
        break;
    case PEER_STALL: pause(); break;
    case PEER_CLOSE: break;
    case PEER_REPLY_CLOSE: peer_write(fd, p->reply, p->reply_len, p->reply_len, 0); break;
    case PEER_REPLY_STALL:
        peer_write(fd, p->reply, p->reply_len, p->reply_len, 0);
        pause();
        break;
    }
    _exit(0);
}

/* Ends the peer and returns its exit status (0 when it read what it expected), or -1 when it
 * had to be killed while waiting, which is fine for a peer told to wait. */
static int peer_end(pid_t pid)
{
    kill(pid, SIGTERM);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        return -1;
    return WEXITSTATUS(status);
}

struct conn {
    int ours;
    pid_t peer;
};

static struct conn conn_start(const struct peer *p)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    /* Our end as ipc_conn_connect() makes it: non-blocking. */
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    pid_t pid = peer_start(sv[1], p);
    close(sv[1]);
    return (struct conn){.ours = sv[0], .peer = pid};
}

struct outcome {
    int r;
    struct ipc_header hdr;
    uint8_t *payload;
    size_t len;
    int64_t took_ms;
    struct cla_error e;
};

static uint8_t simple_req[IPC_HEADER_SIZE];

/* The listener of every socket sock_make() binds: this process (setup() fills it in). The
 * forked servers below only accept: SO_PEERCRED names the process that called listen(). */
static struct ipc_peer self;

static void transact(struct conn *c, const uint8_t *req, size_t req_len, int64_t timeout_ms,
                     struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    int64_t t0 = util_now_ms();
    volatile int r = 1;
    BOUNDED(10, r = ipc_conn_transact(c->ours, req, req_len, t0 + timeout_ms, &o->hdr, &o->payload,
                                      &o->len, &o->e));
    o->r = r;
    o->took_ms = util_now_ms() - t0;
    close(c->ours);
}

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    self = (struct ipc_peer){.pid = getpid(), .uid = geteuid()};
    assert_int_equal(
        ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_INFO, simple_req, sizeof(simple_req), NULL),
        IPC_HEADER_SIZE);
    return 0;
}

static void test_reply_in_pieces(void **state)
{
    (void)state;
    /* A header split inside the magic and a payload in 3-byte pieces, 2 ms apart. */
    uint8_t reply[IPC_HEADER_SIZE + 40];
    size_t n = frame(reply, IPC_SET_SERVER, IPC_SERVER_OK, 40);
    for (size_t i = 0; i < 40; i++)
        reply[IPC_HEADER_SIZE + i] = (uint8_t)(0xA0 + i);
    struct peer p = {.act = PEER_REPLY,
                     .reply = reply,
                     .reply_len = n,
                     .chunk = 3,
                     .pause = 2000,
                     .req_len = IPC_HEADER_SIZE};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, 0);
    assert_int_equal(o.hdr.size, IPC_HEADER_SIZE + 40);
    assert_int_equal(o.hdr.command_set, IPC_SET_SERVER);
    assert_int_equal(o.len, 40);
    assert_memory_equal(o.payload, reply + IPC_HEADER_SIZE, 40);
    free(o.payload);
    assert_true(peer_end(c.peer) <= 0);
}

static void test_empty_payload(void **state)
{
    (void)state;
    uint8_t reply[IPC_HEADER_SIZE];
    size_t n = frame(reply, IPC_SET_SERVER, IPC_SERVER_OK, 0);
    struct peer p = {.act = PEER_REPLY, .reply = reply, .reply_len = n, .req_len = 20};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, 0);
    assert_int_equal(o.len, 0);
    assert_null(o.payload);
    assert_true(peer_end(c.peer) <= 0);
}

/* A request far larger than the socket buffer, read by a slow peer: our sends come back short
 * and EAGAIN, and every byte still arrives in its place (the peer checks them). */
static void test_short_writes(void **state)
{
    (void)state;
    const size_t len = 60000;
    uint8_t *req = malloc(len);
    assert_non_null(req);
    frame(req, IPC_SET_PROFILER, IPC_PROFILER_ATTACH, len - IPC_HEADER_SIZE);
    for (size_t i = IPC_HEADER_SIZE; i < len; i++)
        req[i] = (uint8_t)(i % 253);
    uint8_t reply[IPC_HEADER_SIZE + 4];
    size_t n = status_frame(reply, true, 0);
    struct peer p = {
        .act = PEER_REPLY, .reply = reply, .reply_len = n, .req_len = len, .read_chunk = 4096};
    struct conn c = conn_start(&p);
    int small = 4096;
    assert_int_equal(setsockopt(c.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    struct outcome o;
    transact(&c, req, len, 10000, &o);
    free(req);
    assert_int_equal(o.r, 0);
    assert_int_equal(o.len, 4);
    free(o.payload);
    /* 0: the peer read every byte it expected; it was waiting when ended. */
    assert_true(peer_end(c.peer) <= 0);
}

static void test_peer_stalls_before_reply(void **state)
{
    (void)state;
    struct peer p = {.act = PEER_STALL, .req_len = IPC_HEADER_SIZE};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 300, &o);
    assert_int_equal(o.r, -ETIMEDOUT);
    assert_int_equal(o.e.code, -ETIMEDOUT);
    assert_non_null(strstr(o.e.msg, "no reply before the deadline"));
    assert_true(o.took_ms >= 290);
    assert_null(o.payload);
    peer_end(c.peer);
}

static void test_peer_stalls_inside_payload(void **state)
{
    (void)state;
    /* The header promises 100 payload bytes; 10 come, then nothing. */
    uint8_t reply[IPC_HEADER_SIZE + 10];
    frame(reply, IPC_SET_SERVER, IPC_SERVER_OK, 100);
    memset(reply + IPC_HEADER_SIZE, 'x', 10);
    struct peer p = {
        .act = PEER_REPLY_STALL, .reply = reply, .reply_len = sizeof(reply), .req_len = 20};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 300, &o);
    assert_int_equal(o.r, -ETIMEDOUT);
    assert_non_null(strstr(o.e.msg, "100-byte payload not received"));
    assert_null(o.payload);
    peer_end(c.peer);
}

/* A peer that never reads: our request fills its buffer and the send itself times out. */
static void test_peer_never_reads(void **state)
{
    (void)state;
    const size_t len = 65535;
    uint8_t *req = calloc(1, len);
    assert_non_null(req);
    frame(req, IPC_SET_PROFILER, IPC_PROFILER_ATTACH, len - IPC_HEADER_SIZE);
    struct peer p = {.act = PEER_STALL, .req_len = 0};
    struct conn c = conn_start(&p);
    int small = 4096;
    assert_int_equal(setsockopt(c.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    struct outcome o;
    transact(&c, req, len, 300, &o);
    free(req);
    assert_int_equal(o.r, -ETIMEDOUT);
    assert_non_null(strstr(o.e.msg, "sending the request timed out"));
    peer_end(c.peer);
}

static void test_peer_closes(void **state)
{
    (void)state;
    /* Before any reply. */
    struct peer p = {.act = PEER_CLOSE, .req_len = IPC_HEADER_SIZE};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, -ECONNRESET);
    assert_non_null(strstr(o.e.msg, "closed the connection without a reply"));
    assert_int_equal(peer_end(c.peer), 0);

    /* Inside the header: still no reply. */
    uint8_t reply[IPC_HEADER_SIZE + 8] = {0};
    frame(reply, IPC_SET_SERVER, IPC_SERVER_OK, 8);
    p = (struct peer){.act = PEER_REPLY_CLOSE, .reply = reply, .reply_len = 12, .req_len = 20};
    c = conn_start(&p);
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, -ECONNRESET);
    assert_int_equal(peer_end(c.peer), 0);

    /* Inside the payload: a truncated reply is a protocol error. */
    p.reply_len = IPC_HEADER_SIZE + 3;
    c = conn_start(&p);
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, -EPROTO);
    assert_non_null(strstr(o.e.msg, "inside a 8-byte payload"));
    assert_null(o.payload);
    assert_int_equal(peer_end(c.peer), 0);
}

static void test_peer_sends_garbage(void **state)
{
    (void)state;
    /* Not the magic. */
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    struct peer p = {.act = PEER_REPLY, .reply = junk, .reply_len = sizeof(junk), .req_len = 20};
    struct conn c = conn_start(&p);
    struct outcome o;
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, -EPROTO);
    assert_non_null(strstr(o.e.msg, "magic"));
    assert_null(o.payload);
    peer_end(c.peer);

    /* The magic, then a size smaller than the header itself. */
    uint8_t small[IPC_HEADER_SIZE];
    frame(small, IPC_SET_SERVER, IPC_SERVER_OK, 0);
    small[14] = 19;
    p.reply = small;
    p.reply_len = sizeof(small);
    c = conn_start(&p);
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    assert_int_equal(o.r, -EPROTO);
    assert_non_null(strstr(o.e.msg, "smaller than the header"));
    peer_end(c.peer);

    /* The largest size the u16 allows, then more bytes than it: exactly the declared payload
     * is taken, nothing beyond it. */
    const size_t big = 65535 + 1000;
    uint8_t *flood = malloc(big);
    assert_non_null(flood);
    memset(flood, 0xEE, big);
    frame(flood, IPC_SET_SERVER, IPC_SERVER_OK, 65535 - IPC_HEADER_SIZE);
    p.reply = flood;
    p.reply_len = big;
    p.chunk = 7000;
    c = conn_start(&p);
    transact(&c, simple_req, sizeof(simple_req), 5000, &o);
    free(flood);
    assert_int_equal(o.r, 0);
    assert_int_equal(o.len, 65535 - IPC_HEADER_SIZE);
    assert_int_equal(o.payload[o.len - 1], 0xEE);
    free(o.payload);
    peer_end(c.peer);
}

/* A socket file in a fresh directory, bound (and listening with `backlog` >= 0). */
struct sockdir {
    char dir[32];
    char path[80];
    int listen_fd;
    int pathfd;
};

static void sock_make(struct sockdir *s, int backlog)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/test_ipc_conn.XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof(s->path), "%s/s", s->dir);
    s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->listen_fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (backlog >= 0)
        assert_int_equal(listen(s->listen_fd, backlog), 0);
    s->pathfd = open(s->path, O_PATH | O_CLOEXEC);
    assert_true(s->pathfd >= 0);
}

static void sock_remove(struct sockdir *s)
{
    util_closep(&s->listen_fd);
    util_closep(&s->pathfd);
    unlink(s->path);
    rmdir(s->dir);
}

static void test_connect(void **state)
{
    (void)state;
    struct sockdir s;
    sock_make(&s, 4);
    struct cla_error e = {0};
    int fd = ipc_conn_connect(s.pathfd, &self, util_now_ms() + 2000, &e);
    assert_true(fd >= 0);
    /* The fd is the one transact expects: non-blocking and close-on-exec. */
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    int peer = accept4(s.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(peer >= 0);
    assert_int_equal(write(fd, "hi", 2), 2);
    char buf[2];
    assert_int_equal(read(peer, buf, 2), 2);
    assert_memory_equal(buf, "hi", 2);
    close(peer);
    close(fd);

    /* A stale socket: the file stays after its listener has gone. */
    util_closep(&s.listen_fd);
    assert_int_equal(ipc_conn_connect(s.pathfd, &self, util_now_ms() + 2000, &e), -ECONNREFUSED);
    assert_int_equal(e.code, -ECONNREFUSED);
    sock_remove(&s);

    /* Bound, never listening. */
    sock_make(&s, -1);
    assert_int_equal(ipc_conn_connect(s.pathfd, &self, util_now_ms() + 2000, &e), -ECONNREFUSED);
    sock_remove(&s);

    /* Not a socket at all. */
    int devnull = open("/dev/null", O_PATH | O_CLOEXEC);
    assert_true(ipc_conn_connect(devnull, &self, util_now_ms() + 2000, &e) < 0);
    close(devnull);
}

/* A listener that never accepts: once its backlog is full, connect() gives EAGAIN, and we wait
 * for room only until the deadline. */
static void test_connect_backlog_full(void **state)
{
    (void)state;
    struct sockdir s;
    sock_make(&s, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s.path);
    int filler[8];
    size_t nf = 0;
    for (; nf < ARRAY_SIZE(filler); nf++) {
        filler[nf] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(filler[nf] >= 0);
        if (connect(filler[nf], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            assert_int_equal(errno, EAGAIN);
            close(filler[nf]);
            break;
        }
    }
    assert_true(nf < ARRAY_SIZE(filler));
    struct cla_error e = {0};
    int64_t t0 = util_now_ms();
    volatile int r = 0;
    BOUNDED(10, r = ipc_conn_connect(s.pathfd, &self, t0 + 300, &e));
    assert_int_equal(r, -ETIMEDOUT);
    assert_non_null(strstr(e.msg, "backlog"));
    assert_true(util_now_ms() - t0 >= 290);
    for (size_t i = 0; i < nf; i++)
        close(filler[i]);
    sock_remove(&s);
}

/* A socket path longer than sun_path holds: reached through /proc/self/fd, never truncated. */
static void test_connect_long_path(void **state)
{
    (void)state;
    char base[] = "/tmp/test_ipc_conn.XXXXXX";
    assert_non_null(mkdtemp(base));
    char dir[512];
    int n = snprintf(dir, sizeof(dir), "%s", base);
    for (int i = 0; i < 6; i++) {
        n += snprintf(dir + n, sizeof(dir) - (size_t)n, "/%s", "a-rather-long-directory-name");
        assert_int_equal(mkdir(dir, 0700), 0);
    }
    assert_true(n > (int)sizeof(((struct sockaddr_un *)0)->sun_path));
    /* bind() takes the short name relative to a directory we stand in. */
    int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(chdir(dir), 0);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = "s"};
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(fchdir(cwd), 0);
    close(cwd);
    char path[600];
    snprintf(path, sizeof(path), "%s/s", dir);
    int pathfd = open(path, O_PATH | O_CLOEXEC);
    assert_true(pathfd >= 0);
    struct cla_error e = {0};
    int fd = ipc_conn_connect(pathfd, &self, util_now_ms() + 2000, &e);
    assert_true(fd >= 0);
    int peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    assert_true(peer >= 0);
    close(peer);
    close(fd);
    close(pathfd);
    close(l);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* A forked server playing the runtime: for each of up to `n` connections it reads the request
 * header, reports the command id it saw on `ids_fd`, and answers with replies[i]. */
struct script {
    const uint8_t *reply[3];
    size_t reply_len[3];
    size_t n;
};

static pid_t server_start(int listen_fd, const struct script *sc, int ids_fd)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid)
        return pid;
    for (size_t i = 0; i < sc->n; i++) {
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            _exit(2);
        uint8_t req[IPC_HEADER_SIZE];
        peer_read(c, req, sizeof(req));
        uint8_t id = req[17];
        if (write(ids_fd, &id, 1) != 1)
            _exit(4);
        peer_write(c, sc->reply[i], sc->reply_len[i], sc->reply_len[i], 0);
        close(c);
    }
    _exit(0);
}

/* Starts a server for `sc` on a fresh socket; script_end() stops it and gives the command ids
 * it saw, in order. */
static void run_script(const struct script *sc, struct sockdir *s, int *ret_pipe, pid_t *ret_pid)
{
    sock_make(s, 4);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    *ret_pid = server_start(s->listen_fd, sc, p[1]);
    close(p[1]);
    *ret_pipe = p[0];
}

static size_t script_end(struct sockdir *s, int pipe_fd, pid_t pid, uint8_t *ids, size_t max)
{
    kill(pid, SIGTERM);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    ssize_t n = read(pipe_fd, ids, max);
    close(pipe_fd);
    sock_remove(s);
    return n > 0 ? (size_t)n : 0;
}

static void test_status_command(void **state)
{
    (void)state;
    uint8_t ok[24];
    status_frame(ok, false, HR_ALREADY_ACTIVE);
    struct script sc = {.reply = {ok}, .reply_len = {sizeof(ok)}, .n = 1};
    struct sockdir s;
    int pfd;
    pid_t pid;
    run_script(&sc, &s, &pfd, &pid);
    uint8_t req[IPC_HEADER_SIZE];
    ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_RESUME, req, sizeof(req), NULL);
    uint32_t hr = 0;
    struct cla_error e = {0};
    volatile int r = 1;
    BOUNDED(10, r = ipc_conn_status_command(s.pathfd, &self, req, sizeof(req), util_now_ms() + 5000,
                                            &hr, &e));
    assert_int_equal(r, 0);
    assert_int_equal(hr, HR_ALREADY_ACTIVE);
    uint8_t ids[4];
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 1);
    assert_int_equal(ids[0], IPC_PROCESS_RESUME);
}

static void test_process_info_fallback(void **state)
{
    (void)state;
    /* ProcessInfo3 and ProcessInfo2 unknown, each on its own connection; ProcessInfo answers. */
    uint8_t unknown[24];
    status_frame(unknown, false, HR_UNKNOWN_COMMAND);
    uint8_t info[256];
    size_t pl = 0;
    uint8_t *p = info + IPC_HEADER_SIZE;
    const uint8_t head[] = {42, 0, 0, 0, 0, 0, 0, 0};
    memcpy(p, head, 8);
    pl = 8;
    for (int i = 0; i < 16; i++)
        p[pl++] = (uint8_t)i;
    const char *strs[] = {"dotnet app.dll", "Linux", "x64"};
    for (size_t k = 0; k < 3; k++) {
        uint32_t units = (uint32_t)strlen(strs[k]) + 1;
        for (int i = 0; i < 4; i++)
            p[pl++] = (uint8_t)(units >> (8 * i));
        for (const char *c = strs[k]; *c; c++) {
            p[pl++] = (uint8_t)*c;
            p[pl++] = 0;
        }
        p[pl++] = 0;
        p[pl++] = 0;
    }
    size_t info_len = frame(info, IPC_SET_SERVER, IPC_SERVER_OK, pl);
    struct script sc = {.reply = {unknown, unknown, info},
                        .reply_len = {sizeof(unknown), sizeof(unknown), info_len},
                        .n = 3};
    struct sockdir s;
    int pfd;
    pid_t pid;
    run_script(&sc, &s, &pfd, &pid);
    struct ipc_process_info pi = {0};
    uint32_t hr = 0;
    struct cla_error e = {0};
    volatile int r = 1;
    BOUNDED(10, r = ipc_conn_process_info(s.pathfd, &self, util_now_ms() + 5000, &pi, &hr, &e));
    assert_int_equal(r, 0);
    assert_int_equal(pi.version, 1);
    assert_int_equal(pi.pid, 42);
    assert_string_equal(pi.command_line, "dotnet app.dll");
    assert_string_equal(pi.arch, "x64");
    ipc_process_info_free(&pi);
    uint8_t ids[4];
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 3);
    assert_int_equal(ids[0], IPC_PROCESS_INFO3);
    assert_int_equal(ids[1], IPC_PROCESS_INFO2);
    assert_int_equal(ids[2], IPC_PROCESS_INFO);

    /* None known: -EREMOTEIO with the runtime's answer. */
    sc.reply[2] = unknown;
    sc.reply_len[2] = sizeof(unknown);
    run_script(&sc, &s, &pfd, &pid);
    BOUNDED(10, r = ipc_conn_process_info(s.pathfd, &self, util_now_ms() + 5000, &pi, &hr, &e));
    assert_int_equal(r, -EREMOTEIO);
    assert_int_equal(hr, HR_UNKNOWN_COMMAND);
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 3);

    /* Another error HRESULT ends the search at once. */
    uint8_t active[24];
    status_frame(active, false, HR_ALREADY_ACTIVE);
    sc.reply[0] = active;
    run_script(&sc, &s, &pfd, &pid);
    BOUNDED(10, r = ipc_conn_process_info(s.pathfd, &self, util_now_ms() + 5000, &pi, &hr, &e));
    assert_int_equal(r, -EREMOTEIO);
    assert_int_equal(hr, HR_ALREADY_ACTIVE);
    assert_non_null(strstr(e.msg, "0x8013136A"));
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 1);

    /* A reply from another command set: a protocol error, not a fallback. */
    uint8_t odd[24];
    frame(odd, IPC_SET_PROFILER, 0, 4);
    memset(odd + IPC_HEADER_SIZE, 0, 4);
    sc.reply[0] = odd;
    run_script(&sc, &s, &pfd, &pid);
    BOUNDED(10, r = ipc_conn_process_info(s.pathfd, &self, util_now_ms() + 5000, &pi, &hr, &e));
    assert_int_equal(r, -EPROTO);
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 1);
}

/* ipc_conn_rx_step reads a reply as it arrives, never waiting: 0 until the last byte is in, on
 * a non-blocking socket. */
static void test_rx_step(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    uint8_t msg[24];
    status_frame(msg, true, 0x01020304u);
    struct ipc_conn_rx rx = {0};
    struct cla_error e = {0};
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), 0);
    assert_int_equal(write(sv[1], msg, 10), 10);
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), 0);
    assert_false(rx.have_hdr);
    assert_int_equal(write(sv[1], msg + 10, 12), 12);
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), 0);
    assert_true(rx.have_hdr);
    assert_int_equal(write(sv[1], msg + 22, 2), 2);
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), 1);
    assert_int_equal(rx.plen, 4);
    assert_memory_equal(rx.payload, msg + IPC_HEADER_SIZE, 4);
    ipc_conn_rx_free(&rx);
    assert_null(rx.payload);

    /* Closed inside the payload: truncated, a protocol error. */
    assert_int_equal(write(sv[1], msg, 21), 21);
    close(sv[1]);
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), -EPROTO);
    assert_non_null(strstr(e.msg, "truncated"));
    ipc_conn_rx_free(&rx);
    close(sv[0]);

    /* Closed before a whole header: -ECONNRESET; a bad magic: -EPROTO before any allocation. */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(write(sv[1], msg, 5), 5);
    close(sv[1]);
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), -ECONNRESET);
    ipc_conn_rx_free(&rx);
    close(sv[0]);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    msg[0] = 'X';
    assert_int_equal(write(sv[1], msg, sizeof(msg)), (ssize_t)sizeof(msg));
    assert_int_equal(ipc_conn_rx_step(sv[0], &rx, &e), -EPROTO);
    assert_false(rx.have_hdr);
    assert_null(rx.payload);
    ipc_conn_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
}

/* Reads the whole reply on fd into *rx, polling; bounded by the caller's BOUNDED(). */
static int rx_all(int fd, struct ipc_conn_rx *rx, struct cla_error *e)
{
    for (;;) {
        int r = ipc_conn_rx_step(fd, rx, e);
        if (r != 0)
            return r;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, 1000);
    }
}

/* The exchange in halves, as ps drives it: start sends the request of one attempt; finish asks
 * for the next attempt while the runtime does not know the command, and gives its answer after
 * the last. The peer is checked by start before anything is sent. */
static void test_process_info_halves(void **state)
{
    (void)state;
    uint8_t unknown[24];
    status_frame(unknown, false, HR_UNKNOWN_COMMAND);
    struct script sc = {
        .reply = {unknown, unknown}, .reply_len = {sizeof(unknown), sizeof(unknown)}, .n = 2};
    struct sockdir s;
    int pfd;
    pid_t pid;
    run_script(&sc, &s, &pfd, &pid);
    struct cla_error e = {0};
    struct ipc_process_info pi = {0};
    uint32_t hr = 0;
    volatile int r = 1;
    for (int attempt = 1; attempt < IPC_PROCESS_INFO_TRIES; attempt++) {
        int fd = ipc_conn_process_info_start(s.pathfd, &self, attempt, util_now_ms() + 5000, &e);
        assert_true(fd >= 0);
        struct ipc_conn_rx rx = {0};
        BOUNDED(10, r = rx_all(fd, &rx, &e));
        assert_int_equal(r, 1);
        r = ipc_conn_process_info_finish(attempt, &rx, &pi, &hr, &e);
        if (attempt + 1 < IPC_PROCESS_INFO_TRIES) {
            assert_int_equal(r, -EAGAIN);
        } else {
            assert_int_equal(r, -EREMOTEIO);
            assert_int_equal(hr, HR_UNKNOWN_COMMAND);
        }
        ipc_conn_rx_free(&rx);
        close(fd);
    }
    uint8_t ids[4];
    assert_int_equal(script_end(&s, pfd, pid, ids, sizeof(ids)), 2);
    assert_int_equal(ids[0], IPC_PROCESS_INFO2);
    assert_int_equal(ids[1], IPC_PROCESS_INFO);

    /* No attempt past the last. */
    assert_int_equal(ipc_conn_process_info_start(s.pathfd, &self, IPC_PROCESS_INFO_TRIES,
                                                 util_now_ms() + 5000, &e),
                     -EINVAL);
}

/* SO_PEERCRED of a socketpair names its creator: this process. The check takes exactly the pid
 * and uid it is given, and names what it found when they differ. */
static void test_check_peer(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    struct cla_error e = {0};
    assert_int_equal(ipc_conn_check_peer(sv[0], &self, &e), 0);
    struct ipc_peer other_uid = {.pid = self.pid, .uid = self.uid + 1};
    assert_int_equal(ipc_conn_check_peer(sv[0], &other_uid, &e), -EADDRINUSE);
    char want[64];
    snprintf(want, sizeof(want), "served by pid %d (uid %u)", (int)self.pid, (unsigned)self.uid);
    assert_non_null(strstr(e.msg, want));
    assert_non_null(strstr(e.msg, "nothing was sent"));
    assert_true(e.hint[0] != '\0');
    struct ipc_peer other_pid = {.pid = getppid(), .uid = self.uid};
    assert_int_equal(ipc_conn_check_peer(sv[0], &other_pid, &e), -EADDRINUSE);
    /* Not a socket at all: the getsockopt error, not a pass. */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(ipc_conn_check_peer(devnull, &self, &e) < 0);
    close(devnull);
    close(sv[0]);
    close(sv[1]);
}

/* Starts an impostor: a child that binds a fresh socket, takes `uid` (when not ours) and listens,
 * so that SO_PEERCRED names it. It then accepts `accepts` connections and exits with the number
 * of bytes they carried (capped), or with accepts 0 waits to be killed. Fills *s (no listen_fd
 * of ours) and returns the child's pid. */
static pid_t impostor_start(struct sockdir *s, uid_t uid, int accepts)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/test_ipc_conn.XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof(s->path), "%s/s", s->dir);
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t imp = fork();
    assert_true(imp >= 0);
    if (imp == 0) {
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
        /* Gone with the test even when a failed check ends it first: the death signal is set
         * after the uid change, which clears it. */
        if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            (uid != self.uid && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)) ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || listen(l, 4) < 0)
            _exit(2);
        (void)!write(ready[1], "y", 1);
        if (accepts == 0)
            for (;;)
                pause();
        size_t got = 0;
        for (int i = 0; i < accepts; i++) {
            int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
            if (c < 0)
                _exit(3);
            char buf[256];
            ssize_t k;
            while ((k = read(c, buf, sizeof(buf))) > 0)
                got += (size_t)k;
            close(c);
        }
        _exit(got > 100 ? 100 : (int)got);
    }
    close(ready[1]);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    s->listen_fd = -1;
    s->pathfd = open(s->path, O_PATH | O_CLOEXEC);
    assert_true(s->pathfd >= 0);
    return imp;
}

/* An impostor: another process (here of our own uid) listens on the socket that should be the
 * target's. It gets a connection and not one byte of the request; the process named as the
 * listener is taken. */
static void test_peer_another_process(void **state)
{
    (void)state;
    struct sockdir s;
    pid_t imp = impostor_start(&s, self.uid, 2);

    /* Named as the listener: connected. */
    struct cla_error e = {0};
    struct ipc_peer impostor = {.pid = imp, .uid = self.uid};
    int fd = ipc_conn_connect(s.pathfd, &impostor, util_now_ms() + 2000, &e);
    assert_true(fd >= 0);
    close(fd);
    /* Expected to be ourselves: refused before the request, which the impostor never sees. */
    uint8_t req[IPC_HEADER_SIZE];
    ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_RESUME, req, sizeof(req), NULL);
    uint32_t hr = 0;
    volatile int r = 1;
    BOUNDED(10, r = ipc_conn_status_command(s.pathfd, &self, req, sizeof(req), util_now_ms() + 5000,
                                            &hr, &e));
    assert_int_equal(r, -EADDRINUSE);
    char want[48];
    snprintf(want, sizeof(want), "served by pid %d ", (int)imp);
    assert_non_null(strstr(e.msg, want));
    int status;
    assert_int_equal(waitpid(imp, &status, 0), imp);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    sock_remove(&s);
}

/* The listener's uid is the one it had at listen(): a process of another uid is refused even
 * under the right pid. */
static void test_peer_other_uid(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a listener of uid 1000");
    struct sockdir s;
    pid_t imp = impostor_start(&s, 1000, 0);
    struct cla_error e = {0};
    struct ipc_peer as_root = {.pid = imp, .uid = 0};
    assert_int_equal(ipc_conn_connect(s.pathfd, &as_root, util_now_ms() + 2000, &e), -EADDRINUSE);
    char want[48];
    snprintf(want, sizeof(want), "served by pid %d (uid 1000)", (int)imp);
    assert_non_null(strstr(e.msg, want));
    struct ipc_peer as_1000 = {.pid = imp, .uid = 1000};
    int fd = ipc_conn_connect(s.pathfd, &as_1000, util_now_ms() + 2000, &e);
    assert_true(fd >= 0);
    close(fd);
    kill(imp, SIGKILL);
    waitpid(imp, NULL, 0);
    sock_remove(&s);
}

/* A listener in a pid namespace the connecting process cannot see has no pid there (0): never
 * the target, which was pinned through our own /proc. Here the connecting side is put in a new
 * pid namespace, so this process, the listener, is the one it cannot see. */
static void test_peer_invisible(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a new pid namespace");
    struct sockdir s;
    sock_make(&s, 4);
    fflush(NULL);
    pid_t a = fork();
    assert_true(a >= 0);
    if (a == 0) {
        if (unshare(CLONE_NEWPID) < 0)
            _exit(10);
        pid_t b = fork();
        if (b < 0)
            _exit(11);
        if (b == 0) {
            /* The pid we would expect does not matter: nothing here can be seen as it. */
            struct cla_error e = {0};
            int r = ipc_conn_connect(s.pathfd, &self, util_now_ms() + 2000, &e);
            if (r != -EADDRINUSE)
                _exit(r >= 0 ? 1 : 2);
            _exit(strstr(e.msg, "outside our pid namespace") ? 0 : 3);
        }
        int st;
        if (waitpid(b, &st, 0) != b || !WIFEXITED(st))
            _exit(12);
        _exit(WEXITSTATUS(st));
    }
    int status;
    assert_int_equal(waitpid(a, &status, 0), a);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    sock_remove(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_in_pieces),
        cmocka_unit_test(test_empty_payload),
        cmocka_unit_test(test_short_writes),
        cmocka_unit_test(test_peer_stalls_before_reply),
        cmocka_unit_test(test_peer_stalls_inside_payload),
        cmocka_unit_test(test_peer_never_reads),
        cmocka_unit_test(test_peer_closes),
        cmocka_unit_test(test_peer_sends_garbage),
        cmocka_unit_test(test_connect),
        cmocka_unit_test(test_connect_backlog_full),
        cmocka_unit_test(test_connect_long_path),
        cmocka_unit_test(test_status_command),
        cmocka_unit_test(test_process_info_fallback),
        cmocka_unit_test(test_rx_step),
        cmocka_unit_test(test_process_info_halves),
        cmocka_unit_test(test_check_peer),
        cmocka_unit_test(test_peer_another_process),
        cmocka_unit_test(test_peer_other_uid),
        cmocka_unit_test(test_peer_invisible),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
