/* SPDX-License-Identifier: Apache-2.0 */
/* `attach --listen` and `watch --listen`: the runtime connects to clrattach (flow/listen.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_cli.h"
#include "base/opfile.h"
#include "base/util.h"
#include "cli.h"
#include "flow/listen.h"

/* Recorded by the handler, looked at by the loop between two polls (a poll is never restarted,
 * so a signal ends the wait at once). */
static struct attach_stop stop;

static void on_stop_signal(int sig)
{
    stop.signal = sig;
}

struct listen_ctx {
    struct attach_cli *a;
    int code; /* attach --listen: the exit code of its one result */
    unsigned served;
};

static void on_result(const struct attach_result *res, void *userdata)
{
    struct listen_ctx *c = userdata;
    c->served++;
    /* Anything that can connect can make up instance after instance: the results they cause are
     * rate-limited (docs/events.md#rate-limit). The runtime was served all the same. */
    if (!attach_cli_admit(c->a, res)) {
        c->code = attach_outcome_exit_code(res->outcome);
        return;
    }
    if (c->a->watch)
        say(stderr, "clrattach: watch: runtime pid %d in its namespace (uid %u, %s): %s",
            (int)res->nspid, (unsigned)res->uid, res->command_line,
            attach_outcome_name(res->outcome));
    c->code = attach_cli_emit_result(c->a, res, res->outcome != ATTACH_INTERRUPTED);
}

static void on_warning(const struct cla_error *w, void *userdata)
{
    (void)userdata;
    print_error("warning", w);
}

static void on_listening(void *userdata)
{
    struct listen_ctx *c = userdata;
    say(stderr, "clrattach: %s: listening on %s", c->a->cmd, c->a->listen);
    if (!c->a->ready_file)
        return;
    struct cla_error e = {0};
    int fd = opfile_open_for_write(c->a->ready_file, "--ready-file", O_CREAT | O_TRUNC, 0644, &e);
    if (fd < 0) {
        print_error("warning", &e);
        return;
    }
    (void)util_write_all(fd, "ready\n", 6);
    close(fd);
}

/* "UID" or "UID:GID", numbers only (no name lookup: the sandbox has no passwd file to read). */
static int parse_owner(const char *s, uid_t *uid, gid_t *gid)
{
    const char *colon = strchr(s, ':');
    uint64_t u, g;
    char ubuf[16];
    size_t ul = colon ? (size_t)(colon - s) : strlen(s);
    if (ul == 0 || ul >= sizeof(ubuf))
        return -EINVAL;
    memcpy(ubuf, s, ul);
    ubuf[ul] = '\0';
    if (parse_uint(ubuf, UINT32_MAX - 1, &u) < 0)
        return -EINVAL;
    *uid = (uid_t)u;
    if (colon) {
        if (parse_uint(colon + 1, UINT32_MAX - 1, &g) < 0)
            return -EINVAL;
        *gid = (gid_t)g;
    }
    return 0;
}

