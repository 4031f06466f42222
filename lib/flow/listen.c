/* SPDX-License-Identifier: Apache-2.0 */
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
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"
#include "deliver/placeholders.h"
#include "flow/listen_fsm.h"
#include "profset/elfinfo.h"
#include "profset/profdir.h"
#include "profset/profset.h"
#include "profset/rid.h"
#include "profset/vendors.h"
#include "runtime/hresult.h"
#include "runtime/ipc_conn.h"
#include "runtime/ipc_environ.h"
#include "runtime/runtime_info.h"

/* What a ResumeRuntime may take, at most, on its own connection. */
#define RESUME_WAIT_MS 5000
/* After a stop, how long the owed resumes may take before we leave anyway. */
#define STOP_GRACE_MS 3000
/* A done instance's cookie is remembered this many times over (a ring): its runtime, still
 * connected and reconnecting only if its parked connection drops, is never served twice. */
#define DONE_COOKIES 1024

/* One runtime instance: the cookie it advertised, what its connections are doing. */
struct inst {
    struct ipc_guid cookie;
    uint64_t nspid;
    pid_t peer_pid;
    uid_t peer_uid;
    struct listen_fsm fsm;
    /* The runtime keeps one connection to us at a time: advertised and waiting for a command
     * (idle), or carrying one (busy). A done instance keeps its idle connection open: closing
     * it would make the runtime reconnect at once, over and over (ds-ipc.c resets its poll
     * timeout to the 10 ms minimum after a hang-up). */
    int idle_fd;
    int busy_fd;
    enum listen_cmd busy_cmd;
    int busy_arg;
    int64_t busy_deadline;
    struct ipc_conn_rx rx;
    uint8_t *env_block; /* ProcessEnvironment's block, read after its reply */
    uint32_t env_len, env_got;
    int64_t quiet_since; /* waiting for a connection since then */
    struct ipc_process_info pi;
    bool have_pi;
    /* What this run delivered, as we see it (below the deliver-dir fd) and as the app does. */
    char ours[TARGET_PATH_MAX];
    char app_path[TARGET_PATH_MAX];
    char app_dir[TARGET_PATH_MAX];
    bool delivered, reused;
    uint64_t dev, ino;
    bool reported;
    struct attach_result res;
};

