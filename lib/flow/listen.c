/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s loop: runtimes accepted on the socket, each instance's commands sent and their
 * replies read without blocking, its machine (listen_fsm) stepped; the delivery and the outcome
 * are in listen_deliver.c and listen_outcome.c.
 */
#include "flow/listen.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/render.h"
#include "base/util.h"
#include "deliver/placeholders.h"
#include "flow/listen_fsm.h"
#include "flow/listen_internal.h"
#include "profset/profset.h"
#include "profset/vendors.h"
#include "runtime/ipc_conn.h"
#include "runtime/ipc_environ.h"
#include "runtime/runtime_info.h"

/* What a ResumeRuntime may take, at most, on its own connection. */
#define RESUME_WAIT_MS 5000
/* After a stop, how long the owed resumes may take before we leave anyway. */
#define STOP_GRACE_MS 3000

static struct inst *find(struct loop *l, const struct ipc_guid *c)
{
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++)
        if (l->inst[i] && memcmp(l->inst[i]->cookie.b, c->b, sizeof(c->b)) == 0)
            return l->inst[i];
    return NULL;
}

static bool was_done(const struct loop *l, const struct ipc_guid *c)
{
    size_t n = l->ndone < DONE_COOKIES ? l->ndone : DONE_COOKIES;
    for (size_t i = 0; i < n; i++)
        if (memcmp(l->done[i].b, c->b, sizeof(c->b)) == 0)
            return true;
    return false;
}

static void inst_free(struct loop *l, size_t i)
{
    struct inst *in = l->inst[i];
    if (!in)
        return;
    if (in->idle_fd >= 0)
        close(in->idle_fd);
    if (in->busy_fd >= 0)
        close(in->busy_fd);
    ipc_conn_rx_free(&in->rx);
    free(in->env_block);
    ipc_process_info_free(&in->pi);
    free(in);
    l->inst[i] = NULL;
}

/* A connection that advertised: a new instance, or the next connection of a known one. */
static void take_conn(struct loop *l, struct listen_conn *c, int64_t now)
{
    struct inst *in = find(l, &c->adv.cookie);
    if (in) {
        /* The kernel's word on who connected: the cookie is the peer's own claim, so another
         * uid cannot step into an instance by repeating it. */
        if (c->peer_uid != in->peer_uid || in->idle_fd >= 0) {
            /* A second idle connection of one instance is not the runtime's (it holds one at a
             * time): the first stays, the copy goes. */
            l->refused_conns++;
            close(c->fd);
            return;
        }
        in->idle_fd = c->fd;
        listen_fsm_connected(&in->fsm);
        return;
    }
    if (l->served) {
        close(c->fd);
        return;
    }
    size_t slot = LISTEN_INSTANCES_MAX;
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX && slot == LISTEN_INSTANCES_MAX; i++)
        if (!l->inst[i])
            slot = i;
    if (slot == LISTEN_INSTANCES_MAX || !(in = calloc(1, sizeof(*in)))) {
        l->refused_conns++;
        close(c->fd);
        return;
    }
    in->cookie = c->adv.cookie;
    in->nspid = c->adv.pid;
    in->peer_pid = c->peer_pid;
    in->peer_uid = c->peer_uid;
    in->idle_fd = c->fd;
    in->busy_fd = -1;
    in->quiet_since = now;
    struct listen_fsm_cfg cfg = {
        .env_count = l->env_count,
        .attach_allowed = !l->inert || l->o->force,
        .env_running = l->o->force,
        .resume_deadline_ms = l->o->resume_deadline_ms,
        .timeout_ms = l->o->timeout_ms,
    };
    listen_fsm_init(&in->fsm, &cfg, now);
    in->res.nspid = (pid_t)c->adv.pid;
    in->res.listen = true;
    in->res.pid = c->peer_pid;
    in->res.uid = c->peer_uid;
    in->res.gid = c->peer_gid;
    snprintf(in->res.socket_name, sizeof(in->res.socket_name), "%s", l->o->path);
    memcpy(in->res.vendor_env, l->vendor_env, sizeof(in->res.vendor_env));
    /* A runtime served before whose record was let go (it stayed away past --timeout): its
     * connection is parked, never served again, and never closed, which would have it
     * reconnect at once, over and over. */
    if (was_done(l, &c->adv.cookie)) {
        in->reported = true;
        listen_fsm_gone(&in->fsm);
    }
    l->inst[slot] = in;
}