/* What --listen rules out or needs, once every option is read. */
static int check_listen_options(struct attach_cli *a, struct listen_opts *lo)
{
    const char *cmd = a->cmd;
    if (a->pid_s)
        return usage_error(cmd, "--listen serves the runtime that connects: no --pid");
    if (!a->deliver_dir)
        return usage_error(cmd, "--listen needs --deliver-dir: the directory shared with the app");
    if (a->target_dir)
        return usage_error(cmd, "--target-dir names the app's view of its own root, which a "
                                "listening clrattach does not see: use --app-dir");
    if (a->match_comm || a->uid_s || a->match_cgroup || a->other_containers)
        return usage_error(cmd, "--match-comm, --uid, --match-cgroup and --other-containers "
                                "read /proc, which --listen does not see: use --match-cmdline "
                                "or --match-entry");
    if (a->app_dir && a->app_dir[0] != '/')
        return usage_error(cmd, "--app-dir '%s' must be absolute (as the app sees it)", a->app_dir);
    if (strcmp(a->profiler, "-") == 0 && a->watch)
        return usage_error(cmd, "--profiler - (stdin) is read once: give a watcher a file");
    lo->sock = (struct listen_sock_opts){.mode = 0600, .uid = (uid_t)-1, .gid = (gid_t)-1};
    if (a->socket_mode_s) {
        char *end;
        errno = 0;
        unsigned long m = strtoul(a->socket_mode_s, &end, 8);
        if (errno || *end || end == a->socket_mode_s || m > 0777)
            return usage_error(cmd, "--socket-mode takes an octal mode up to 0777, not '%s'",
                               a->socket_mode_s);
        /* Connecting needs write permission: a mode that lets nobody write is a mistake. */
        if (!(m & 0222))
            return usage_error(cmd, "--socket-mode %s lets nobody connect (no write bit)",
                               a->socket_mode_s);
        lo->sock.mode = (mode_t)m;
    }
    if (a->socket_owner_s && parse_owner(a->socket_owner_s, &lo->sock.uid, &lo->sock.gid) < 0)
        return usage_error(cmd, "--socket-owner takes UID or UID:GID (numbers), not '%s'",
                           a->socket_owner_s);
    return CLI_GO_ON;
}

int listen_cli_run(struct attach_cli *a)
{
    struct listen_opts lo = {0};
    int r = check_listen_options(a, &lo);
    if (r != CLI_GO_ON)
        return r;
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* The listening stage from the start: ATTACH's rights and the socket's (sandbox_policy.h). */
    if ((r = attach_cli_setup(a, SANDBOX_STAGE_LISTEN)) != CLI_GO_ON) {
        attach_cli_release(a);
        return r;
    }
    if (a->watch) {
        struct cla_error e = {0}, warning = {0};
        if (event_report_for_watch(&a->rep, &warning, &e) < 0) {
            attach_cli_release(a);
            return fatal("usage error", ATTACH_USAGE, &e);
        }
        if (warning.msg[0])
            say(stderr, "clrattach: warning: %s", warning.msg);
    }
    struct listen_ctx ctx = {.a = a, .code = 0};
    lo.path = a->listen;
    lo.deliver_dir = a->deliver_dir;
    lo.app_dir = a->app_dir;
    lo.profiler_path = a->profiler;
    lo.entry = a->entry;
    lo.rid = a->rid;
    lo.force_rid = a->force_rid;
    lo.force = a->force;
    lo.keep = a->keep;
    lo.clsid = a->clsid;
    lo.client_data = a->data;
    lo.client_data_len = a->data_len;
    lo.env = (const char *const *)a->env;
    lo.env_count = a->env_count;
    lo.show_env = a->show_env;
    lo.attach_timeout_ms = (uint32_t)a->attach_timeout_ms;
    lo.timeout_ms = (int64_t)a->timeout_s * 1000;
    lo.resume_deadline_ms = (int64_t)a->resume_deadline_s * 1000;
    lo.match_cmdline = a->match_cmdline;
    lo.match_entry = a->match_entry;
    lo.once = !a->watch;
    lo.stop = &stop;
    lo.on_result = on_result;
    lo.on_listening = on_listening;
    lo.on_warning = on_warning;
    lo.userdata = &ctx;
    struct cla_error e = {0};
    r = listen_run(&lo, &e);
    /* attach: its one result's code; watch: 0 once stopped, as `watch` ends. */
    int code = a->watch ? 0 : ctx.code;
    if (r < 0 && r != -EINTR)
        code = fatal(a->cmd,
                     r == -EEXIST || r == -EINVAL || r == -ENAMETOOLONG ? ATTACH_USAGE
                                                                        : ATTACH_INTERNAL,
                     &e);
    else if (r == -EINTR && !ctx.served && !a->watch)
        code = attach_outcome_exit_code(ATTACH_INTERRUPTED);
    char note[96];
    if (a->watch)
        say(stderr, "clrattach: watch: stopped (%u runtimes served%s)", ctx.served,
            attach_cli_suppressed_note(a, note, sizeof(note)));
    attach_cli_release(a);
    return code;
}
