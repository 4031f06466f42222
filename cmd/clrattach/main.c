/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clrattach: parse options, call lib/, print once. The seccomp filter goes on right after the
 * options are parsed and our own inputs read, before the first byte of any target is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "caps.h"
#include "err.h"
#include "ipc.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "report.h"
#include "ps.h"
#include "result_json.h"
#include "sandbox.h"
#include "target.h"
#include "util.h"

#define EXIT_USAGE 2
#define EXIT_EVENT_REQUIRED 10

extern char **environ;

enum events_mode { EVENTS_OFF, EVENTS_AUTO, EVENTS_REQUIRED };

/* What reporting needs, gathered before the sandbox goes on and the target is touched. */
struct reporting {
    enum events_mode mode;
    bool dry_run;
    bool enabled;               /* a configuration was found (or dry run) */
    struct k8s_config_opts opts;
    struct k8s_config cfg;
    struct k8s_pod_ref pod;
    const char *pod_name, *pod_uid, *container;
    const char *termination_log;
    int termination_fd;
};

struct common {
    bool json;
    enum sandbox_mode seccomp;
    const char *proc;
};

static const char usage_main[] =
    "Usage: clrattach [--version] [--help] <command> [options]\n"
    "\n"
    "Load a profiler into a running .NET (CoreCLR) process, across containers.\n"
    "\n"
    "Commands:\n"
    "  ps                list the .NET processes reachable from here\n"
    "  attach            deliver a profiler into a process and attach it\n"
    "  seccomp-profile   print the seccomp profile clrattach runs under (OCI/Kubernetes JSON)\n"
    "\n"
    "Common options (after the command):\n"
    "  -o, --output text|json   human text (default) or one JSON object per result on stdout\n"
    "      --seccomp kill|log|off  the in-process seccomp filter (default kill; off is for\n"
    "                           diagnosis only)\n"
    "      --proc DIR           the proc filesystem to scan (default /proc)\n"
    "\n"
    "Run 'clrattach <command> --help' for a command's options. Exit codes: docs/exit-codes.md.\n";

static const char usage_attach[] =
    "Usage: clrattach attach --pid PID --profiler PATH --clsid GUID [options]\n"
    "\n"
    "  --pid PID              the process, as this namespace sees it ('clrattach ps')\n"
    "  --profiler PATH        the profiler shared object on this side; it is copied into the\n"
    "                         target's own filesystem view under a content-addressed name\n"
    "  --clsid GUID           the profiler's CLSID, {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}\n"
    "  --client-data STR|@FILE  bytes handed to InitializeForAttach (at most 4096)\n"
    "  --target-dir DIR       directory in the target's view for the profiler (default: its\n"
    "                         TMPDIR)\n"
    "  --timeout SECONDS      deadline for each exchange with the runtime (default 30)\n"
    "  --attach-timeout MS    sent to the runtime: how long it may wait for a background GC\n"
    "                         when the profiler asks for GC events (default 5000)\n"
    "  --startup              if the runtime is suspended at startup, load the profiler as a\n"
    "                         startup profiler (StartupProfiler) and resume the runtime\n"
    "  -o, --output, --seccomp, --proc   as for every command\n"
    "\n"
    "Reporting (a Kubernetes Event on the pod; the result is always on stdout, in the exit\n"
    "code and in the termination log, whatever happens to the Event):\n"
    "  --events off|auto|required  auto (default): report when a cluster is configured, a\n"
    "                         failed report is a warning; required: a failed report exits 10\n"
    "  --dry-run-events       print the Event that would be sent, send nothing\n"
    "  --api-url URL --token-file F --ca-file F --namespace NS   outside a pod (default:\n"
    "                         KUBERNETES_SERVICE_HOST/PORT and the service-account files)\n"
    "  --pod NAME --pod-uid UID --container NAME   the pod and container reported about\n"
    "                         (default: CLRATTACH_POD_NAME, CLRATTACH_POD_UID,\n"
    "                         CLRATTACH_CONTAINER_NAME from the downward API)\n"
    "  --termination-log PATH where the result goes for the kubelet (default\n"
    "                         /dev/termination-log when it exists)\n"
    "\n"
    "Exit codes: 0 attached, 3 a profiler is already active, 4 no such process or not .NET,\n"
    "5 permission, 6 delivery failed, 7 the runtime could not load the profiler, 8 runtime not\n"
    "ready, 9 protocol error or timeout, 10 attached but the required Event failed, 2 usage\n"
    "error, 1 internal error.\n";