/* {dir} and {entry} expanded in `in`, the app's view of where the profiler went. */
static int expand(const struct inst *in, const uint8_t *src, size_t len, uint8_t *out, size_t size,
                  size_t *ret_len, struct cla_error *e)
{
    return placeholders_expand(src, len, in->app_dir, in->app_path, out, size, ret_len, e);
}

/* What the runtime is given to load: the env loader (with --env), else the profiler. */
static const char *load_path(const struct inst *in)
{
    return in->load_path[0] ? in->load_path : in->app_path;
}

/* The request for the command the machine handed out. Returns its length or a negative
 * error (the operator's --env or client data too long once expanded). */
static int encode(struct loop *l, struct inst *in, enum listen_cmd cmd, int arg, uint8_t **ret,
                  struct cla_error *e)
{
    static const uint8_t info_ids[3] = {IPC_PROCESS_INFO3, IPC_PROCESS_INFO2, IPC_PROCESS_INFO};
    const struct listen_opts *o = l->o;
    size_t room = IPC_MAX_MESSAGE;
    uint8_t *buf = malloc(room);
    if (!buf)
        return err_set(e, -ENOMEM, "out of memory");
    int n;
    switch (cmd) {
    case LISTEN_CMD_PROCESS_INFO:
        n = ipc_encode_simple(IPC_SET_PROCESS, info_ids[arg], buf, room, e);
        break;
    case LISTEN_CMD_ENVIRONMENT:
        n = ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_ENVIRONMENT, buf, room, e);
        break;
    case LISTEN_CMD_RESUME:
        n = ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_RESUME, buf, room, e);
        break;
    case LISTEN_CMD_STARTUP: n = ipc_encode_startup(&o->clsid, load_path(in), buf, room, e); break;
    case LISTEN_CMD_SETENV: {
        const char *nv = l->env[arg];
        size_t nl;
        char name[ENV_VAR_BYTES_MAX + 1], value[ENV_VAR_BYTES_MAX + 1];
        size_t vn = 0;
        n = ipc_env_check(nv, &nl, e);
        if (n == 0) {
            memcpy(name, nv, nl);
            name[nl] = '\0';
            n = expand(in, (const uint8_t *)nv + nl + 1, strlen(nv + nl + 1), (uint8_t *)value,
                       ENV_VAR_BYTES_MAX - nl - 1, &vn, e);
        }
        if (n == 0) {
            value[vn] = '\0';
            if (in->res.env_count < ENV_VARS_MAX) {
                char raw[2 * ENV_VAR_BYTES_MAX + 2];
                snprintf(raw, sizeof(raw), "%s%s%s", name, o->show_env ? "=" : "",
                         o->show_env ? value : "");
                render_text(raw, strlen(raw), in->res.env[in->res.env_count], ENV_SHOWN_MAX);
                in->res.env_count++;
            }
            n = ipc_encode_setenv(name, value, buf, room, e);
        }
        break;
    }
    case LISTEN_CMD_VERIFY:
        /* What StartupProfiler was given, without client data. A runtime that loaded it maps
         * the same library again (a reference more), has its class factory create one more
         * instance (the profiler's constructor runs), and refuses before Initialize, releasing
         * both. */
        n = ipc_encode_attach(o->attach_timeout_ms, &o->clsid, load_path(in), NULL, 0, buf, room,
                              e);
        break;
    case LISTEN_CMD_ATTACH: {
        size_t cdn = 0;
        uint8_t *cd = NULL;
        n = 0;
        if (o->client_data_len) {
            cd = malloc(IPC_MAX_CLIENT_DATA);
            n = cd ? expand(in, o->client_data, o->client_data_len, cd, IPC_MAX_CLIENT_DATA, &cdn,
                            e)
                   : err_set(e, -ENOMEM, "out of memory");
        }
        if (n == 0)
            n = ipc_encode_attach(o->attach_timeout_ms, &o->clsid, load_path(in), cd, cdn, buf,
                                  room, e);
        free(cd);
        break;
    }
    default: n = err_set(e, -EINVAL, "listen: no command"); break;
    }
    if (n < 0) {
        free(buf);
        return n;
    }
    *ret = buf;
    return n;
}

