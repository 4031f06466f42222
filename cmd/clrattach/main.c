/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clrattach: parse options, call lib/, print once. The seccomp filter goes on right after the
 * options are parsed and our own inputs read, before the first byte of any target is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
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
#include "k8s_target_sa.h"
#include "ps.h"
#include "render.h"
#include "report.h"
#include "result_json.h"
#include "sandbox.h"
#include "target.h"
#include "userfile.h"
#include "util.h"
#include "watch.h"

#define EXIT_USAGE          2
#define EXIT_EVENT_REQUIRED 10

extern char **environ;

enum events_mode { EVENTS_OFF, EVENTS_AUTO, EVENTS_REQUIRED };

/* What reporting needs, gathered before the sandbox goes on and the target is touched. */
struct reporting {
    enum events_mode mode;
    bool dry_run;
    bool enabled;     /* a configuration was found (or dry run) */
    bool from_target; /* no token of our own: use the target's (ephemeral container) */
    struct k8s_target_sa sa;
    struct k8s_config_opts opts;
    struct k8s_config cfg;
    struct k8s_pod_ref pod;
    const char *pod_name, *pod_uid, *container;
    const char *termination_log;
    int termination_fd;
    size_t termination_len; /* longest message written so far */
    /* watch: repeats of one outcome update an Event series instead of adding Events */
    struct k8s_series_cache *series;
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
    "  watch             sidecar mode: attach to every matching process, once per instance\n"
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
    "  --profiler PATH        on this side: the profiler's .so; or its directory (the .so with\n"
    "                         the files it needs, delivered whole, names kept); or a bundle\n"
    "                         with one build per runtime identifier (linux-x64/, ...); or a\n"
    "                         NuGet package (runtimes/<rid>/native/); or - for a .so or a tar\n"
    "                         of a directory on stdin. The build that fits the target goes into\n"
    "                         its own filesystem view under a content-addressed name\n"
    "  --entry NAME           the profiler library in a directory (default: the only one that\n"
    "                         exports DllGetClassObject)\n"
    "  --rid RID              the target's runtime identifier (default: asked from the runtime,\n"
    "                         else read from its loader and executable); one that contradicts\n"
    "                         the runtime's answer needs --force-rid\n"
    "  --clsid GUID           the profiler's CLSID, {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}\n"
    "  --client-data STR|@FILE  bytes handed to InitializeForAttach (up to about 64 KiB, what\n"
    "                         one frame holds); {dir} and {entry} become where the profiler\n"
    "                         went in the target's view, {{ a literal brace\n"
    "  --skip-dependency-check  send even when a library the profiler needs is not found in\n"
    "                         the target's view\n"
    "  --settle MS            watch the app this long after the runtime's answer: a profiler\n"
    "                         that kills it is reported as target_died (default 2000, 0 = off)\n"
    "  --keep                 keep what was delivered when the runtime refused the profiler\n"
    "                         (default: removed)\n"
    "  --target-dir DIR       directory in the target's view for the profiler (default: its\n"
    "                         TMPDIR)\n"
    "  --timeout SECONDS      deadline for each exchange with the runtime (default 30)\n"
    "  --attach-timeout MS    sent to the runtime: how long it may wait for a background GC\n"
    "                         when the profiler asks for GC events (default 5000)\n"
    "  --startup              if the runtime is suspended at startup, load the profiler as a\n"
    "                         startup profiler (StartupProfiler) and resume the runtime (no\n"
    "                         --client-data: that command carries none)\n"
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
    "ready, 9 protocol error or timeout, 10 attached but the required Event failed, 12 the app\n"
    "died after the answer, 13 a library the profiler needs is missing, 2 usage error, 1\n"
    "internal error.\n";

static const char usage_watch[] =
    "Usage: clrattach watch --profiler PATH --clsid GUID [selectors] [options]\n"
    "\n"
    "Sidecar mode: attach the profiler to every matching .NET process as soon as its\n"
    "diagnostic socket appears, exactly once per runtime instance (pid + start time), and keep\n"
    "running. Each attach runs in a process of its own, at most 4 at once, so a runtime that\n"
    "never answers delays no other. SIGTERM stops it within a second; attaches still in flight\n"
    "are abandoned and reported as 'interrupted'.\n"
    "\n"
    "Selectors (all must match; none = every .NET process but clrattach itself):\n"
    "  --match-comm NAME      the process name (/proc comm, e.g. 'dotnet' or the app host)\n"
    "  --match-cmdline STR    a substring of the command line (e.g. 'Orders.Api.dll')\n"
    "  --uid N                the process's effective uid\n"
    "  --match-cgroup STR     a substring of /proc/<pid>/cgroup: the app container's ID, or\n"
    "                         its cgroup path, selects that container's processes\n"
    "  --other-containers     only processes in another mount namespace than clrattach's\n"
    "                         (skips every process of the helper's own container)\n"
    "\n"
    "  --ready-file PATH      created once the first scan is complete (readiness probe)\n"
    "  --interval MS          time between scans (default 250)\n"
    "  --profiler (not -), --entry, --clsid, --client-data, --target-dir, --timeout,\n"
    "  --attach-timeout, --rid, --skip-dependency-check, --settle, --keep, the reporting\n"
    "  options and -o/--seccomp/--proc: as for 'attach'. Transient failures are\n"
    "  retried with backoff (1 s doubling, 5 attempts); every new outcome is printed and\n"
    "  reported once.\n";

static const char usage_ps[] =
    "Usage: clrattach ps [-o text|json] [--no-query] [--seccomp MODE] [--proc DIR]\n"
    "\n"
    "  --no-query   do not ask each runtime for its version (no connection is made)\n";

static const char usage_seccomp[] =
    "Usage: clrattach seccomp-profile [--stats]\n"
    "\n"
    "Prints the OCI/Kubernetes seccomp profile generated from the same allow-list that clrattach\n"
    "loads in-process (use it as a localhostProfile). --stats prints counts instead.\n";

static void say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set before any option is parsed when `-o json` is anywhere on the command line: a usage error
 * found before (or while) parsing is then also one JSON document on stdout. */
static bool json_wanted;
/* The command being run, for the JSON document of an error that ends it early. */
static const char *json_cmd = "clrattach";

static void scan_for_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return;
        if (strcmp(a, "-ojson") == 0 || strcmp(a, "--output=json") == 0 ||
            ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc &&
             strcmp(argv[i + 1], "json") == 0))
            json_wanted = true;
    }
}