static const char usage_ps[] =
    "Usage: clrattach ps [-o text|json] [--no-query] [--seccomp MODE] [--proc DIR]\n"
    "\n"
    "  --no-query   do not ask each runtime for its version (no connection is made)\n";

static const char usage_seccomp[] =
    "Usage: clrattach seccomp-profile [--stats]\n"
    "\n"
    "Prints the OCI/Kubernetes seccomp profile generated from the same allow-list that clrattach\n"
    "loads in-process (use it as a localhostProfile). --stats prints counts instead.\n";

static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clrattach: usage error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nclrattach: next step: see 'clrattach %s --help'\n", cmd);
    return EXIT_USAGE;
}

static void print_error(const char *what, const struct cla_error *e)
{
    fprintf(stderr, "clrattach: %s: %s\n", what, e->msg[0] ? e->msg : "failed");
    if (e->hint[0])
        fprintf(stderr, "clrattach: next step: %s\n", e->hint);
}

static int parse_common(int c, const char *arg, struct common *co, const char *cmd)
{
    struct cla_error e = {0};
    switch (c) {
    case 'o':
        if (strcmp(arg, "json") == 0)
            co->json = true;
        else if (strcmp(arg, "text") == 0)
            co->json = false;
        else
            return usage_error(cmd, "--output takes 'text' or 'json', not '%s'", arg);
        return 0;
    case 'S':
        if (sandbox_parse_mode(arg, &co->seccomp, &e) < 0)
            return usage_error(cmd, "--seccomp takes kill, log or off, not '%s'", arg);
        return 0;
    case 'P':
        co->proc = arg;
        return 0;
    }
    return usage_error(cmd, "unknown option");
}

/* Enters the sandbox; 'off' only with a loud warning, since it exists for diagnosis. */
static int enter_sandbox(const struct common *co)
{
    struct cla_error e = {0};
    if (co->seccomp == SANDBOX_MODE_OFF)
        fputs("clrattach: WARNING: --seccomp=off: running WITHOUT the seccomp filter; use this "
              "only to diagnose a suspected filter problem\n", stderr);
    if (sandbox_enter(co->seccomp, &e) < 0) {
        print_error("seccomp", &e);
        return 1;
    }
    return 0;
}

static int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
    return util_parse_u64(s, strlen(s), max, ret);
}

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
    _cleanup_close_ int fd = open(arg + 1, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, -errno, "--client-data file '%s'", arg + 1);
    char *buf;
    size_t len;
    int r = util_read_all(fd, IPC_MAX_CLIENT_DATA, &buf, &len);
    if (r == -E2BIG)
        return err_set(e, r, "--client-data file '%s' exceeds %d bytes", arg + 1,
                       IPC_MAX_CLIENT_DATA);
    if (r < 0)
        return err_setsys(e, r, "--client-data file '%s'", arg + 1);
    *ret = (uint8_t *)buf;
    *ret_len = len;
    return 0;
}

static int on_stage(enum attach_stage stage, void *userdata, struct cla_error *e)
{
    const struct common *co = userdata;
    if (co->seccomp == SANDBOX_MODE_OFF)
        return 0;
    return sandbox_tighten(stage == ATTACH_STAGE_DELIVERED ? SANDBOX_STAGE_DELIVERED
                                                            : SANDBOX_STAGE_REPORT,
                           e);
}

static void print_attach_text(const struct attach_result *r)
{
    if (r->outcome == ATTACH_OK) {
        printf("attached: pid %d (namespace pid %d, uid %u)\n", (int)r->pid, (int)r->nspid,
               (unsigned)r->uid);
        if (r->runtime_rid[0])
            printf("  runtime:  %s %s\n", r->runtime_version, r->runtime_rid);
        printf("  profiler: %s (in the target's view%s)\n", r->delivered_path,
               r->reused ? ", reused" : "");
        printf("  sha256:   %s\n", r->sha256);
        printf("  took:     %lld ms\n", (long long)r->duration_ms);
        return;
    }
    print_error(attach_outcome_name(r->outcome), &r->error);
}

#define CAP(c) (1ULL << (c))

/*
 * Loads the cluster configuration and opens the termination log, both before the sandbox and
 * before any target byte: in required mode a missing configuration stops us with the target
 * untouched, and the log is opened now because creating files is forbidden after delivery.
 */