struct loop {
    const struct listen_opts *o;
    struct listen_sock *ls;
    int dirfd; /* --deliver-dir */
    struct profset ps;
    bool inert; /* the profiler is known to do nothing on attach (vendors.h) */
    struct inst *inst[LISTEN_INSTANCES_MAX];
    struct ipc_guid done[DONE_COOKIES];
    size_t ndone;
    bool served; /* --once: one instance was reported */
    bool chosen; /* --once: one instance was selected; the others are resumed and left */
    uint64_t refused_conns;
    bool name_lost; /* the socket's name was found removed or replaced */
};

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
        .env_count = l->o->env_count,
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
    case LISTEN_CMD_STARTUP: n = ipc_encode_startup(&o->clsid, in->app_path, buf, room, e); break;
    case LISTEN_CMD_SETENV: {
        const char *nv = o->env[arg];
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
        n = ipc_encode_attach(o->attach_timeout_ms, &o->clsid, in->app_path, NULL, 0, buf, room, e);
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
            n = ipc_encode_attach(o->attach_timeout_ms, &o->clsid, in->app_path, cd, cdn, buf, room,
                                  e);
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

/* Said once per instance, on the warning channel: a selector that never matches (a paused
 * runtime reports only the host's path as its command line) otherwise looks like a sidecar that
 * does nothing. The entry assembly and command line are the app's bytes: rendered. */
static void not_selected(struct loop *l, const struct inst *in)
{
    if (!l->o->on_warning || (l->o->once && l->chosen))
        return;
    char entry[128] = "?";
    const char *ea = in->pi.entrypoint_assembly;
    if (in->have_pi && ea)
        render_text(ea, strlen(ea), entry, sizeof(entry));
    struct cla_error w = {0};
    err_set(&w, -ESRCH,
            "runtime namespace pid %d (entry assembly %s, command line %s) does not match the "
            "selectors: left without a profiler (resumed if it was paused)",
            (int)in->res.nspid, entry, in->res.command_line[0] ? in->res.command_line : "?");
    err_hint(&w, "check --match-entry/--match-cmdline against 'clrattach ps' or this line");
    l->o->on_warning(&w, l->o->userdata);
}

/* "<app-dir>/<name>": the path the runtime is given, from what we delivered below our fd. */
static int app_view(const struct listen_opts *o, const char *ours, char *out, size_t size)
{
    const char *app = o->app_dir ? o->app_dir : o->deliver_dir;
    size_t n = strlen(app);
    while (n > 1 && app[n - 1] == '/')
        n--;
    int w = snprintf(out, size, "%.*s%s", (int)n, app, ours);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

/* Libraries every .NET app on Linux has loaded before a profiler comes: the runtime itself needs
 * them (the C library and its loader, libm, libdl, libpthread, librt, libgcc_s, libstdc++). */
static bool base_library(const char *name)
{
    static const char *const base[] = {
        "libc.so", "libm.so",   "libdl.so",  "libpthread.so", "librt.so",      "ld-linux",
        "ld-musl", "libc.musl", "libgcc_s.", "libstdc++.so",  "linux-vdso.so", "ld64.so"};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (strncmp(name, base[i], strlen(base[i])) == 0)
            return true;
    return false;
}

/* Is `name` a file of the profiler directory in one of `runpath`'s $ORIGIN directories, $ORIGIN
 * being `dir` (the needing file's directory in the profiler directory, "" for its top)? */
static bool in_origin(const struct profdir *pd, const char *dir, const char *runpath,
                      const char *name)
{
    char entry[ELF_RUNPATH_MAX + 1];
    for (const char *p = runpath; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(entry, sizeof(entry), "%.*s", (int)n, p);
        p += n + (p[n] == ':');
        const char *rest = NULL;
        if (strncmp(entry, "$ORIGIN", 7) == 0)
            rest = entry + 7;
        else if (strncmp(entry, "${ORIGIN}", 9) == 0)
            rest = entry + 9;
        if (!rest || (*rest && *rest != '/'))
            continue;
        char want[PROFDIR_PATH_MAX + ELF_RUNPATH_MAX + ELF_NEEDED_BYTES + 3];
        snprintf(want, sizeof(want), "%s%s%s/%s", dir, *dir ? "/" : "", rest[0] ? rest + 1 : "",
                 name);
        /* "a//b" and a trailing "/." as the loader reads them; ".." is not followed (a
         * profiler directory keeps its libraries below itself). */
        char norm[sizeof(want)];
        size_t o = 0;
        for (const char *c = want; *c; c++)
            if (!(*c == '/' && (o == 0 || norm[o - 1] == '/')))
                norm[o++] = *c;
        norm[o] = '\0';
        for (size_t i = 0; i < pd->n; i++)
            if (!pd->files[i].is_dir && strcmp(pd->files[i].path, norm) == 0)
                return true;
    }
    return false;
}

/* The dependency check of what can be known without the app's root: every DT_NEEDED of what is
 * delivered is a library every .NET app has, or a file delivered with it (RUNPATH $ORIGIN).
 * Anything else may or may not be in the app's image: named in the result, never a refusal. */
static void known_dependencies(const struct profset_build *b, char *note, size_t size)
{
    size_t nfiles = b->dir ? b->dir->n : 1;
    for (size_t f = 0; f < nfiles; f++) {
        const struct elf_info *ei = b->dir ? b->dir->files[f].elf : &b->elf;
        if (!ei)
            continue;
        const char *who = b->dir ? b->dir->files[f].path : b->name;
        char dir[PROFDIR_PATH_MAX + 1] = "";
        const char *slash = strrchr(who, '/');
        if (b->dir && slash)
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - who), who);
        const char *name = ei->needed;
        for (unsigned i = 0; i < ei->n_needed; i++, name += strlen(name) + 1) {
            if (base_library(name) || (b->dir && in_origin(b->dir, dir, ei->runpath, name)))
                continue;
            /* A note cut short still says what it is. */
            int n = snprintf(note, size,
                             "not checked: %.48s (needed by %.64s): not delivered with the "
                             "profiler nor a runtime library; the app's files are not visible",
                             name, who);
            (void)n;
            return;
        }
    }
    snprintf(note, size,
             "checked against the delivered files and the runtime's own libraries only: the app's "
             "filesystem is not visible from a listening clrattach");
}