/* Sends the command on the instance's idle connection, which becomes busy. A frame is small
 * (at most 64 KiB) and the connection fresh: it goes out whole or the peer is not a runtime. */
static void send_cmd(struct loop *l, struct inst *in, const struct listen_step *s, int64_t now)
{
    struct cla_error e = {0};
    _cleanup_free_ uint8_t *req = NULL;
    int n = encode(l, in, s->cmd, s->arg, &req, &e);
    struct listen_reply fail = {.err = n, .pauses = -1};
    if (n < 0) {
        in->res.error = e;
        listen_fsm_replied(&in->fsm, now, &fail);
        return;
    }
    ssize_t w = send(in->idle_fd, req, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    int fd = in->idle_fd;
    in->idle_fd = -1;
    if (w != n) {
        close(fd);
        fail.err = -EPIPE;
        err_set(&in->res.error, -EPIPE, "listen: sending %s failed", listen_cmd_name(s->cmd));
        listen_fsm_replied(&in->fsm, now, &fail);
        return;
    }
    in->busy_fd = fd;
    in->busy_cmd = s->cmd;
    in->busy_arg = s->arg;
    int64_t wait = s->cmd == LISTEN_CMD_RESUME && l->o->timeout_ms > RESUME_WAIT_MS
                       ? RESUME_WAIT_MS
                       : l->o->timeout_ms;
    in->busy_deadline = now + wait;
    /* Before the resume, no exchange may run past --resume-deadline. */
    if (s->cmd != LISTEN_CMD_RESUME && in->fsm.paused && !in->fsm.resume_sent &&
        in->fsm.resume_by < in->busy_deadline)
        in->busy_deadline = in->fsm.resume_by;
    if (s->cmd == LISTEN_CMD_STARTUP || s->cmd == LISTEN_CMD_ATTACH)
        in->res.resume_owed = in->fsm.paused;
    memset(&in->rx, 0, sizeof(in->rx));
}

/* The reply is in (or the connection failed: err < 0): decoded and fed to the machine. */
static void finish_busy(struct inst *in, int err, int64_t now)
{
    struct listen_reply r = {.err = err, .pauses = -1};
    struct cla_error e = {0};
    enum listen_cmd cmd = in->busy_cmd;
    if (err == 0) {
        const struct ipc_header *h = &in->rx.hdr;
        bool ok = h->command_set == IPC_SET_SERVER && h->command_id == IPC_SERVER_OK;
        if (cmd == LISTEN_CMD_PROCESS_INFO && ok) {
            static const int versions[3] = {3, 2, 1};
            ipc_process_info_free(&in->pi);
            r.err = ipc_decode_process_info(versions[in->busy_arg], in->rx.payload, in->rx.plen,
                                            &in->pi, &e);
            in->have_pi = r.err == 0;
        } else if (cmd == LISTEN_CMD_ENVIRONMENT && ok) {
            r.err = ipc_environ_pauses(in->env_block, in->env_len, &e);
            r.pauses = r.err < 0 ? -1 : r.err;
            r.err = r.err < 0 ? r.err : 0;
        } else {
            r.err = ipc_decode_status(h, in->rx.payload, in->rx.plen, &r.hr, &e);
        }
    }
    if (r.err < 0 && cmd != LISTEN_CMD_ENVIRONMENT)
        in->res.error = e;
    if (cmd == LISTEN_CMD_SETENV && r.err == 0 && r.hr == 0)
        in->res.env_sent++;
    if (cmd == LISTEN_CMD_RESUME) {
        in->res.resumed = r.err == 0 && r.hr == 0;
        in->res.resumed_after_ms = now - in->fsm.started;
    }
    if (cmd == LISTEN_CMD_STARTUP || cmd == LISTEN_CMD_ATTACH) {
        in->res.have_hresult = r.err == 0;
        in->res.hresult = r.hr;
    }
    close(in->busy_fd);
    in->busy_fd = -1;
    ipc_conn_rx_free(&in->rx);
    memset(&in->rx, 0, sizeof(in->rx));
    free(in->env_block);
    in->env_block = NULL;
    in->env_len = in->env_got = 0;
    in->quiet_since = now;
    listen_fsm_replied(&in->fsm, now, &r);
}

/* Reads what has arrived on the busy connection. */
static void read_busy(struct inst *in, int64_t now)
{
    struct cla_error e = {0};
    if (!in->env_block || in->env_got < in->env_len) {
        if (in->env_block) {
            ssize_t n = recv(in->busy_fd, in->env_block + in->env_got, in->env_len - in->env_got,
                             MSG_DONTWAIT);
            if (n > 0)
                in->env_got += (uint32_t)n;
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                return finish_busy(in, -EPROTO, now);
            if (in->env_got == in->env_len)
                return finish_busy(in, 0, now);
            return;
        }
        int r = ipc_conn_rx_step(in->busy_fd, &in->rx, &e);
        if (r < 0) {
            in->res.error = e;
            return finish_busy(in, r, now);
        }
        if (r == 0)
            return;
        bool ok =
            in->rx.hdr.command_set == IPC_SET_SERVER && in->rx.hdr.command_id == IPC_SERVER_OK;
        if (in->busy_cmd == LISTEN_CMD_ENVIRONMENT && ok) {
            /* The block comes after the reply frame, on the same connection. */
            uint32_t n;
            if (ipc_environ_decode_head(in->rx.payload, in->rx.plen, &n, &e) < 0 ||
                !(in->env_block = malloc(n)))
                return finish_busy(in, -EPROTO, now);
            in->env_len = n;
            return;
        }
        return finish_busy(in, 0, now);
    }
}

/* Does ProcessInfo match --match-cmdline and --match-entry? */
static bool selected(const struct listen_opts *o, const struct inst *in)
{
    if (o->match_cmdline &&
        (!in->pi.command_line || !strstr(in->pi.command_line, o->match_cmdline)))
        return false;
    if (o->match_entry &&
        (!in->pi.entrypoint_assembly || strcmp(in->pi.entrypoint_assembly, o->match_entry) != 0))
        return false;
    return true;
}

static void fill_runtime(struct attach_result *res, const struct ipc_process_info *pi)
{
    struct runtime_info ri;
    runtime_info_from(pi, &ri);
    res->have_runtime = true;
    memcpy(res->runtime_version, ri.version, sizeof(res->runtime_version));
    memcpy(res->runtime_rid, ri.rid, sizeof(res->runtime_rid));
    snprintf(res->os_arch, sizeof(res->os_arch), "%s-%s", ri.os, ri.arch);
    if (pi->command_line)
        render_text(pi->command_line, strlen(pi->command_line), res->command_line,
                    sizeof(res->command_line));
}

/* One turn of an instance: as many steps as can be taken without waiting. */
static void step(struct loop *l, struct inst *in, int64_t now, int64_t *wake)
{
    for (int guard = 0; guard < 8; guard++) {
        struct listen_step s;
        struct cla_error e = {0};
        enum listen_action a = listen_fsm_next(&in->fsm, now, &s);
        switch (a) {
        case LISTEN_SEND:
            if (in->idle_fd < 0) {
                /* Wait for the runtime's next connection; it reconnects at once after each
                 * command. A runtime silent for --timeout is gone. Hand the step back. */
                listen_fsm_unsent(&in->fsm);
                if (now - in->quiet_since >= l->o->timeout_ms)
                    listen_fsm_gone(&in->fsm);
                else if (in->quiet_since + l->o->timeout_ms < *wake)
                    *wake = in->quiet_since + l->o->timeout_ms;
                if (listen_fsm_end(&in->fsm) == LISTEN_END_NONE)
                    return;
                continue;
            }
            send_cmd(l, in, &s, now);
            if (in->busy_fd >= 0)
                return;
            continue;
        case LISTEN_SELECT: {
            if (in->have_pi)
                fill_runtime(&in->res, &in->pi);
            bool match = selected(l->o, in) && !(l->o->once && l->chosen);
            l->chosen |= match;
            listen_fsm_selected(&in->fsm, match);
            continue;
        }
        case LISTEN_DELIVER: {
            int r = listen_deliver(l, in, &e);
            if (r < 0)
                in->res.error = e;
            listen_fsm_delivered(&in->fsm, r);
            continue;
        }
        case LISTEN_WAIT:
            if (s.wake < *wake)
                *wake = s.wake;
            return;
        case LISTEN_DONE:
            if (in->reported)
                return;
            in->reported = true;
            if (l->ndone < SIZE_MAX)
                l->done[l->ndone++ % DONE_COOKIES] = in->cookie;
            if (listen_fsm_end(&in->fsm) == LISTEN_END_NOT_SELECTED) {
                listen_not_selected(l, in);
                return;
            }
            listen_fill_outcome(l, in);
            if (l->o->on_result)
                l->o->on_result(&in->res, l->o->userdata);
            if (l->o->once)
                l->served = true;
            return;
        }
    }
}

static int setup(struct loop *l, struct cla_error *e)
{
    const struct listen_opts *o = l->o;
    int r = profset_load(o->profiler_path, o->entry, &l->ps, e);
    if (r < 0)
        return r;
    char clsid[39];
    ipc_guid_format(&o->clsid, clsid);
    const struct vendor_noop *row = NULL;
    for (size_t i = 0; i < l->ps.n && !l->inert; i++) {
        const struct profset_build *b = &l->ps.builds[i];
        const char *name = b->name;
        if (b->dir) {
            const char *p = b->dir->files[b->dir->entry].path, *slash = strrchr(p, '/');
            name = slash ? slash + 1 : p;
        }
        row = vendors_find_noop(vendors_noop, vendors_noop_count, name, clsid);
        l->inert = row != NULL;
    }
    /* Every load here is a startup one: a known vendor's startup settings join --env. */
    int n = vendors_startup_env(row, o->env, o->env_count, l->env, ARRAY_SIZE(l->env),
                                l->vendor_env, sizeof(l->vendor_env));
    if (n < 0)
        return err_set(e, -E2BIG, "--env: with the variables %s needs at startup, over %d",
                       row->vendor, ENV_VARS_MAX);
    l->env_count = (size_t)n;
    l->dirfd = open(o->deliver_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (l->dirfd < 0)
        return err_setsys(e, -errno, "listen: --deliver-dir '%s'", o->deliver_dir);
    return listen_sock_open(o->path, &o->sock, &l->ls, e);
}

/* We are stopping: every instance is told, and a command in flight gets a second at most (the
 * owed resume must go out within the grace, on the connection after it). */
static void stop_all(struct loop *l, int64_t now)
{
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++) {
        struct inst *in = l->inst[i];
        if (!in)
            continue;
        listen_fsm_stop(&in->fsm, now);
        if (in->busy_fd >= 0 && in->busy_cmd != LISTEN_CMD_RESUME && in->busy_deadline > now + 1000)
            in->busy_deadline = now + 1000;
    }
}

/* The app shares the directory: a socket it removed or replaced leaves us deaf to runtimes that
 * start from now on (their connect goes where the name points). We never follow or remove what
 * is there now, and stay up for the runtimes already connected: said once, and again if it
 * recurs after the name came back. */
static void check_name(struct loop *l)
{
    struct cla_error w = {0};
    bool bad = listen_sock_check(l->ls, &w) < 0;
    if (bad && !l->name_lost && l->o->on_warning)
        l->o->on_warning(&w, l->o->userdata);
    l->name_lost = bad;
}

/* One turn of every instance: replies overdue, steps taken, finished ones let go. Lowers *wake
 * to the next deadline; returns whether an instance is still running. */
static bool turn(struct loop *l, int64_t now, int64_t *wake)
{
    bool running = false;
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++) {
        struct inst *in = l->inst[i];
        if (!in)
            continue;
        if (in->busy_fd >= 0 && now >= in->busy_deadline) {
            err_set(&in->res.error, -ETIMEDOUT, "%s: no answer before the deadline",
                    listen_cmd_name(in->busy_cmd));
            finish_busy(in, -ETIMEDOUT, now);
        }
        if (in->busy_fd < 0)
            step(l, in, now, wake);
        if (in->busy_fd >= 0 && in->busy_deadline < *wake)
            *wake = in->busy_deadline;
        if (listen_fsm_end(&in->fsm) == LISTEN_END_NONE)
            running = true;
        /* A finished instance without a connection, quiet for --timeout: its runtime has
         * exited, or comes back as a parked record (take_conn). The slot is freed. */
        else if (in->reported && in->idle_fd < 0 && in->busy_fd < 0 &&
                 now - in->quiet_since >= l->o->timeout_ms)
            inst_free(l, i);
    }
    return running;
}