static int prepare_reporting(struct reporting *rep)
{
    struct cla_error e = {0};
    if (rep->termination_log) {
        rep->termination_fd = open(rep->termination_log,
                                   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (rep->termination_fd < 0) {
            err_setsys(&e, -errno, "--termination-log '%s'", rep->termination_log);
            print_error("usage error", &e);
            return EXIT_USAGE;
        }
    } else {
        /* The kubelet creates /dev/termination-log in every container; elsewhere it is absent
         * and we never create it. */
        rep->termination_fd =
            open("/dev/termination-log", O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
    }
    if (rep->mode == EVENTS_OFF)
        return 0;

    int r = k8s_pod_ref_from_env(environ, &rep->pod, &e);
    if (r < 0 && r != -ENOENT) {
        print_error("usage error", &e);
        return EXIT_USAGE;
    }
    if (rep->pod_name)
        snprintf(rep->pod.name, sizeof(rep->pod.name), "%s", rep->pod_name);
    if (rep->pod_uid)
        snprintf(rep->pod.uid, sizeof(rep->pod.uid), "%s", rep->pod_uid);
    if (rep->container)
        snprintf(rep->pod.container, sizeof(rep->pod.container), "%s", rep->container);
    if (rep->opts.namespace_)
        snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "%s", rep->opts.namespace_);

    if (rep->dry_run) {
        if (!rep->pod.namespace_[0])
            snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "default");
        rep->enabled = true;
        return 0;
    }
    err_clear(&e);
    r = k8s_config_load(&rep->opts, &rep->cfg, &e);
    if (r == 0 && !rep->pod.name[0]) {
        r = err_set(&e, -ENOENT, "no pod name to report about");
        err_hint(&e, "set CLRATTACH_POD_NAME (downward API metadata.name) or --pod");
    }
    if (r < 0) {
        if (rep->mode == EVENTS_REQUIRED) {
            err_prefix(&e, "--events=required");
            print_error("usage error", &e);
            return EXIT_USAGE;
        }
        /* auto: not in a cluster, or not configured; say so once and go on. */
        if (r != -ENOENT || rep->opts.api_url)
            fprintf(stderr, "clrattach: warning: Events off: %s\n", e.msg);
        return 0;
    }
    if (!rep->pod.namespace_[0])
        snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "%s", rep->cfg.namespace_);
    rep->enabled = true;
    return 0;
}

/* Sends (or, dry run, prints) the Event for a result. A failure never changes the outcome;
 * returns < 0 when a report was due and did not happen. */
static int report_event(struct reporting *rep, const struct attach_result *res,
                        const char *profiler, const struct ipc_guid *clsid)
{
    if (!rep->enabled)
        return rep->mode == EVENTS_REQUIRED ? -ENOENT : 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct report_event ev;
    report_event_from_result(res, profiler, clsid, &now, &ev);
    struct cla_error e = {0};
    if (rep->dry_run) {
        _cleanup_free_ char *body = NULL;
        int r = k8s_event_build(&rep->pod, &ev.spec, false, &body, &e);
        if (r < 0) {
            print_error("events", &e);
            return r;
        }
        fprintf(stderr, "clrattach: dry run: would POST this Event:\n");
        printf("%s\n", body);
        return 0;
    }
    struct k8s_report_outcome out;
    int r = k8s_report_event(&rep->cfg, &rep->pod, &ev.spec, &out, &e);
    if (r < 0) {
        fprintf(stderr, "clrattach: %s: could not report the Event: %s\n",
                rep->mode == EVENTS_REQUIRED ? "error" : "warning", e.msg);
        if (e.hint[0])
            fprintf(stderr, "clrattach: next step: %s\n", e.hint);
        return r;
    }
    fprintf(stderr, "clrattach: reported Event %s/%s (%s, %d request%s)\n", rep->pod.namespace_,
            out.event_name, ev.spec.reason, out.attempts, out.attempts == 1 ? "" : "s");
    return 0;
}