static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024], hint[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(hint, sizeof(hint), "see 'clrattach %s%s--help'", cmd, cmd[0] ? " " : "");
    say(stderr, "clrattach: usage error: %s", msg);
    say(stderr, "clrattach: next step: %s", hint);
    if (json_wanted) {
        _cleanup_free_ char *js =
            result_error_json(cmd[0] ? cmd : json_cmd, ATTACH_USAGE, msg, hint);
        if (js)
            printf("%s\n", js);
    }
    return EXIT_USAGE;
}

/*
 * Prints one line (the newline is added). Every result and error line passes through the
 * renderer as the last line of defence (render.h): a target string that a call site forgot to
 * render still cannot reach the terminal or a log raw, while our own text, text that is already
 * rendered, and our own UTF-8 ('…', '→') come out unchanged.
 */
static void say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE *f, const char *fmt, ...)
{
    char line[4096], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    render_message(line, strnlen(line, sizeof(line)), shown, sizeof(shown));
    fprintf(f, "%s\n", shown);
}

static void print_error(const char *what, const struct cla_error *e)
{
    say(stderr, "clrattach: %s: %s", what, e->msg[0] ? e->msg : "failed");
    if (e->hint[0])
        say(stderr, "clrattach: next step: %s", e->hint);
}

/* Ends a command before any result: the message on stderr and, with -o json, the one JSON
 * document every outcome has. Returns the outcome's exit code. */
static int fatal(const char *what, enum attach_outcome o, const struct cla_error *e)
{
    print_error(what, e);
    if (json_wanted) {
        _cleanup_free_ char *js =
            result_error_json(json_cmd, o, e->msg[0] ? e->msg : "failed", e->hint);
        if (js)
            printf("%s\n", js);
    }
    return attach_outcome_exit_code(o);
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
    case 'P': co->proc = arg; return 0;
    }
    return usage_error(cmd, "unknown option");
}

/* Enters the sandbox at `stage`; 'off' only with a loud warning, since it exists for
 * diagnosis. */
