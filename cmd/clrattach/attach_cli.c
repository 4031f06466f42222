/* SPDX-License-Identifier: Apache-2.0 */
/* The options `attach` and `watch` share, the setup before a target is touched, the pin, and one
 * result reported; the pin-then-run of the commands on one target (attach_cli_pin_run). */
#include "attach_cli.h"

#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/render.h"
#include "report/result_json.h"
#include "target/target.h"
#include "profset/userfile.h"
#include "base/util.h"
#include "profset/otel_status.h"

/* Long-only options take codes above any character getopt returns for a short one; watch's
 * own start at 1101, so that attach_cli_parse() tells them apart by range. */
enum {
    OPT_RID = OPT_REPORT_END,
    OPT_ENTRY,
    OPT_FORCE_RID,
    OPT_SKIP_DEPENDENCY_CHECK,
    OPT_KEEP,
    OPT_FORCE,
    OPT_SETTLE,
    OPT_ENV,
    OPT_SHOW_ENV,
    OPT_RESUME_DEADLINE,
    OPT_LISTEN,
    OPT_DELIVER_DIR,
    OPT_APP_DIR,
    OPT_SOCKET_MODE,
    OPT_SOCKET_OWNER,
    OPT_MATCH_ENTRY,
    OPT_MATCH_COMM = 1101,
    OPT_MATCH_CMDLINE,
    OPT_UID,
    OPT_READY_FILE,
    OPT_INTERVAL,
    OPT_PID_POLL,
    OPT_MATCH_CGROUP,
    OPT_OTHER_CONTAINERS,
    OPT_PERFMAP,
    OPT_OTEL,
    OPT_OTEL_ENDPOINT,
    OPT_OTEL_PROTOCOL,
    OPT_OTEL_SERVICE_NAME,
    OPT_OTEL_RESOURCE_ATTRIBUTES,
    OPT_OTEL_AGENT,
};

static const struct option attach_options[] = {
    /* what to attach, and how */
    {"pid", required_argument, NULL, 'p'},
    {"profiler", required_argument, NULL, 'f'},
    {"clsid", required_argument, NULL, 'c'},
    {"client-data", required_argument, NULL, 'd'},
    {"target-dir", required_argument, NULL, 't'},
    {"timeout", required_argument, NULL, 'T'},
    {"attach-timeout", required_argument, NULL, 'A'},
    {"startup", no_argument, NULL, 'U'},
    /* which build, and what may stop it */
    {"rid", required_argument, NULL, OPT_RID},
    {"entry", required_argument, NULL, OPT_ENTRY},
    {"force-rid", no_argument, NULL, OPT_FORCE_RID},
    {"skip-dependency-check", no_argument, NULL, OPT_SKIP_DEPENDENCY_CHECK},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"force", no_argument, NULL, OPT_FORCE},
    {"settle", required_argument, NULL, OPT_SETTLE},
    /* the profiler's environment, and a paused runtime */
    {"env", required_argument, NULL, OPT_ENV},
    {"show-env", no_argument, NULL, OPT_SHOW_ENV},
    {"resume-deadline", required_argument, NULL, OPT_RESUME_DEADLINE},
    /* the runtime connects to us (DOTNET_DiagnosticPorts): listen_cli.c */
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"deliver-dir", required_argument, NULL, OPT_DELIVER_DIR},
    {"app-dir", required_argument, NULL, OPT_APP_DIR},
    {"socket-mode", required_argument, NULL, OPT_SOCKET_MODE},
    {"socket-owner", required_argument, NULL, OPT_SOCKET_OWNER},
    {"match-entry", required_argument, NULL, OPT_MATCH_ENTRY},
    ATTACH_CLI_REPORT_OPTIONS,
    /* watch only */
    {"match-comm", required_argument, NULL, OPT_MATCH_COMM},
    {"match-cmdline", required_argument, NULL, OPT_MATCH_CMDLINE},
    {"uid", required_argument, NULL, OPT_UID},
    {"ready-file", required_argument, NULL, OPT_READY_FILE},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"pid-poll", required_argument, NULL, OPT_PID_POLL},
    {"match-cgroup", required_argument, NULL, OPT_MATCH_CGROUP},
    {"other-containers", no_argument, NULL, OPT_OTHER_CONTAINERS},
    {"perfmap", no_argument, NULL, OPT_PERFMAP},
    {"otel", no_argument, NULL, OPT_OTEL},
    {"endpoint", required_argument, NULL, OPT_OTEL_ENDPOINT},
    {"protocol", required_argument, NULL, OPT_OTEL_PROTOCOL},
    {"service-name", required_argument, NULL, OPT_OTEL_SERVICE_NAME},
    {"resource-attributes", required_argument, NULL, OPT_OTEL_RESOURCE_ATTRIBUTES},
    {"agent", required_argument, NULL, OPT_OTEL_AGENT},
    ATTACH_CLI_COMMON_OPTIONS,
    {0},
};