/* The build for the runtime's identifier (ProcessInfo3, or --rid), delivered into the shared
 * directory with every guarantee delivery has (deliver.h): exclusive creation, verification
 * through the fd that wrote it, no link followed, nothing overwritten. */
static int deliver(struct loop *l, struct inst *in, struct cla_error *e)
{
    const struct listen_opts *o = l->o;
    struct attach_result *res = &in->res;
    struct rid rid = {0};
    const char *rid_s = o->rid;
    if ((!rid_s || !o->force_rid) && in->pi.runtime_identifier && in->pi.runtime_identifier[0])
        rid_s = in->pi.runtime_identifier;
    res->rid_source = rid_s == o->rid && rid_s ? "--rid" : "runtime";
    if (rid_s && rid_parse(rid_s, &rid) < 0)
        memset(&rid, 0, sizeof(rid));
    snprintf(res->target_rid, sizeof(res->target_rid), "%s", rid.portable);
    const struct profset_build *b;
    int r = profset_choose(&l->ps, &rid, &b, e);
    if (r < 0)
        return r;
    memcpy(res->variant, b->variant, sizeof(res->variant));
    /* Ours, read-only for everyone: the app (another uid, most often) reads and maps it and
     * can neither rewrite nor remove it; a sidecar running as the app's uid makes it the app's. */
    uid_t uid = geteuid();
    char nonce[DELIVER_NONCE_LEN + 1];
    if ((r = deliver_new_nonce(nonce)) < 0)
        return err_setsys(e, r, "getrandom");
    if (b->dir) {
        struct deliver_dir_opts dopts = {.pd = b->dir, .dir = "/", .uid = uid, .nonce = nonce};
        struct deliver_dir_result dr;
        if ((r = deliver_dir(l->dirfd, &dopts, &dr, e)) < 0)
            return r;
        snprintf(in->ours, sizeof(in->ours), "%s", dr.path);
        memcpy(res->sha256, b->dir->digest, sizeof(res->sha256));
        in->reused = dr.reused, in->dev = dr.dev, in->ino = dr.ino;
        if (app_view(o, dr.entry, in->app_path, sizeof(in->app_path)) < 0 ||
            app_view(o, dr.path, in->app_dir, sizeof(in->app_dir)) < 0)
            return err_set(e, -ENAMETOOLONG, "listen: --app-dir and the name are too long");
        render_text(in->app_dir, strlen(in->app_dir), res->delivered_dir,
                    sizeof(res->delivered_dir));
    } else {
        struct deliver_opts dopts = {.data = b->data,
                                     .len = b->len,
                                     .basename = b->name,
                                     .dir = "/",
                                     .uid = uid,
                                     .nonce = nonce};
        struct deliver_result dr;
        if ((r = deliver_profiler(l->dirfd, &dopts, &dr, e)) < 0)
            return r;
        snprintf(in->ours, sizeof(in->ours), "%s", dr.path);
        memcpy(res->sha256, dr.sha256, sizeof(res->sha256));
        in->reused = dr.reused, in->dev = dr.dev, in->ino = dr.ino;
        if (app_view(o, dr.path, in->app_path, sizeof(in->app_path)) < 0 ||
            app_view(o, "", in->app_dir, sizeof(in->app_dir)) < 0)
            return err_set(e, -ENAMETOOLONG, "listen: --app-dir and the name are too long");
    }
    in->delivered = true;
    res->reused = in->reused;
    render_text(in->app_path, strlen(in->app_path), res->delivered_path,
                sizeof(res->delivered_path));
    /* Without the app's root, its loader's directories cannot be searched: what the profiler
     * needs beside the runtime's own libraries must come with it (RUNPATH $ORIGIN). */
    known_dependencies(b, res->dependency_note, sizeof(res->dependency_note));
    return 0;
}