static int enter_sandbox(const struct common *co, enum sandbox_stage stage)
{
    struct cla_error e = {0};
    if (co->seccomp == SANDBOX_MODE_OFF)
        fputs("clrattach: WARNING: --seccomp=off: running WITHOUT the seccomp filter; use this "
              "only to diagnose a suspected filter problem\n",
              stderr);
    if (sandbox_enter_at(co->seccomp, stage, &e) < 0) {
        return fatal("seccomp", ATTACH_INTERNAL, &e);
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

static int on_stage(enum attach_stage stage, void *userdata, struct cla_error *e)
{
    const struct common *co = userdata;
    if (co->seccomp == SANDBOX_MODE_OFF)
        return 0;
    return sandbox_tighten(
        stage == ATTACH_STAGE_DELIVERED ? SANDBOX_STAGE_DELIVERED : SANDBOX_STAGE_REPORT, e);
}

static void print_attach_text(const struct attach_result *r)
{
    if (r->outcome == ATTACH_OK) {
        say(stdout, "attached: pid %d (namespace pid %d, uid %u)", (int)r->pid, (int)r->nspid,
            (unsigned)r->uid);
        if (r->runtime_rid[0])
            say(stdout, "  runtime:  %s %s", r->runtime_version, r->runtime_rid);
        say(stdout, "  profiler: %s (in the target's view%s)", r->delivered_path,
            r->reused ? ", reused" : "");
        if (r->delivered_dir[0])
            say(stdout, "  with:     the files of its directory, in %s", r->delivered_dir);
        say(stdout, "  sha256:   %s", r->sha256);
        say(stdout, "  took:     %lld ms", (long long)r->duration_ms);
        return;
    }
    print_error(attach_outcome_name(r->outcome), &r->error);
    if (r->removed)
        say(stderr, "clrattach: removed what this attach delivered (%s); --keep keeps it",
            r->delivered_dir[0] ? r->delivered_dir : r->delivered_path);
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
    rep->sa.token_fd = rep->sa.ca_fd = -1;
    if (rep->termination_log) {
        rep->termination_fd =
            open(rep->termination_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (rep->termination_fd < 0) {
            err_setsys(&e, -errno, "--termination-log '%s'", rep->termination_log);
            return fatal("usage error", ATTACH_USAGE, &e);
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
    if (r < 0 && r != -ENOENT)
        return fatal("usage error", ATTACH_USAGE, &e);
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
    /* An ephemeral container (kubectl debug) has the cluster's service env but no token of its
     * own: the app container's will be used, once the target is known. */
    if (!rep->opts.token_file && !rep->opts.sa_dir &&
        (rep->opts.api_url || getenv("KUBERNETES_SERVICE_HOST")) &&
        access(K8S_SA_DIR_DEFAULT "/token", F_OK) < 0) {
        rep->from_target = true;
        return 0;
    }
    r = k8s_config_load(&rep->opts, &rep->cfg, &e);
    if (r == 0 && !rep->pod.name[0]) {
        r = err_set(&e, -ENOENT, "no pod name to report about");
        err_hint(&e, "set CLRATTACH_POD_NAME (downward API metadata.name) or --pod");
    }
    if (r < 0) {
        if (rep->mode == EVENTS_REQUIRED) {
            err_prefix(&e, "--events=required");
            return fatal("usage error", ATTACH_USAGE, &e);
        }
        /* auto: not in a cluster, or not configured; say so once and go on. */
        if (r != -ENOENT || rep->opts.api_url)
            say(stderr, "clrattach: warning: Events off: %s", e.msg);
        return 0;
    }
    if (!rep->pod.namespace_[0])
        snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "%s", rep->cfg.namespace_);
    rep->enabled = true;
    return 0;
}

/* Finishes the reporting setup with the target's own service account (see from_target): that of
 * the process pinned for the attach, or, when pinning failed (t NULL), no report (pin_error). */
static int reporting_from_target(struct reporting *rep, const struct target *t,
                                 const struct cla_error *pin_error)
{
    struct cla_error e = {0};
    rep->sa.token_fd = rep->sa.ca_fd = -1;
    int r;
    if (t) {
        r = k8s_target_sa_open(t, &rep->sa, &e);
    } else {
        e = *pin_error;
        r = e.code < 0 ? e.code : -ESRCH;
        err_prefix(&e, "the target's service account");
    }
    if (r == 0) {
        rep->opts.token_file = rep->sa.token_path;
        rep->opts.ca_file = rep->sa.ca_path;
        if (!rep->opts.namespace_ && rep->sa.namespace_[0] && !rep->pod.namespace_[0])
            snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "%s", rep->sa.namespace_);
        if (!rep->opts.namespace_ && rep->pod.namespace_[0])
            rep->opts.namespace_ = rep->pod.namespace_;
        r = k8s_config_load(&rep->opts, &rep->cfg, &e);
    }
    if (r == 0 && !rep->pod.name[0]) {
        r = err_set(&e, -ENOENT, "no pod name to report about");
        err_hint(&e, "set CLRATTACH_POD_NAME or --pod (HOSTNAME is the pod name in a pod)");
    }
    if (r < 0) {
        err_prefix(&e, "Events: this container has no service-account token and");
        if (!e.hint[0])
            err_hint(&e, "mount the pod's kube-api-access volume into this container (kubectl "
                         "debug --custom), or pass --token-file and --ca-file");
        if (rep->mode == EVENTS_REQUIRED)
            return fatal("usage error", ATTACH_USAGE, &e);
        print_error("warning", &e);
        return -1;
    }
    if (!rep->pod.namespace_[0])
        snprintf(rep->pod.namespace_, sizeof(rep->pod.namespace_), "%s", rep->cfg.namespace_);
    rep->enabled = true;
    return -1;
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
    int r;
    if (rep->series) {
        /* One series per outcome, profiler and HRESULT: a crash-looping app attached at every
         * start, or every instance failing alike, is one Event with a count. */
        char key[K8S_SERIES_KEY_MAX];
        snprintf(key, sizeof(key), "%s|%s|%08x|%s", ev.spec.reason,
                 attach_outcome_name(res->outcome), res->have_hresult ? res->hresult : 0u,
                 profiler);
        r = k8s_report_event_dedup(&rep->cfg, &rep->pod, &ev.spec, key, rep->series, &out, &e);
    } else {
        r = k8s_report_event(&rep->cfg, &rep->pod, &ev.spec, &out, &e);
    }
    if (r < 0) {
        say(stderr, "clrattach: %s: could not report the Event: %s",
            rep->mode == EVENTS_REQUIRED ? "error" : "warning", e.msg);
        if (e.hint[0])
            say(stderr, "clrattach: next step: %s", e.hint);
        return r;
    }
    if (out.patched)
        say(stderr, "clrattach: updated Event %s/%s (%s, seen %d times, %d request%s)",
            rep->pod.namespace_, out.event_name, ev.spec.reason, out.series_count, out.attempts,
            out.attempts == 1 ? "" : "s");
    else
        say(stderr, "clrattach: reported Event %s/%s (%s, %d request%s)", rep->pod.namespace_,
            out.event_name, ev.spec.reason, out.attempts, out.attempts == 1 ? "" : "s");
    return 0;
}

/* Options shared by `attach` and `watch`, and what they set up before any target is touched. */
struct attach_cli {
    const char *cmd;
    struct common co;
    const char *pid_s, *profiler, *clsid_s, *data_s, *target_dir, *rid, *entry;
    uint64_t timeout_s, attach_timeout_ms, settle_ms;
    bool startup, force_rid, skip_dependency_check, keep;
    struct reporting rep;
    /* watch only */
    const char *match_comm, *match_cmdline, *uid_s, *ready_file, *match_cgroup;
    bool other_containers;
    uint64_t interval_ms;
    /* derived */
    struct ipc_guid clsid;
    uint8_t *data;
    size_t data_len;
    int procfd;
};

static const struct option attach_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"profiler", required_argument, NULL, 'f'},
    {"clsid", required_argument, NULL, 'c'},
    {"client-data", required_argument, NULL, 'd'},
    {"target-dir", required_argument, NULL, 't'},
    {"timeout", required_argument, NULL, 'T'},
    {"attach-timeout", required_argument, NULL, 'A'},
    {"startup", no_argument, NULL, 'U'},
    {"rid", required_argument, NULL, 1009},
    {"entry", required_argument, NULL, 1010},
    {"force-rid", no_argument, NULL, 1011},
    {"skip-dependency-check", no_argument, NULL, 1012},
    {"keep", no_argument, NULL, 1013},
    {"settle", required_argument, NULL, 1014},
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
    {"match-comm", required_argument, NULL, 1101},
    {"match-cmdline", required_argument, NULL, 1102},
    {"uid", required_argument, NULL, 1103},
    {"ready-file", required_argument, NULL, 1104},
    {"interval", required_argument, NULL, 1105},
    {"match-cgroup", required_argument, NULL, 1106},
    {"other-containers", no_argument, NULL, 1107},
    {"output", required_argument, NULL, 'o'},
    {"seccomp", required_argument, NULL, 'S'},
    {"proc", required_argument, NULL, 'P'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* Parses the options; returns -1 to go on, or the exit code to leave with. */
static int parse_attach_cli(int argc, char **argv, bool watch, struct attach_cli *a)
{
    const char *cmd = a->cmd;
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", attach_options, NULL)) != -1) {
        bool watch_only = c >= 1101 && c <= 1107;
        if ((watch_only && !watch) || (watch && (c == 'p' || c == 'U')))
            return usage_error(cmd, "option '%s' is not for '%s'", argv[optind - 1], cmd);
        switch (c) {
        case 'p': a->pid_s = optarg; break;
        case 'f': a->profiler = optarg; break;
        case 'c': a->clsid_s = optarg; break;
        case 'd': a->data_s = optarg; break;
        case 't': a->target_dir = optarg; break;
        case 'T':
            if (parse_uint(optarg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
                return usage_error(cmd, "--timeout takes 1..3600 seconds, not '%s'", optarg);
            break;
        case 'A':
            if (parse_uint(optarg, 600000, &a->attach_timeout_ms) < 0)
                return usage_error(cmd, "--attach-timeout takes 0..600000 ms, not '%s'", optarg);
            break;
        case 'U': a->startup = true; break;
        case 'E':
            if (strcmp(optarg, "off") == 0)
                a->rep.mode = EVENTS_OFF;
            else if (strcmp(optarg, "auto") == 0)
                a->rep.mode = EVENTS_AUTO;
            else if (strcmp(optarg, "required") == 0)
                a->rep.mode = EVENTS_REQUIRED;
            else
                return usage_error(cmd, "--events takes off, auto or required, not '%s'", optarg);
            break;
        case 'D': a->rep.dry_run = true; break;
        case 1001: a->rep.opts.api_url = optarg; break;
        case 1002: a->rep.opts.token_file = optarg; break;
        case 1003: a->rep.opts.ca_file = optarg; break;
        case 1004: a->rep.opts.namespace_ = optarg; break;
        case 1005: a->rep.pod_name = optarg; break;
        case 1006: a->rep.pod_uid = optarg; break;
        case 1007: a->rep.container = optarg; break;
        case 1008: a->rep.termination_log = optarg; break;
        case 1009: a->rid = optarg; break;
        case 1010: a->entry = optarg; break;
        case 1011: a->force_rid = true; break;
        case 1012: a->skip_dependency_check = true; break;
        case 1013: a->keep = true; break;
        case 1014:
            if (parse_uint(optarg, 60000, &a->settle_ms) < 0)
                return usage_error(cmd, "--settle takes 0..60000 ms, not '%s'", optarg);
            break;
        case 1101: a->match_comm = optarg; break;
        case 1102: a->match_cmdline = optarg; break;
        case 1103: a->uid_s = optarg; break;
        case 1104: a->ready_file = optarg; break;
        case 1106: a->match_cgroup = optarg; break;
        case 1107: a->other_containers = true; break;
        case 1105:
            if (parse_uint(optarg, 60000, &a->interval_ms) < 0 || a->interval_ms < 10)
                return usage_error(cmd, "--interval takes 10..60000 ms, not '%s'", optarg);
            break;
        case 'h': fputs(watch ? usage_watch : usage_attach, stdout); return 0;
        case '?': return usage_error(cmd, "unrecognised option");
        default:
            if ((r = parse_common(c, optarg, &a->co, cmd)) != 0)
                return r;
        }
    }
    if (optind < argc)
        return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if ((!watch && !a->pid_s) || !a->profiler || !a->clsid_s)
        return usage_error(cmd, watch ? "--profiler and --clsid are required"
                                      : "--pid, --profiler and --clsid are required");
    if (watch && strcmp(a->profiler, "-") == 0)
        return usage_error(cmd, "--profiler - (stdin) is read once, by 'attach'; a watcher "
                                "attaches again and again: give it a file or directory");
    if (a->force_rid && !a->rid)
        return usage_error(cmd, "--force-rid goes with --rid");
    if (ipc_guid_parse(a->clsid_s, &a->clsid) < 0)
        return usage_error(cmd,
                           "--clsid '%s' is not a GUID like "
                           "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}",
                           a->clsid_s);
    if (a->target_dir && a->target_dir[0] != '/')
        return usage_error(cmd, "--target-dir '%s' must be absolute (as the target sees it)",
                           a->target_dir);
    if (a->target_dir) {
        /* The path is sent to the runtime as UTF-16 and printed: refused now, not after the
         * profiler is in the target. */
        size_t at;
        uint32_t cp;
        enum render_class rc = render_find(a->target_dir, strlen(a->target_dir), &at, &cp);
        if (rc != RENDER_SAFE) {
            char sh[256];
            render_text(a->target_dir, strlen(a->target_dir), sh, sizeof(sh));
            return usage_error(cmd, "--target-dir '%s' holds %s at byte %zu", sh,
                               render_class_name(rc), at);
        }
    }
    if (a->match_comm && strlen(a->match_comm) > 15)
        return usage_error(cmd,
                           "--match-comm '%s' is longer than the kernel's 15-byte comm; "
                           "use --match-cmdline",
                           a->match_comm);
    return -1;
}

/* Everything before the first target byte: our own inputs, reporting, /proc, capabilities,
 * then the seccomp filter at `stage`. Returns -1 to go on, or the exit code. */
static int setup_job(struct attach_cli *a, enum sandbox_stage stage)
{
    struct cla_error e = {0};
    int r;
    if (a->data_s && read_client_data(a->data_s, &a->data, &a->data_len, &e) < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    if ((r = prepare_reporting(&a->rep)) != 0)
        return r;
    a->procfd = target_open_proc(a->co.proc, &e);
    if (a->procfd < 0)
        return fatal("internal error", ATTACH_INTERNAL, &e);
    /* Root needs only these to act as the target's user and read its /proc; the rest go. */
    if (a->co.seccomp != SANDBOX_MODE_OFF &&
        sandbox_drop_caps(CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                              CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH) | CAP(CAP_CHOWN) |
                              CAP(CAP_FOWNER),
                          &e) < 0)
        return fatal("capabilities", ATTACH_INTERNAL, &e);
    if ((r = enter_sandbox(&a->co, stage)) != 0)
        return r;
    return -1;
}

static struct attach_opts attach_opts_of(struct attach_cli *a)
{
    struct attach_opts ao = {
        .proc_dirfd = a->procfd,
        .profiler_path = a->profiler,
        .rid = a->rid,
        .entry = a->entry,
        .force_rid = a->force_rid,
        .skip_dependency_check = a->skip_dependency_check,
        .keep = a->keep,
        .settle_ms = (int64_t)a->settle_ms,
        .clsid = a->clsid,
        .client_data = a->data,
        .client_data_len = a->data_len,
        .target_dir = a->target_dir,
        .attach_timeout_ms = (uint32_t)a->attach_timeout_ms,
        .timeout_ms = (int64_t)a->timeout_s * 1000,
        .startup = a->startup,
        .on_stage = on_stage,
        .userdata = &a->co,
    };
    return ao;
}

static void release_job(struct attach_cli *a)
{
    if (a->rep.from_target)
        k8s_target_sa_close(&a->rep.sa);
    free(a->data);
    util_closep(&a->procfd);
    util_closep(&a->rep.termination_fd);
}

/* Reports a result's Event (unless !send_event), then prints it; returns the exit code for it.
 * The report goes first because its failure can change the code (--events=required), and
 * stdout and the termination log must carry the code the process really ends with. */
static int emit_result(struct attach_cli *a, const struct attach_result *res, bool send_event)
{
    int code = attach_outcome_exit_code(res->outcome);
    if (send_event && report_event(&a->rep, res, a->profiler, &a->clsid) < 0 &&
        a->rep.mode == EVENTS_REQUIRED && code == 0)
        code = EXIT_EVENT_REQUIRED;
    _cleanup_free_ char *js = result_attach_json(res, a->profiler, &a->clsid, code);
    if (a->co.json) {
        if (js)
            printf("%s\n", js);
        if (res->outcome != ATTACH_OK)
            print_error(attach_outcome_name(res->outcome), &res->error);
    } else {
        print_attach_text(res);
    }
    fflush(stdout);
    if (a->rep.termination_fd >= 0) {
        char msg[REPORT_TERMINATION_LOG_MAX + 1];
        size_t n = report_termination_message(res, js, code, msg);
        /* The kubelet reads the file once the container ends: keep only the latest result.
         * ftruncate is not on the seccomp list, so a shorter message is padded with spaces
         * over the end of a longer earlier one (JSON readers skip trailing white space). */
        size_t pad = a->rep.termination_len > n ? a->rep.termination_len - n : 0;
        if (pad > REPORT_TERMINATION_LOG_MAX - n)
            pad = REPORT_TERMINATION_LOG_MAX - n;
        memset(msg + n, ' ', pad);
        if (n + pad > a->rep.termination_len)
            a->rep.termination_len = n + pad;
        if (lseek(a->rep.termination_fd, 0, SEEK_SET) < 0 ||
            util_write_all(a->rep.termination_fd, msg, n + pad) < 0)
            fprintf(stderr, "clrattach: warning: cannot write the termination log: %s\n",
                    strerror(errno));
    }
    return code;
}

static int cmd_attach(int argc, char **argv)
{
    struct attach_cli a = {.cmd = "attach",
                           .co = {.seccomp = SANDBOX_MODE_KILL, .proc = "/proc"},
                           .timeout_s = 30,
                           .settle_ms = 2000,
                           .attach_timeout_ms = 5000,
                           .rep = {.mode = EVENTS_AUTO, .termination_fd = -1},
                           .procfd = -1};
    int r = parse_attach_cli(argc, argv, false, &a);
    if (r >= 0)
        return r;
    uint64_t pid;
    if (parse_uint(a.pid_s, INT32_MAX, &pid) < 0 || pid == 0)
        return usage_error("attach", "--pid takes a process id, not '%s'", a.pid_s);
    if ((r = setup_job(&a, SANDBOX_STAGE_ATTACH)) >= 0) {
        release_job(&a);
        return r;
    }
    /* One pin for everything about this process: the attach and, in an ephemeral container,
     * the service account its Event is sent with. */
    struct attach_opts ao = attach_opts_of(&a);
    struct attach_result res;
    struct target t;
    bool pinned = attach_pin(&ao, (pid_t)pid, &t, &res) == 0;
    if (a.rep.from_target &&
        (r = reporting_from_target(&a.rep, pinned ? &t : NULL, &res.error)) >= 0) {
        if (pinned)
            target_close(&t);
        release_job(&a);
        return r;
    }
    if (pinned) {
        attach_run(&ao, &t, &res);
        target_close(&t);
    }
    /* The target is behind us: reading service-account files is all that is left. */
    struct cla_error e = {0};
    if (a.co.seccomp != SANDBOX_MODE_OFF)
        (void)sandbox_drop_caps(CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH), &e);
    int code = emit_result(&a, &res, true);
    release_job(&a);
    return code;
}

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct watch_ctx {
    struct attach_cli *a;
    unsigned attached, failed, interrupted;
};

static void on_watch_result(const struct attach_result *r, bool retry, void *userdata)
{
    struct watch_ctx *w = userdata;
    say(stderr, "clrattach: watch: pid %d (namespace pid %d, %s): %s%s", (int)r->pid, (int)r->nspid,
        r->command_line, attach_outcome_name(r->outcome), retry ? ", will retry" : "");
    if (r->outcome == ATTACH_OK)
        w->attached++;
    else if (r->outcome == ATTACH_INTERRUPTED)
        w->interrupted++;
    else if (!retry && r->outcome != ATTACH_ALREADY_ACTIVE)
        w->failed++;
    /* An attach abandoned at a stop is printed, not sent as an Event: the stop must not wait
     * on the API server, and the next watcher reports what really happens to that process. */
    (void)emit_result(w->a, r, r->outcome != ATTACH_INTERRUPTED);
}

static int cmd_watch(int argc, char **argv)
{
    struct attach_cli a = {.cmd = "watch",
                           .co = {.seccomp = SANDBOX_MODE_KILL, .proc = "/proc"},
                           .timeout_s = 30,
                           .settle_ms = 2000,
                           .attach_timeout_ms = 5000,
                           .interval_ms = 250,
                           .rep = {.mode = EVENTS_AUTO, .termination_fd = -1},
                           .procfd = -1};
    int r = parse_attach_cli(argc, argv, true, &a);
    if (r >= 0)
        return r;
    struct watch_selector sel = {.comm = a.match_comm,
                                 .cmdline = a.match_cmdline,
                                 .cgroup = a.match_cgroup,
                                 .other_mntns = a.other_containers};
    if (a.match_cgroup && !a.match_cgroup[0])
        return usage_error("watch", "--match-cgroup takes a non-empty string");
    if (a.uid_s) {
        uint64_t uid;
        if (parse_uint(a.uid_s, UINT32_MAX - 1, &uid) < 0)
            return usage_error("watch", "--uid takes a numeric uid, not '%s'", a.uid_s);
        sel.have_uid = true;
        sel.uid = (uid_t)uid;
    }
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if ((r = setup_job(&a, SANDBOX_STAGE_FULL)) >= 0) {
        release_job(&a);
        return r;
    }
    if (a.rep.from_target) {
        /* A watcher runs for the life of the pod as its sidecar, with a token of its own. */
        if (a.rep.mode == EVENTS_REQUIRED) {
            struct cla_error e = {0};
            err_set(&e, -ENOENT,
                    "--events=required: this container has no service-account "
                    "token of its own");
            err_hint(&e, "a watch sidecar needs automountServiceAccountToken");
            release_job(&a);
            return fatal("usage error", ATTACH_USAGE, &e);
        }
        fputs("clrattach: warning: Events off: this container has no service-account token; "
              "a watch sidecar needs automountServiceAccountToken\n",
              stderr);
        a.rep.from_target = false;
    }
    if (a.rep.enabled && !a.rep.dry_run && !(a.rep.series = k8s_series_cache_new())) {
        release_job(&a);
        fputs("clrattach: internal error: out of memory\n", stderr);
        return 1;
    }
    struct watch_ctx ctx = {.a = &a};
    struct watch_opts wo = {
        .proc_dirfd = a.procfd,
        .sel = sel,
        /* Each attach runs in a child of its own, which tightens its own seccomp stages
         * (on_stage) as it goes: the watcher stays in the first stage for the next ones. */
        .attach = attach_opts_of(&a),
        .interval_ms = (int64_t)a.interval_ms,
        .ready_file = a.ready_file,
        .on_result = on_watch_result,
        .userdata = &ctx,
        .stop = &stop_requested,
    };
    size_t tracked = 0, known = 0;
    wo.ret_tracked = &tracked;
    wo.ret_known = &known;
    struct cla_error e = {0};
    fprintf(stderr, "clrattach: watch: scanning every %llu ms\n",
            (unsigned long long)a.interval_ms);
    r = watch_run(&wo, &e);
    fprintf(stderr,
            "clrattach: watch: stopped (%u attached, %u failed, %zu instances tracked, "
            "%zu processes known%s",
            ctx.attached, ctx.failed, tracked, known, ctx.interrupted ? "; " : ")\n");
    if (ctx.interrupted)
        fprintf(stderr, "%u in flight interrupted)\n", ctx.interrupted);
    k8s_series_cache_free(a.rep.series);
    release_job(&a);
    if (r < 0) {
        return fatal("watch", ATTACH_INTERNAL, &e);
    }
    return 0;
}

static int cmd_ps(int argc, char **argv)
{
    static const struct option opts[] = {
        {"no-query", no_argument, NULL, 'n'},      {"output", required_argument, NULL, 'o'},
        {"seccomp", required_argument, NULL, 'S'}, {"proc", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},          {0},
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
    if (procfd < 0)
        return fatal("internal error", ATTACH_INTERNAL, &e);
    /* Acting as each process's user and reading its /proc takes these; the listing and the
     * connection then run with only those of them the process itself holds (creds.h). */
    if (co.seccomp != SANDBOX_MODE_OFF &&
        sandbox_drop_caps(CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                              CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH),
                          &e) < 0)
        return fatal("capabilities", ATTACH_INTERNAL, &e);
    if ((r = enter_sandbox(&co, SANDBOX_STAGE_PS)) != 0)
        return r;
    struct ps_entry *list = NULL;
    size_t n = 0;
    if (ps_scan(procfd, query, 2000, &list, &n, &e) < 0)
        return fatal("ps", ATTACH_INTERNAL, &e);
    if (co.json) {
        _cleanup_free_ char *js = result_ps_list_json(list, n);
        free(list);
        if (!js) {
            fputs("clrattach: internal error: out of memory\n", stderr);
            return 1;
        }
        printf("%s\n", js);
        return 0;
    }
    printf("%-8s %-8s %-6s %-12s %-10s %-16s %s\n", "PID", "NSPID", "UID", "STATE", "RUNTIME",
           "RID", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        const struct ps_entry *p = &list[i];
        /* A refused process has no command line to show: the reason stands in for it. */
        say(stdout, "%-8d %-8d %-6u %-12s %-10s %-16s %s", (int)p->pid, (int)p->nspid,
            (unsigned)p->uid, p->state, p->runtime_version[0] ? p->runtime_version : "-",
            p->runtime_rid[0] ? p->runtime_rid : "-",
            p->command_line[0] ? p->command_line : p->detail);
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
    scan_for_json(argc, argv);
    if (argc < 2) {
        fputs(usage_main, stderr);
        return usage_error("", "no command given");
    }
    const char *cmd = argv[1];
    json_cmd = cmd;
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
    if (strcmp(cmd, "watch") == 0)
        return cmd_watch(argc, argv);
    if (strcmp(cmd, "seccomp-profile") == 0)
        return cmd_seccomp_profile(argc, argv);
    char shown_cmd[64];
    render_text(cmd, strlen(cmd), shown_cmd, sizeof(shown_cmd));
    json_cmd = "clrattach";
    return usage_error("", "unknown command '%s'", shown_cmd);
}