int attach_cli_report_option(int c, const char *arg, struct attach_cli *a)
{
    struct event_reporter *rep = &a->rep;
    switch (c) {
    case 'E':
        if (strcmp(arg, "off") == 0)
            rep->mode = EVENT_MODE_OFF;
        else if (strcmp(arg, "auto") == 0)
            rep->mode = EVENT_MODE_AUTO;
        else if (strcmp(arg, "required") == 0)
            rep->mode = EVENT_MODE_REQUIRED;
        else
            return usage_error(a->cmd, "--events takes off, auto or required, not '%s'", arg);
        break;
    case 'D': rep->dry_run = true; break;
    case OPT_API_URL: rep->opts.api_url = arg; break;
    case OPT_TOKEN_FILE: rep->opts.token_file = arg; break;
    case OPT_CA_FILE: rep->opts.ca_file = arg; break;
    case OPT_NAMESPACE: rep->opts.namespace_ = arg; break;
    case OPT_POD: rep->pod_name = arg; break;
    case OPT_POD_UID: rep->pod_uid = arg; break;
    case OPT_CONTAINER: rep->container = arg; break;
    case OPT_TERMINATION_LOG: rep->termination_log = arg; break;
    default: return parse_common(c, arg, &a->co, a->cmd);
    }
    return CLI_GO_ON;
}

int attach_cli_env_option(const char *arg, struct attach_cli *a)
{
    if (a->env_args_count >= ENV_VARS_MAX)
        return usage_error(a->cmd, "more than %d --env options", ENV_VARS_MAX);
    a->env_args[a->env_args_count++] = arg;
    return CLI_GO_ON;
}

/* The selectors and pacing of `watch`. */
static int watch_option(int c, const char *arg, struct attach_cli *a)
{
    switch (c) {
    case OPT_MATCH_COMM: a->match_comm = arg; break;
    case OPT_MATCH_CMDLINE: a->match_cmdline = arg; break;
    case OPT_UID: a->uid_s = arg; break;
    case OPT_READY_FILE: a->ready_file = arg; break;
    case OPT_MATCH_CGROUP: a->match_cgroup = arg; break;
    case OPT_OTHER_CONTAINERS: a->other_containers = true; break;
    case OPT_PERFMAP: a->perfmap = true; break;
    case OPT_OTEL: a->otel = true; break;
    case OPT_OTEL_ENDPOINT: a->otel_endpoint = arg; break;
    case OPT_OTEL_PROTOCOL: a->otel_protocol = arg; break;
    case OPT_OTEL_SERVICE_NAME: a->otel_service_name = arg; break;
    case OPT_OTEL_RESOURCE_ATTRIBUTES: a->otel_resource_attributes = arg; break;
    case OPT_OTEL_AGENT: a->otel_agent = arg; break;
    case OPT_INTERVAL:
        /* Below 10 ms the watcher would do little but list /proc; above a minute a new
         * process would wait that long for its profiler. */
        if (parse_uint(arg, 60000, &a->interval_ms) < 0 || a->interval_ms < 10)
            return usage_error(a->cmd, "--interval takes 10..60000 ms, not '%s'", arg);
        break;
    case OPT_PID_POLL: {
        /* The tick's longest step (watch_discover.h); "off" leaves new processes to the hints
         * of runtime files and to the scans. */
        uint64_t v;
        if (strcmp(arg, "off") == 0)
            a->pid_poll_ms = -1;
        else if (parse_uint(arg, 60000, &v) < 0 || v < 20)
            return usage_error(a->cmd, "--pid-poll takes 20..60000 ms or 'off', not '%s'", arg);
        else
            a->pid_poll_ms = (int64_t)v;
        break;
    }
    default: return attach_cli_report_option(c, arg, a);
    }
    return CLI_GO_ON;
}