static int cmd_attach(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"profiler", required_argument, NULL, 'f'},
        {"clsid", required_argument, NULL, 'c'},
        {"client-data", required_argument, NULL, 'd'},
        {"target-dir", required_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"attach-timeout", required_argument, NULL, 'A'},
        {"startup", no_argument, NULL, 'U'},
        {"events", required_argument, NULL, 'E'},
        {"dry-run-events", no_argument, NULL, 'D'},
        {"api-url", required_argument, NULL, 1001},
        {"token-file", required_argument, NULL, 1002},
        {"ca-file", required_argument, NULL, 1003},
        {"namespace", required_argument, NULL, 1004},
        {"pod", required_argument, NULL, 1005},
        {"pod-uid", required_argument, NULL, 1006},
        {"container", required_argument, NULL, 1007},
        {"termination-log", required_argument, NULL, 1008},
        {"output", required_argument, NULL, 'o'},
        {"seccomp", required_argument, NULL, 'S'},
        {"proc", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    struct common co = {.seccomp = SANDBOX_MODE_KILL, .proc = "/proc"};
    const char *pid_s = NULL, *profiler = NULL, *clsid_s = NULL, *data_s = NULL;
    const char *target_dir = NULL;
    uint64_t timeout_s = 30, attach_timeout_ms = 5000;
    bool startup = false;
    struct reporting rep = {.mode = EVENTS_AUTO, .termination_fd = -1};
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pid_s = optarg; break;
        case 'f': profiler = optarg; break;
        case 'c': clsid_s = optarg; break;
        case 'd': data_s = optarg; break;
        case 't': target_dir = optarg; break;
        case 'T':
            if (parse_uint(optarg, 3600, &timeout_s) < 0 || timeout_s == 0)
                return usage_error("attach", "--timeout takes 1..3600 seconds, not '%s'", optarg);
            break;
        case 'A':
            if (parse_uint(optarg, 600000, &attach_timeout_ms) < 0)
                return usage_error("attach", "--attach-timeout takes 0..600000 ms, not '%s'",
                                   optarg);
            break;
        case 'U': startup = true; break;
        case 'E':
            if (strcmp(optarg, "off") == 0)
                rep.mode = EVENTS_OFF;
            else if (strcmp(optarg, "auto") == 0)
                rep.mode = EVENTS_AUTO;
            else if (strcmp(optarg, "required") == 0)
                rep.mode = EVENTS_REQUIRED;
            else
                return usage_error("attach", "--events takes off, auto or required, not '%s'",
                                   optarg);
            break;
        case 'D': rep.dry_run = true; break;
        case 1001: rep.opts.api_url = optarg; break;
        case 1002: rep.opts.token_file = optarg; break;
        case 1003: rep.opts.ca_file = optarg; break;
        case 1004: rep.opts.namespace_ = optarg; break;
        case 1005: rep.pod_name = optarg; break;
        case 1006: rep.pod_uid = optarg; break;
        case 1007: rep.container = optarg; break;
        case 1008: rep.termination_log = optarg; break;
        case 'h': fputs(usage_attach, stdout); return 0;
        case '?': return usage_error("attach", "unrecognised option");
        default:
            if ((r = parse_common(c, optarg, &co, "attach")) != 0)
                return r;
        }
    }
    if (optind < argc)
        return usage_error("attach", "unexpected argument '%s'", argv[optind]);
    if (!pid_s || !profiler || !clsid_s)
        return usage_error("attach", "--pid, --profiler and --clsid are required");
    uint64_t pid;
    if (parse_uint(pid_s, INT32_MAX, &pid) < 0 || pid == 0)
        return usage_error("attach", "--pid takes a process id, not '%s'", pid_s);
    struct ipc_guid clsid;
    if (ipc_guid_parse(clsid_s, &clsid) < 0)
        return usage_error("attach", "--clsid '%s' is not a GUID like "
                           "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}", clsid_s);
    if (target_dir && target_dir[0] != '/')
        return usage_error("attach", "--target-dir '%s' must be absolute (as the target sees it)",
                           target_dir);

    struct cla_error e = {0};
    _cleanup_free_ uint8_t *data = NULL;
    size_t data_len = 0;
    if (data_s && read_client_data(data_s, &data, &data_len, &e) < 0) {
        print_error("usage error", &e);
        return EXIT_USAGE;
    }
    if ((r = prepare_reporting(&rep)) != 0)
        return r;
    _cleanup_close_ int tlog = rep.termination_fd;
    _cleanup_close_ int procfd = target_open_proc(co.proc, &e);
    if (procfd < 0) {
        print_error("internal error", &e);
        return 1;
    }
    /* Root needs only these to act as the target's user and read its /proc; the rest go. */
    if (co.seccomp != SANDBOX_MODE_OFF &&
        sandbox_drop_caps(CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                              CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH) |
                              CAP(CAP_CHOWN) | CAP(CAP_FOWNER),
                          &e) < 0) {
        print_error("capabilities", &e);
        return 1;
    }
    if ((r = enter_sandbox(&co)) != 0)
        return r;

    struct attach_opts ao = {
        .proc_dirfd = procfd,
        .pid = (pid_t)pid,
        .profiler_path = profiler,
        .clsid = clsid,
        .client_data = data,
        .client_data_len = data_len,
        .target_dir = target_dir,
        .attach_timeout_ms = (uint32_t)attach_timeout_ms,
        .timeout_ms = (int64_t)timeout_s * 1000,
        .startup = startup,
        .on_stage = on_stage,
        .userdata = &co,
    };
    struct attach_result res;
    attach_run(&ao, &res);
    /* The target is behind us: reading service-account files is all that is left. */
    if (co.seccomp != SANDBOX_MODE_OFF)
        (void)sandbox_drop_caps(CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH), &e);

    int code = attach_outcome_exit_code(res.outcome);
    if (report_event(&rep, &res, profiler, &clsid) < 0 && rep.mode == EVENTS_REQUIRED &&
        code == 0)
        code = EXIT_EVENT_REQUIRED;

    _cleanup_free_ char *js = result_attach_json(&res, profiler, &clsid);
    if (co.json) {
        if (js)
            printf("%s\n", js);
        if (res.outcome != ATTACH_OK)
            print_error(attach_outcome_name(res.outcome), &res.error);
    } else {
        print_attach_text(&res);
    }
    fflush(stdout);
    if (tlog >= 0) {
        char msg[REPORT_TERMINATION_LOG_MAX + 1];
        size_t n = report_termination_message(&res, js, msg);
        if (util_write_all(tlog, msg, n) < 0)
            fprintf(stderr, "clrattach: warning: cannot write the termination log: %s\n",
                    strerror(errno));
    }
    return code;
}

