/* SPDX-License-Identifier: Apache-2.0 */
/* A runtime pinned and reached: what the target is, acting as its user (its root opened as that
 * user), its diagnostic socket found and ProcessInfo asked, before anything is written. */
#include "flow/attempt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/render.h"
#include "base/util.h"
#include "flow/attach_explain.h"
#include "runtime/ipc_conn.h"
#include "runtime/runtime_info.h"
#include "target/creds.h"
#include "target/diag_socket.h"
#include "target/target.h"

/* A target string (a path, a name) as a person may read it: rendered (render.h). */
static const char *shown(const char *raw, char *buf, size_t size)
{
    render_text(raw, strlen(raw), buf, size);
    return buf;
}

/* Is a profiler already set up through the target's environment? The runtime would then answer
 * "already active"; naming the variable tells people why. */
static void note_profiler_env(const struct target *t, struct attach_result *res)
{
    static const char *const prefixes[] = {"CORECLR_", "DOTNET_", "COMPlus_"};
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        char name[64];
        const char *v;
        size_t vlen;
        snprintf(name, sizeof(name), "%sENABLE_PROFILING", prefixes[i]);
        if (target_getenv(t, name, &v, &vlen) && vlen == 1 && v[0] == '1') {
            snprintf(res->profiler_env, sizeof(res->profiler_env), "%s=1", name);
            return;
        }
    }
}

static void fill_runtime(struct attach_result *res, const struct ipc_process_info *pi)
{
    struct runtime_info ri;
    _Static_assert(sizeof(res->runtime_version) == sizeof(ri.version) &&
                       sizeof(res->runtime_rid) == sizeof(ri.rid) &&
                       sizeof(res->os_arch) == sizeof(ri.os) + sizeof(ri.arch),
                   "attach_result keeps the runtime's strings as runtime_info renders them");
    runtime_info_from(pi, &ri);
    res->have_runtime = true;
    memcpy(res->runtime_version, ri.version, sizeof(res->runtime_version));
    memcpy(res->runtime_rid, ri.rid, sizeof(res->runtime_rid));
    snprintf(res->os_arch, sizeof(res->os_arch), "%s-%s", ri.os, ri.arch);
}

/* What the pinned target is, from the /proc files target_open() read. */
static int inspect_target(struct target *t, struct attach_result *res)
{
    int r;
    res->nspid = t->status.nspid;
    res->uid = t->status.uid[1];
    res->gid = t->status.gid[1];
    res->starttime = t->stat.starttime;
    memcpy(res->command_line, t->cmdline, sizeof(res->command_line));
    shown(t->tmpdir, res->tmpdir, sizeof(res->tmpdir));
    /* The process selected is the one pinned: if it has exited, or its pid belongs to another
     * process now (start time), nothing more is read from it and nothing is sent. */
    if ((r = target_check_alive(t, &res->error)) < 0)
        return attach_fail(res, ATTACH_NOT_FOUND, r);
    if (!t->environ) {
        attach_explain_environ(t, &res->error);
        return attach_fail(res, ATTACH_PERMISSION, -t->environ_errno);
    }
    note_profiler_env(t, res);
    return 0;
}

/* Every access to the target's files and socket is made as its user, with its groups and only
 * its own filesystem capabilities (creds.h); its root is opened as that user too. */
static int act_as_user(struct target *t, struct creds_saved *cs, struct attach_result *res)
{
    struct cla_error *e = &res->error;
    struct creds_target ct;
    int r;
    creds_target_of(t->procfd, &t->status, &ct);
    if ((r = creds_check(&ct, e)) < 0)
        return attach_fail(res, ATTACH_PERMISSION, r);
    if ((r = creds_become(&ct, cs, e)) < 0)
        return attach_fail(res, ATTACH_PERMISSION, r);
    if ((r = target_open_root(t, e)) < 0) {
        if (r == -EACCES || r == -EPERM)
            err_hint(e, "reading /proc/%d/root needs the app's uid or CAP_SYS_PTRACE", (int)t->pid);
        return attach_fail(res, attach_outcome_of_errno(r), r);
    }
    return 0;
}

/* Finds the target's socket and asks who answers (ProcessInfo). This also proves the socket is
 * live before anything is written into the target: a stale socket (crashed process) refuses the
 * connection. A runtime too old for ProcessInfo (-EREMOTEIO) is no reason to stop. */
static int connect_runtime(struct target *t, int64_t timeout_ms, struct attach_conn *c,
                           struct attach_result *res)
{
    struct cla_error *e = &res->error;
    enum attach_outcome o;
    uint32_t hr;
    int r;
    if ((r = diag_socket_find(t, NULL, &c->s, e)) < 0)
        return attach_fail(res, attach_outcome_of_errno(r), r);
    if ((r = attach_explain_socket(t, &c->s, &o, e)) < 0)
        return attach_fail(res, o, r);
    shown(c->s.name, res->socket_name, sizeof(res->socket_name));
    c->sockfd = diag_socket_open(t, &c->s, e);
    if (c->sockfd < 0)
        return attach_fail(res, attach_outcome_of_errno(c->sockfd), c->sockfd);

    c->peer = (struct ipc_peer){.pid = t->pid, .uid = res->uid};
    struct ipc_process_info pi = {0};
    r = ipc_conn_process_info(c->sockfd, &c->peer, util_now_ms() + timeout_ms, &pi, &hr, e);
    if (r == -ECONNREFUSED) {
        attach_explain_stale(t, c->s.name, e);
        return attach_fail(res, ATTACH_PROTOCOL, r);
    }
    if (r == -EACCES) {
        attach_explain_socket_owner(c->sockfd, t, c->s.name, e);
        return attach_fail(res, ATTACH_PERMISSION, r);
    }
    if (r < 0 && r != -EREMOTEIO)
        return attach_fail(res, ATTACH_PROTOCOL, r);
    if (r == 0) {
        fill_runtime(res, &pi);
        ipc_process_info_free(&pi);
    }
    err_clear(e);
    return 0;
}

int attach_reach(struct target *t, int64_t timeout_ms, struct creds_saved *cs,
                 struct attach_conn *c, struct attach_result *res)
{
    int r;
    if ((r = inspect_target(t, res)) < 0)
        return r;
    if ((r = act_as_user(t, cs, res)) < 0)
        return r;
    return connect_runtime(t, timeout_ms, c, res);
}

int attach_pin(const struct attach_opts *o, pid_t pid, struct target *ret_target,
               struct attach_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->pid = pid;
    int64_t start = util_now_ms();
    if (pid <= 0) {
        err_set(&ret->error, -EINVAL, "pid %d is not a process id", (int)pid);
        return attach_fail(ret, ATTACH_USAGE, -EINVAL);
    }
    /* A TMPDIR clrattach refuses ends here as the target's fault (-EPROTO), before anything is
     * written into the target. */
    int r = target_open(o->proc_dirfd, pid, ret_target, &ret->error);
    if (r < 0) {
        attach_fail(ret, attach_outcome_of_errno(r), r);
        ret->duration_ms = util_now_ms() - start;
    }
    return r;
}