/* One option; what the attach itself takes here, the rest passed down. */
static int attach_option(int c, const char *arg, struct attach_cli *a)
{
    const char *cmd = a->cmd;
    switch (c) {
    case 'p': a->pid_s = arg; break;
    case 'f': a->profiler = arg; break;
    case 'c': a->clsid_s = arg; break;
    case 'd': a->data_s = arg; break;
    case 't': a->target_dir = arg; break;
    case 'T':
        /* 0 would fail every exchange at once; a deadline is never "wait for ever", since the
         * runtime is hostile input and must not hold us. */
        if (parse_uint(arg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
            return usage_error(cmd, "--timeout takes 1..3600 seconds, not '%s'", arg);
        break;
    case 'A':
        /* Sent to the runtime as a u32; the cap keeps a typo from becoming a wait of days. */
        if (parse_uint(arg, 600000, &a->attach_timeout_ms) < 0)
            return usage_error(cmd, "--attach-timeout takes 0..600000 ms, not '%s'", arg);
        break;
    case 'U': a->startup = true; break;
    case OPT_RID: a->rid = arg; break;
    case OPT_ENTRY: a->entry = arg; break;
    case OPT_FORCE_RID: a->force_rid = true; break;
    case OPT_SKIP_DEPENDENCY_CHECK: a->skip_dependency_check = true; break;
    case OPT_KEEP: a->keep = true; break;
    case OPT_FORCE: a->force = true; break;
    case OPT_SETTLE:
        if (parse_uint(arg, 60000, &a->settle_ms) < 0)
            return usage_error(cmd, "--settle takes 0..60000 ms, not '%s'", arg);
        break;
    case OPT_ENV: return attach_cli_env_option(arg, a);
    case OPT_SHOW_ENV: a->show_env = true; break;
    case OPT_LISTEN: a->listen = arg; break;
    case OPT_DELIVER_DIR: a->deliver_dir = arg; break;
    case OPT_APP_DIR: a->app_dir = arg; break;
    case OPT_SOCKET_MODE: a->socket_mode_s = arg; break;
    case OPT_SOCKET_OWNER: a->socket_owner_s = arg; break;
    case OPT_MATCH_ENTRY: a->match_entry = arg; break;
    case OPT_RESUME_DEADLINE:
        /* The app waits this long at most, paused, for what clrattach does before resuming it. */
        if (parse_uint(arg, 600, &a->resume_deadline_s) < 0 || a->resume_deadline_s == 0)
            return usage_error(cmd, "--resume-deadline takes 1..600 seconds, not '%s'", arg);
        break;
    case 'h': fputs(a->usage, stdout); return 0;
    case '?': return usage_error(cmd, "unrecognised option");
    default: return watch_option(c, arg, a);
    }
    return CLI_GO_ON;
}

/* "." or ".." as a component of the absolute path `p`: each component follows a '/'. */
static const char *dot_component(const char *p)
{
    size_t n = strlen(p);
    if (strstr(p, "/../") || (n >= 3 && strcmp(p + n - 3, "/..") == 0))
        return "..";
    if (strstr(p, "/./") || (n >= 2 && strcmp(p + n - 2, "/.") == 0))
        return ".";
    return NULL;
}

/* The path is sent to the runtime as UTF-16 and printed: refused now, not after the profiler
 * is in the target. It is held to the rules of a target's TMPDIR (docs/security.md). */
int attach_cli_check_target_dir(const struct attach_cli *a)
{
    const char *dir = a->target_dir;
    if (!dir)
        return CLI_GO_ON;
    if (dir[0] != '/')
        return usage_error(a->cmd, "--target-dir '%s' must be absolute (as the target sees it)",
                           dir);
    size_t at;
    uint32_t cp;
    enum render_class rc = render_find(dir, strlen(dir), &at, &cp);
    char sh[256];
    render_text(dir, strlen(dir), sh, sizeof(sh));
    if (rc != RENDER_SAFE)
        return usage_error(a->cmd, "--target-dir '%s' holds %s at byte %zu", sh,
                           render_class_name(rc), at);
    /* "/tmp/a/../" names one directory and resolves to another: the placement checks and the
     * messages would speak of a place the profiler does not go. */
    const char *dot = dot_component(dir);
    if (dot)
        return usage_error(a->cmd,
                           "--target-dir '%s' has a '%s' component: give the directory's own path",
                           sh, dot);
    return CLI_GO_ON;
}

/* watch --otel: the OpenTelemetry agent into every match (flow/otel.h); --env adds OTEL_*
 * settings, and nothing of a profiler goes with it. */
static int check_otel(struct attach_cli *a)
{
    struct cla_error e = {0};
    if (!a->otel)
        return usage_error(a->cmd, "--endpoint and --agent go with --otel");
    if (a->perfmap || a->profiler || a->clsid_s || a->startup || a->listen || a->show_env)
        return usage_error(a->cmd, "--otel sends the OpenTelemetry agent: no --profiler, "
                                   "--clsid, --startup, --listen, --show-env or --perfmap");
    if (!a->otel_endpoint)
        return usage_error(a->cmd, "--otel needs --endpoint, the OTLP collector");
    if (otel_endpoint_check(a->otel_endpoint, &e) < 0 ||
        (a->otel_protocol && otel_protocol_check(a->otel_protocol, &e) < 0) ||
        otel_attributes_check(a->otel_resource_attributes, &e) < 0)
        return usage_error(a->cmd, "%s%s%s", e.msg, e.hint[0] ? "; e.g. " : "", e.hint);
    if (!a->otel_agent) {
        const char *env = getenv("CLRATTACH_OTEL_AGENT");
        a->otel_agent = env && env[0] ? env : "/otel-agent";
    }
    a->profiler = a->otel_agent; /* what the results and Events name */
    return attach_cli_check_target_dir(a);
}

/* What the options say together, once they are all read. */
static int check_options(struct attach_cli *a)
{
    const char *cmd = a->cmd;
    if (!a->listen &&
        (a->deliver_dir || a->app_dir || a->socket_mode_s || a->socket_owner_s || a->match_entry))
        return usage_error(cmd, "--deliver-dir, --app-dir, --socket-mode, --socket-owner and "
                                "--match-entry go with --listen");
    /* watch --perfmap sends EnablePerfMap, not a profiler. */
    if (a->perfmap && (a->profiler || a->clsid_s))
        return usage_error(cmd, "--perfmap sends no profiler: drop --profiler and --clsid");
    /* A paused runtime must get its profiler and its resume; a perf map alone would leave the
     * variables and the pause to nobody. */
    if (a->perfmap && (a->startup || a->env_args_count || a->show_env))
        return usage_error(cmd, "--perfmap does not go with --startup, --env or --show-env: "
                                "run a second watcher for the perf maps");
    if (a->perfmap)
        return attach_cli_check_target_dir(a);
    if (a->otel || a->otel_endpoint || a->otel_agent)
        return check_otel(a);
    if ((!a->watch && !a->pid_s && !a->listen) || !a->profiler || !a->clsid_s)
        return usage_error(cmd, a->watch ? "--profiler and --clsid are required"
                                         : "--pid, --profiler and --clsid are required");
    if (a->watch && strcmp(a->profiler, "-") == 0)
        return usage_error(cmd, "--profiler - (stdin) is read once, by 'attach'; a watcher "
                                "attaches again and again: give it a file or directory");
    /* --force-rid puts --rid above the runtime's answer: alone it would force nothing. */
    if (a->force_rid && !a->rid)
        return usage_error(cmd, "--force-rid goes with --rid");
    if (ipc_guid_parse(a->clsid_s, &a->clsid) < 0)
        return usage_error(cmd,
                           "--clsid '%s' is not a GUID like "
                           "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}",
                           a->clsid_s);
    /* A watcher sets variables only in a runtime paused at startup: without --startup it would
     * never send them. A listening one runs the startup flow whenever the runtime pauses. */
    if (a->watch && !a->startup && !a->listen && (a->env_args_count || a->show_env))
        return usage_error(cmd,
                           "%s goes with --startup for 'watch': only a runtime paused at "
                           "startup is sent variables",
                           a->env_args_count ? "--env" : "--show-env");
    /* A watcher cannot know ahead which runtimes are paused: client data would reach only the
     * running ones (StartupProfiler has no room for it). */
    if (a->watch && a->startup && a->data_s)
        return usage_error(cmd, "--client-data does not go with 'watch --startup': a runtime "
                                "paused at startup takes the profiler with StartupProfiler, "
                                "which has no room for it; configure the profiler with --env");
    int r = attach_cli_check_target_dir(a);
    if (r != CLI_GO_ON)
        return r;
    /* The kernel cuts comm to 15 bytes: a longer name could never match, and the watcher
     * would wait for ever without a word. */
    if (a->match_comm && strlen(a->match_comm) > 15)
        return usage_error(cmd,
                           "--match-comm '%s' is longer than the kernel's 15-byte comm; "
                           "use --match-cmdline",
                           a->match_comm);
    return CLI_GO_ON;
}

/* Every option is checked here, before the sandbox and before any target byte: a mistake
 * found after delivery would leave a profiler in the target for nothing. */
int attach_cli_parse(int argc, char **argv, struct attach_cli *a)
{
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", attach_options, NULL)) != -1) {
        /* One table serves both commands, so that a shared option cannot drift between them;
         * what belongs to only one is refused by name for the other. */
        bool watch_only = c >= OPT_MATCH_COMM && c <= OPT_OTEL_AGENT;
        bool attach_only = c == 'p';
        if ((watch_only && !a->watch) || (a->watch && attach_only))
            return usage_error(a->cmd, "option '%s' is not for '%s'", argv[optind - 1], a->cmd);
        if ((r = attach_option(c, optarg, a)) != CLI_GO_ON)
            return r;
    }
    if (optind < argc)
        return usage_error(a->cmd, "unexpected argument '%s'", argv[optind]);
    return check_options(a);
}

/* Read now, before the sandbox: opening the operator's files is not allowed once it is on.
 * The cap is what one IPC frame carries, so a too-large value fails here, not at the runtime. */
static int read_client_data(const char *arg, uint8_t **ret, size_t *ret_len, struct cla_error *e)
{
    if (arg[0] != '@') {
        size_t len = strlen(arg);
        if (len > IPC_MAX_CLIENT_DATA)
            return err_set(e, -E2BIG, "--client-data of %zu bytes exceeds %d", len,
                           IPC_MAX_CLIENT_DATA);
        *ret = (uint8_t *)strdup(arg);
        *ret_len = len;
        return *ret ? 0 : -ENOMEM;
    }
    char *buf;
    size_t len;
    int r = userfile_read(arg + 1, IPC_MAX_CLIENT_DATA, "--client-data", &buf, &len, e);
    if (r == -ENXIO || r == -EISDIR)
        err_hint(e, "put the data in a regular file, or pass it inline without '@'");
    if (r < 0)
        return r;
    *ret = (uint8_t *)buf;
    *ret_len = len;
    return 0;
}

/* Adds one "NAME=VALUE" (checked: ipc_env_check) to a->env, copied. */
static int add_env(struct attach_cli *a, const char *nv, size_t len, struct cla_error *e)
{
    size_t nl;
    if (a->env_count >= ENV_VARS_MAX)
        return err_set(e, -E2BIG, "more than %d --env variables", ENV_VARS_MAX);
    if (strlen(nv) != len)
        return err_set(e, -EINVAL, "--env: a NUL byte in a variable");
    int r = ipc_env_check(nv, &nl, e);
    if (r < 0)
        return r;
    if (!(a->env[a->env_count] = strndup(nv, len)))
        return err_set(e, -ENOMEM, "out of memory");
    a->env_count++;
    return 0;
}

/* --env NAME=VALUE, or @FILE: one variable a line, empty lines and lines starting with '#'
 * skipped. Read now, before the sandbox, like --client-data. */
static int read_env(struct attach_cli *a, struct cla_error *e)
{
    for (size_t i = 0; i < a->env_args_count; i++) {
        const char *arg = a->env_args[i];
        int r;
        if (arg[0] != '@') {
            if ((r = add_env(a, arg, strlen(arg), e)) < 0)
                return r;
            continue;
        }
        char *buf;
        size_t len;
        if ((r = userfile_read(arg + 1, ENV_FILE_MAX, "--env", &buf, &len, e)) < 0)
            return r;
        char *p = buf, *end = buf + len;
        while (p < end && r == 0) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *le = nl ? nl : end;
            *le = '\0';
            if (le > p && le[-1] == '\r')
                le[-1] = '\0';
            size_t n = (size_t)(le - p);
            if (n && p[0] != '#' && p[0] != '\0')
                r = add_env(a, p, strnlen(p, n) == n ? strlen(p) : n, e);
            p = le + 1;
        }
        free(buf);
        if (r < 0)
            return r;
    }
    return 0;
}