/* What the runtime refused is removed, unless --keep (nothing maps it). */
static void undo(struct loop *l, struct inst *in)
{
    if (!in->delivered || in->reused || l->o->keep)
        return;
    in->res.removed = deliver_undo(l->dirfd, in->ours, in->dev, in->ino, NULL) == 0;
}

/* The machine's end in the terms of an attach result (docs/exit-codes.md). */
static void fill_outcome(struct loop *l, struct inst *in)
{
    struct attach_result *res = &in->res;
    const struct listen_fsm *f = &in->fsm;
    struct cla_error *e = &res->error;
    char hr[16];
    hresult_format(f->hr, hr, sizeof(hr));
    res->resume_owed = res->resume_owed || f->resume_sent;
    res->startup_load = listen_fsm_end(f) == LISTEN_END_STARTUP_LOADED ||
                        listen_fsm_end(f) == LISTEN_END_STARTUP_FAILED ||
                        listen_fsm_end(f) == LISTEN_END_UNVERIFIED;
    res->duration_ms = util_now_ms() - f->started;
    switch (listen_fsm_end(f)) {
    case LISTEN_END_STARTUP_LOADED:
        res->outcome = ATTACH_STARTUP_LOADED;
        snprintf(res->verify_note, sizeof(res->verify_note),
                 "after the resume, AttachProfiler with the same path and CLSID was answered "
                 "CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A): the runtime has a profiler "
                 "loaded");
        err_clear(e);
        return;
    case LISTEN_END_STARTUP_FAILED: {
        char vhr[16];
        hresult_format(f->verify_hr, vhr, sizeof(vhr));
        res->outcome = ATTACH_STARTUP_FAILED;
        if (f->verify_hr == 0) {
            /* Loaded now, on attach: what was delivered stays (it is mapped). */
            err_set(e, -EREMOTEIO,
                    "the runtime took StartupProfiler and was resumed, but did not load the "
                    "profiler as it started: AttachProfiler with the same path and CLSID, sent to "
                    "verify the load, was accepted, so it now runs as an attached profiler");
            err_hint(e, "the profiler refused its startup Initialize: its own log may say why "
                        "(the runtime writes nothing of it on the app's console)");
            return;
        }
        undo(l, in);
        err_set(e, -EREMOTEIO,
                "the runtime took StartupProfiler and was resumed, but did not load the profiler "
                "as it started: AttachProfiler with the same path and CLSID, sent to verify the "
                "load, was answered %s (%s). Likely causes: a wrong --clsid "
                "(CLASS_E_CLASSNOTAVAILABLE), the library or one it needs missing in the app's "
                "view, a build for another architecture or libc (ERROR_MOD_NOT_FOUND)",
                hresult_lookup(f->verify_hr)->name, vhr);
        err_hint(e, "the app runs on without it. %s", hresult_lookup(f->verify_hr)->next_step);
        return;
    }
    case LISTEN_END_UNVERIFIED:
        /* Neither loaded nor failed: what was delivered stays, it may be mapped. */
        res->outcome = ATTACH_PROTOCOL;
        err_set(e, -ETIMEDOUT,
                "the runtime took StartupProfiler and was resumed, but %s: whether it loaded the "
                "profiler is not known",
                f->stopped ? "clrattach was stopped before the load could be verified"
                           : "did not answer the verification (AttachProfiler) within --timeout");
        err_hint(e, "the app runs on; the profiler's own log tells whether it started (the "
                    "runtime writes nothing of a failed load on the app's console)");
        return;
    case LISTEN_END_ATTACHED:
        res->outcome = ATTACH_OK;
        err_clear(e);
        return;
    case LISTEN_END_STARTUP_ONLY:
        res->outcome = ATTACH_INERT;
        err_set(e, -EOPNOTSUPP,
                "the runtime does not pause at startup (a nosuspend port) and the profiler does "
                "nothing when attached to a running runtime: not sent");
        err_hint(e, "start the app with the default 'suspend' tag in DOTNET_DiagnosticPorts, or "
                    "--force to attach it anyway");
        return;
    case LISTEN_END_ENV_RUNNING:
        res->outcome = ATTACH_NOT_READY;
        err_set(e, -EBUSY,
                "the runtime does not pause at startup: --env would change a running app; "
                "nothing was sent");
        err_hint(e, "drop 'nosuspend' from DOTNET_DiagnosticPorts, or --force to set them");
        return;
    case LISTEN_END_GONE:
        res->outcome = in->delivered ? ATTACH_TARGET_DIED : ATTACH_NOT_FOUND;
        err_set(e, -ESRCH, "the runtime stopped connecting (the app exited?)");
        undo(l, in);
        return;
    default: break;
    }
    /* Failed: which step, and how. */
    undo(l, in);
    if (f->err == -EINTR) {
        res->outcome = ATTACH_INTERRUPTED;
        err_set(e, -EINTR, "stopped by a signal before the profiler was loaded%s",
                f->resumed ? "; the runtime was resumed" : "");
    } else if (f->deadline_hit) {
        res->outcome = ATTACH_PROTOCOL;
        err_set(e, -ETIMEDOUT,
                "--resume-deadline (%lld ms) passed before the profiler could be handed over; "
                "the runtime was resumed without it",
                (long long)l->o->resume_deadline_ms);
    } else if (f->failed_cmd == LISTEN_CMD_NONE) {
        res->outcome = ATTACH_DELIVERY;
        err_prefix(e, "delivery into --deliver-dir");
    } else if (f->err < 0) {
        res->outcome = ATTACH_PROTOCOL;
        if (!e->msg[0])
            err_set(e, f->err, "%s: no answer", listen_cmd_name(f->failed_cmd));
        else
            err_prefix(e, "%s", listen_cmd_name(f->failed_cmd));
    } else {
        res->outcome = attach_outcome_of_hresult(f->hr);
        if (res->outcome == ATTACH_OK)
            res->outcome = ATTACH_LOAD_FAILED;
        res->have_hresult = true;
        res->hresult = f->hr;
        err_set(e, -EREMOTEIO, "the runtime refused %s: %s (%s)", listen_cmd_name(f->failed_cmd),
                hresult_lookup(f->hr)->name, hr);
        err_hint(e, "%s", hresult_lookup(f->hr)->next_step);
    }
    if (f->resume_sent)
        err_hint(e, "%s; the runtime was %s", e->hint[0] ? e->hint : "nothing more was sent",
                 f->resumed ? "resumed" : "sent ResumeRuntime, which failed");
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
            int r = deliver(l, in, &e);
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
                not_selected(l, in);
                return;
            }
            fill_outcome(l, in);
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
    for (size_t i = 0; i < l->ps.n && !l->inert; i++) {
        const struct profset_build *b = &l->ps.builds[i];
        const char *name = b->name;
        if (b->dir) {
            const char *p = b->dir->files[b->dir->entry].path, *slash = strrchr(p, '/');
            name = slash ? slash + 1 : p;
        }
        l->inert = vendors_find_noop(vendors_noop, vendors_noop_count, name, clsid) != NULL;
    }
    l->dirfd = open(o->deliver_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (l->dirfd < 0)
        return err_setsys(e, -errno, "listen: --deliver-dir '%s'", o->deliver_dir);
    return listen_sock_open(o->path, &o->sock, &l->ls, e);
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
    int64_t stop_at = 0, next_check = 0;
    while (r == 0) {
        int64_t now = util_now_ms();
        if (o->stop && o->stop->signal && !stop_at) {
            stop_at = now + STOP_GRACE_MS;
            for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++) {
                struct inst *in = l->inst[i];
                if (!in)
                    continue;
                listen_fsm_stop(&in->fsm, now);
                /* A command in flight gets a second at most: the owed resume must go out
                 * within the grace, on the connection after it. */
                if (in->busy_fd >= 0 && in->busy_cmd != LISTEN_CMD_RESUME &&
                    in->busy_deadline > now + 1000)
                    in->busy_deadline = now + 1000;
            }
        }
        /* The app shares the directory: a socket it removed or replaced leaves us deaf to
         * runtimes that start from now on (their connect goes where the name points). We never
         * follow or remove what is there now, and stay up for the runtimes already connected:
         * said once, and again if it recurs after the name came back. */
        if (now >= next_check) {
            struct cla_error w = {0};
            next_check = now + 1000;
            bool bad = listen_sock_check(l->ls, &w) < 0;
            if (bad && !l->name_lost && o->on_warning)
                o->on_warning(&w, o->userdata);
            l->name_lost = bad;
        }
        struct listen_conn conns[8];
        int n = l->served || stop_at ? 0 : listen_sock_step(l->ls, now, conns, 8, e);
        if (n < 0) {
            r = n;
            break;
        }
        for (int i = 0; i < n; i++)
            take_conn(l, &conns[i], now);

        int64_t wake = listen_sock_next_deadline(l->ls);
        if (wake > next_check)
            wake = next_check;
        bool busy_left = false;
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
                step(l, in, now, &wake);
            if (in->busy_fd >= 0 && in->busy_deadline < wake)
                wake = in->busy_deadline;
            if (listen_fsm_end(&in->fsm) == LISTEN_END_NONE)
                busy_left = true;
            /* A finished instance without a connection, quiet for --timeout: its runtime has
             * exited, or comes back as a parked record (take_conn). The slot is freed. */
            else if (in->reported && in->idle_fd < 0 && in->busy_fd < 0 &&
                     now - in->quiet_since >= o->timeout_ms)
                inst_free(l, i);
        }
        if ((l->served || stop_at) && !busy_left)
            break;
        if (stop_at && now >= stop_at)
            break;

        /* Poll: the listening socket and its waiting peers, each busy connection (a reply),
         * each idle one (a hang-up: the runtime exited). */
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
        int64_t left = wake == INT64_MAX ? 1000 : wake - util_now_ms();
        if (stop_at && stop_at - now < left)
            left = stop_at - now;
        if (left < 0)
            left = 0;
        if (left > 1000)
            left = 1000;
        int pr = poll(fds, nf, (int)left);
        if (pr < 0 && errno != EINTR) {
            r = err_setsys(e, -errno, "listen: poll");
            break;
        }
        now = util_now_ms();
        for (size_t k = 0; pr > 0 && k < nf; k++) {
            struct inst *in = owner[k];
            if (!in || !fds[k].revents)
                continue;
            if (fds[k].fd == in->busy_fd) {
                read_busy(in, now);
            } else if (fds[k].fd == in->idle_fd) {
                /* An idle connection with something to read: the runtime sends nothing on it,
                 * so this is its end (it exited) or a peer that is not a runtime. */
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
        }
    }
    if (r == 0 && stop_at)
        r = -EINTR;
    for (size_t i = 0; i < LISTEN_INSTANCES_MAX; i++)
        inst_free(l, i);
    listen_sock_close(l->ls);
    if (l->dirfd >= 0)
        close(l->dirfd);
    profset_free(&l->ps);
    free(l);
    return r;
}