/* An idle connection with something to read: the runtime sends nothing on it, so this is its
 * end (it exited) or a peer that is not a runtime. */
static void idle_hangup(struct loop *l, struct inst *in, int64_t now)
{
    close(in->idle_fd);
    in->idle_fd = -1;
    in->quiet_since = now;
    if (listen_fsm_end(&in->fsm) == LISTEN_END_NONE && in->busy_fd < 0)
        listen_fsm_gone(&in->fsm);
    else if (in->reported) {
        for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++)
            if (l->inst[i] == in)
                inst_free(l, i);
    }
}

/* Poll: the listening socket and its waiting peers, each busy connection (a reply), each idle
 * one (a hang-up: the runtime exited), for `left` ms at most; then what arrived is read. */
static int wait_and_read(struct loop *l, int64_t left, struct cla_error *e)
{
    struct pollfd fds[1 + LISTEN_PENDING_MAX + 2 * LISTEN_INSTANCES_MAX];
    struct inst *owner[sizeof(fds) / sizeof(fds[0])];
    size_t nf = listen_sock_pollfds(l->ls, fds, 1 + LISTEN_PENDING_MAX);
    for (size_t k = 0; k < nf; k++)
        owner[k] = NULL;
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++) {
        struct inst *in = l->inst[i];
        if (!in)
            continue;
        int fd = in->busy_fd >= 0 ? in->busy_fd : in->idle_fd;
        if (fd < 0)
            continue;
        fds[nf] = (struct pollfd){.fd = fd, .events = POLLIN};
        owner[nf++] = in;
    }
    int pr = poll(fds, nf, (int)left);
    if (pr < 0 && errno != EINTR)
        return err_setsys(e, -errno, "listen: poll");
    int64_t now = util_now_ms();
    for (size_t k = 0; pr > 0 && k < nf; k++) {
        struct inst *in = owner[k];
        if (!in || !fds[k].revents)
            continue;
        if (fds[k].fd == in->busy_fd)
            read_busy(in, now);
        else if (fds[k].fd == in->idle_fd)
            idle_hangup(l, in, now);
    }
    return 0;
}