int attach_cli_setup(struct attach_cli *a, enum sandbox_stage stage)
{
    struct cla_error e = {0}, warning = {0};
    if (a->data_s && read_client_data(a->data_s, &a->data, &a->data_len, &e) < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    if (read_env(a, &e) < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    /* Reporting first: in required mode a missing configuration stops us with the target
     * untouched. */
    if (event_report_prepare(&a->rep, &warning, &e) < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    if (warning.msg[0])
        say(stderr, "clrattach: warning: %s", warning.msg);
    /* Our own view of /proc, opened once before the filter: targets are reached relative to
     * it (openat), never through "/proc/<pid>" paths built again for each step. */
    a->procfd = target_open_proc(a->co.proc, &e);
    if (a->procfd < 0)
        return fatal("internal error", ATTACH_INTERNAL, &e);
    /* Root needs only these to act as the target's user and read its /proc; the rest go. */
    return enter_sandbox(&a->co,
                         CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                             CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH) | CAP(CAP_CHOWN) |
                             CAP(CAP_FOWNER),
                         stage);
}

int attach_cli_setup_watcher(struct attach_cli *a)
{
    /* The FULL stage: unlike one attach, the watcher starts a child process per attach. */
    int r = attach_cli_setup(a, SANDBOX_STAGE_FULL);
    if (r != CLI_GO_ON)
        return r;
    struct cla_error e = {0}, warning = {0};
    r = event_report_for_watch(&a->rep, &warning, &e);
    if (r == -ENOMEM)
        return out_of_memory();
    if (r < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    if (warning.msg[0])
        say(stderr, "clrattach: warning: %s", warning.msg);
    return CLI_GO_ON;
}

/* The attach tells us when it has delivered and when only reporting is left: each step
 * narrows the filter, so a compromised later step has fewer syscalls to abuse. */
static int on_stage(enum attach_stage stage, void *userdata, struct cla_error *e)
{
    const struct common *co = userdata;
    if (co->seccomp == SANDBOX_MODE_OFF)
        return 0;
    return sandbox_tighten(
        stage == ATTACH_STAGE_DELIVERED ? SANDBOX_STAGE_DELIVERED : SANDBOX_STAGE_REPORT, e);
}

struct attach_opts attach_cli_opts(struct attach_cli *a)
{
    struct attach_opts ao = {
        .proc_dirfd = a->procfd,
        .profiler_path = a->profiler,
        .rid = a->rid,
        .entry = a->entry,
        .force_rid = a->force_rid,
        .skip_dependency_check = a->skip_dependency_check,
        .keep = a->keep,
        .force = a->force,
        .settle_ms = (int64_t)a->settle_ms,
        .clsid = a->clsid,
        .client_data = a->data,
        .client_data_len = a->data_len,
        .target_dir = a->target_dir,
        .attach_timeout_ms = (uint32_t)a->attach_timeout_ms,
        .timeout_ms = (int64_t)a->timeout_s * 1000,
        .startup = a->startup,
        .startup_or_attach = a->watch && a->startup,
        .env = (const char *const *)a->env,
        .env_count = a->env_count,
        .show_env = a->show_env,
        .resume_deadline_ms = (int64_t)a->resume_deadline_s * 1000,
        .on_stage = on_stage,
        .userdata = &a->co,
    };
    return ao;
}

struct attach_stop attach_cli_stop;

/* While a command has written into the target, a stop only records the signal: the command
 * removes what it wrote, then ends. Otherwise nothing of ours is in the target and the signal
 * ends us at once, as its default action would (sigaction and tgkill to ourselves are
 * async-signal-safe and allowed by every seccomp stage). */
static void on_stop_signal(int sig)
{
    if (attach_cli_stop.defer) {
        attach_cli_stop.signal = sig;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void attach_cli_catch_stop_signals(void)
{
    /* SA_RESTART: the library's reads and writes go on where they were; the command looks at
     * the flag between its steps. */
    struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

int attach_cli_pid(struct attach_cli *a, pid_t *ret)
{
    /* The range is pid_t's; 0 names no process (to kill(2) and its kin it means our own process
     * group). */
    uint64_t pid;
    if (!a->pid_s || parse_uint(a->pid_s, INT32_MAX, &pid) < 0 || pid == 0)
        return usage_error(a->cmd, "--pid takes a process id, not '%s'", a->pid_s ? a->pid_s : "");
    *ret = (pid_t)pid;
    return CLI_GO_ON;
}

int attach_cli_begin(struct attach_cli *a, enum sandbox_stage stage, pid_t *ret_pid)
{
    int r = attach_cli_pid(a, ret_pid);
    if (r == CLI_GO_ON && (r = attach_cli_setup(a, stage)) != CLI_GO_ON)
        attach_cli_release(a);
    return r;
}

int attach_cli_pin(struct attach_cli *a, pid_t pid, struct target *t, struct target **ret_pinned,
                   struct attach_result *ret)
{
    struct attach_opts ao = attach_cli_opts(a);
    /* One pin for everything about this process: the command and, in an ephemeral container,
     * the service account its Event is sent with. */
    *ret_pinned = attach_pin(&ao, pid, t, ret) == 0 ? t : NULL;
    if (a->rep.from_target) {
        struct cla_error e = {0};
        if (event_report_use_target(&a->rep, *ret_pinned, &ret->error, &e) < 0) {
            /* Required reporting with no account to report with stops us before the command,
             * with the target untouched, as a missing configuration does in
             * attach_cli_setup. */
            if (a->rep.mode == EVENT_MODE_REQUIRED)
                return fatal("usage error", ATTACH_USAGE, &e);
            print_error("warning", &e);
        }
    }
    return CLI_GO_ON;
}

int attach_cli_pin_run(struct attach_cli *a, pid_t pid, enum attach_kind kind,
                       int (*run)(const void *opts, struct target *t, struct attach_result *res),
                       const void *opts)
{
    struct attach_result res;
    struct target t;
    _cleanup_(target_closep) struct target *pinned = NULL;
    int r = attach_cli_pin(a, pid, &t, &pinned, &res);
    if (r != CLI_GO_ON) {
        attach_cli_release(a);
        return r;
    }
    if (pinned) {
        run(opts, pinned, &res);
    } else {
        res.kind = kind;
        res.perfmap_size = -1;
    }
    if (a->co.seccomp != SANDBOX_MODE_OFF)
        (void)sandbox_drop_caps(CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH), false, NULL);
    /* A run stopped before its request went out sends no Event, as attach. */
    int code = attach_cli_emit_result(a, &res, res.outcome != ATTACH_INTERRUPTED);
    attach_cli_release(a);
    return code;
}

/* Leaves nothing set that a second release would free or close again. */
void attach_cli_release(struct attach_cli *a)
{
    event_report_close(&a->rep);
    free(a->data);
    a->data = NULL;
    for (size_t i = 0; i < a->env_count; i++)
        free(a->env[i]);
    a->env_count = 0;
    util_closep(&a->procfd); /* leaves -1 */
}

/* Reports the Event first: its failure can change the code (--events=required), and stdout
 * and the termination log must carry the code the process really ends with. */
static int report(struct attach_cli *a, const struct attach_result *res, int code)
{
    struct event_report_sent sent;
    struct cla_error e = {0};
    int r = event_report_send(&a->rep, res, a->profiler, &a->clsid, &sent, &e);
    print_report(&a->rep, &sent, r, &e);
    free(sent.body);
    if (r < 0 && a->rep.mode == EVENT_MODE_REQUIRED && code == 0)
        return EXIT_EVENT_REQUIRED;
    return code;
}

bool attach_cli_admit(struct attach_cli *a, const struct attach_result *res)
{
    return event_report_admit(&a->rep, res, a->profiler);
}

const char *attach_cli_suppressed_note(const struct attach_cli *a, char *buf, size_t size)
{
    uint64_t n = event_report_suppressed(&a->rep);
    if (!n)
        return "";
    snprintf(buf, size, "; %llu results not reported (rate limit)", (unsigned long long)n);
    return buf;
}

int attach_cli_emit_result(struct attach_cli *a, const struct attach_result *res, bool send_event)
{
    int code = attach_outcome_exit_code(res->outcome);
    if (send_event)
        code = report(a, res, code);
    /* The JSON document only where it goes: stdout with -o json, the termination log. */
    bool want_json = a->co.json || a->rep.termination_fd >= 0;
    _cleanup_free_ char *js =
        want_json ? result_attach_json(res, a->profiler, &a->clsid, code) : NULL;
    print_attach_result(res, a->co.json ? js : NULL, a->co.json);
    int r = event_report_termination_log(&a->rep, res, js, code);
    if (r < 0)
        say(stderr, "clrattach: warning: cannot write the termination log: %s", strerror(-r));
    return code;
}