static int cmd_ps(int argc, char **argv)
{
    static const struct option opts[] = {
        {"no-query", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"seccomp", required_argument, NULL, 'S'},
        {"proc", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    struct common co = {.seccomp = SANDBOX_MODE_KILL, .proc = "/proc"};
    bool query = true;
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': query = false; break;
        case 'h': fputs(usage_ps, stdout); return 0;
        case '?': return usage_error("ps", "unrecognised option");
        default:
            if ((r = parse_common(c, optarg, &co, "ps")) != 0)
                return r;
        }
    }
    if (optind < argc)
        return usage_error("ps", "unexpected argument '%s'", argv[optind]);
    struct cla_error e = {0};
    _cleanup_close_ int procfd = target_open_proc(co.proc, &e);
    if (procfd < 0) {
        print_error("internal error", &e);
        return 1;
    }
    if ((r = enter_sandbox(&co)) != 0)
        return r;
    struct ps_entry *list = NULL;
    size_t n = 0;
    if (ps_scan(procfd, query, 2000, &list, &n, &e) < 0) {
        print_error("ps", &e);
        return 1;
    }
    if (!co.json)
        printf("%-8s %-8s %-6s %-12s %-10s %-16s %s\n", "PID", "NSPID", "UID", "STATE", "RUNTIME",
               "RID", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        const struct ps_entry *p = &list[i];
        if (co.json) {
            _cleanup_free_ char *js = result_ps_json(p);
            if (js)
                printf("%s\n", js);
            continue;
        }
        printf("%-8d %-8d %-6u %-12s %-10s %-16s %s\n", (int)p->pid, (int)p->nspid,
               (unsigned)p->uid, p->state, p->runtime_version[0] ? p->runtime_version : "-",
               p->runtime_rid[0] ? p->runtime_rid : "-", p->command_line);
    }
    free(list);
    return 0;
}

static int cmd_seccomp_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    bool stats = false;
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 's': stats = true; break;
        case 'h': fputs(usage_seccomp, stdout); return 0;
        default: return usage_error("seccomp-profile", "unrecognised option");
        }
    }
    if (optind < argc)
        return usage_error("seccomp-profile", "unexpected argument '%s'", argv[optind]);
    if (stats) {
        printf("allowed syscalls: %zu\n", sandbox_allowed_count());
        return 0;
    }
    struct cla_error e = {0};
    _cleanup_free_ char *js = NULL;
    if (sandbox_profile_json(&js, &e) < 0) {
        print_error("seccomp-profile", &e);
        return 1;
    }
    printf("%s\n", js);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        fputs("clrattach: usage error: no command given\n", stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("clrattach %s\n", CLRATTACH_VERSION);
        return 0;
    }
    /* getopt_long sees the command as argv[0]. */
    argc--;
    argv++;
    if (strcmp(cmd, "attach") == 0)
        return cmd_attach(argc, argv);
    if (strcmp(cmd, "ps") == 0)
        return cmd_ps(argc, argv);
    if (strcmp(cmd, "seccomp-profile") == 0)
        return cmd_seccomp_profile(argc, argv);
    fprintf(stderr, "clrattach: usage error: unknown command '%s'\n"
                    "clrattach: next step: see 'clrattach --help'\n", cmd);
    return EXIT_USAGE;
}