/* Until stopped (and the owed resumes sent, or the grace over), or --once served. */
static int run(struct loop *l, struct cla_error *e)
{
    const struct listen_opts *o = l->o;
    int64_t stop_at = 0, next_check = 0;
    for (;;) {
        int64_t now = util_now_ms();
        if (o->stop && o->stop->signal && !stop_at) {
            stop_at = now + STOP_GRACE_MS;
            stop_all(l, now);
        }
        if (now >= next_check) {
            next_check = now + 1000;
            check_name(l);
        }
        struct listen_conn conns[8];
        int n = l->served || stop_at ? 0 : listen_sock_step(l->ls, now, conns, 8, e);
        if (n < 0)
            return n;
        for (int i = 0; i < n; i++)
            take_conn(l, &conns[i], now);

        int64_t wake = listen_sock_next_deadline(l->ls);
        if (wake > next_check)
            wake = next_check;
        bool running = turn(l, now, &wake);
        if ((l->served || stop_at) && !running)
            break;
        if (stop_at && now >= stop_at)
            break;

        int64_t left = wake == INT64_MAX ? 1000 : wake - util_now_ms();
        if (stop_at && stop_at - now < left)
            left = stop_at - now;
        if (left < 0)
            left = 0;
        if (left > 1000)
            left = 1000;
        int r = wait_and_read(l, left, e);
        if (r < 0)
            return r;
    }
    return stop_at ? -EINTR : 0;
}

int listen_run(const struct listen_opts *o, struct cla_error *e)
{
    struct loop *l = calloc(1, sizeof(*l));
    if (!l)
        return err_set(e, -ENOMEM, "out of memory");
    l->o = o;
    l->dirfd = -1;
    int r = setup(l, e);
    if (r == 0 && o->on_listening)
        o->on_listening(o->userdata);
    if (r == 0)
        r = run(l, e);
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++)
        inst_free(l, i);
    listen_sock_close(l->ls);
    if (l->dirfd >= 0)
        close(l->dirfd);
    profset_free(&l->ps);
    free(l);
    return r;
}
