/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach watch`: the sidecar that attaches to every matching process, once per instance. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>

#include "cli.h"
#include "attach_cli.h"
#include "flow/otel.h"
#include "flow/perfmap.h"
#include "flow/watch.h"

static const char usage_watch[] =
    "Usage: clrattach watch --profiler PATH --clsid GUID [selectors] [options]\n"
    "       clrattach watch --perfmap [selectors] [options]\n"
    "       clrattach watch --otel --endpoint URL [selectors] [options]\n"
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
    "Startup (pods whose app starts with DOTNET_DefaultDiagnosticPortSuspend=1):\n"
    "  --startup              a runtime paused at startup gets the profiler as a startup\n"
    "                         profiler (--env, StartupProfiler, ResumeRuntime): loaded_at_startup\n"
    "                         or startup_load_failed, once per instance; one already running\n"
    "                         gets a plain attach, or, for a profiler known to do nothing on\n"
    "                         attach, is skipped (inert_on_attach). A paused app is resumed on\n"
    "                         every way out, also when the watcher is stopped mid-way\n"
    "  --env NAME=VALUE|@FILE, --show-env, --resume-deadline SECONDS: as for 'attach\n"
    "                         --startup'; the variables go to paused runtimes only\n"
    "\n"
    "  --perfmap              instead of a profiler, make each matching runtime (.NET 8+)\n"
    "                         write its perf map, once per instance (docs/perfmap.md)\n"
    "  --otel --endpoint URL  instead of a profiler, start OpenTelemetry in each matching\n"
    "                         runtime (.NET 10+), once per instance; with --service-name\n"
    "                         (default: each app's entry assembly), --protocol,\n"
    "                         --resource-attributes, --agent DIR, --env OTEL_X=... as for\n"
    "                         'clrattach otel' (docs/otel.md)\n"
    "  --ready-file PATH      created once the first scan is complete (readiness probe)\n"
    "  --listen PATH          no scan: listen on a Unix socket and serve every runtime that\n"
    "                         connects (DOTNET_DiagnosticPorts), each instance once, a restarted\n"
    "                         app again; takes attach's --listen options, --env,\n"
    "                         --resume-deadline and --match-cmdline/--match-entry\n"
    "                         (docs/sidecar.md, 'Listen mode')\n"
    "  --interval MS          longest time between scans (default 250); a new runtime\n"
    "                         is found sooner, by events (its socket created, a new pid)\n"
    "  --pid-poll MS|off      longest time between looks for a new process (default 200;\n"
    "                         20..60000); off: new processes are found when they open a\n"
    "                         .NET host or libcoreclr.so a runtime found before came from,\n"
    "                         and by the scans (docs/sidecar.md)\n"
    "  --profiler (not -), --entry, --clsid, --client-data, --target-dir, --timeout,\n"
    "  --attach-timeout, --rid, --skip-dependency-check, --settle, --keep, the reporting\n"
    "  options and -o/--seccomp/--proc: as for 'attach'. Transient failures are\n"
    "  retried with backoff (1 s doubling, 5 attempts); every new outcome is printed and\n"
    "  reported once.\n";

/* A stop only sets a flag: watch_run() blocks SIGTERM/SIGINT while it works and lets them in
 * only inside its wait (ppoll), so the flag is seen within one wait and no handler ever runs
 * in the middle of a scan or an allocation. */
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
    /* The runtimes are hostile input: the results they cause are rate-limited (docs/events.md).
     * The instance was served all the same, and counts below. */
    bool admitted = attach_cli_admit(w->a, r);
    if (admitted)
        say(stderr, "clrattach: watch: pid %d (namespace pid %d, %s): %s%s", (int)r->pid,
            (int)r->nspid, r->command_line, attach_outcome_name(r->outcome),
            retry ? ", will retry" : "");
    /* The summary counts each instance once, at its final outcome: a result that will be
     * retried is not a failure yet, a profiler already active is the runtime's own state
     * (one profiler per process), a profiler skipped as inert on attach is the profiler's:
     * none is a failure of this watcher. An enabled perf map counts as done. */
    if (attach_outcome_ok(r->outcome))
        w->attached++;
    else if (r->outcome == ATTACH_INTERRUPTED)
        w->interrupted++;
    else if (!retry && r->outcome != ATTACH_ALREADY_ACTIVE && r->outcome != ATTACH_INERT)
        w->failed++;
    /* An attach abandoned at a stop is printed, not sent as an Event: the stop must not wait
     * on the API server, and the next watcher reports what really happens to that process. */
    if (admitted)
        (void)attach_cli_emit_result(w->a, r, r->outcome != ATTACH_INTERRUPTED);
}

static void on_watch_warning(const char *msg, void *userdata)
{
    (void)userdata;
    say(stderr, "clrattach: watch: warning: %s", msg);
}

/* The selectors from the options. CLI_GO_ON or a usage error. */
static int parse_selector(const struct attach_cli *a, struct watch_selector *ret)
{
    *ret = (struct watch_selector){.comm = a->match_comm,
                                   .cmdline = a->match_cmdline,
                                   .cgroup = a->match_cgroup,
                                   .other_mntns = a->other_containers};
    /* An empty substring would match every process: a selector that selects nothing out. */
    if (a->match_cgroup && !a->match_cgroup[0])
        return usage_error("watch", "--match-cgroup takes a non-empty string");
    if (a->uid_s) {
        /* (uid_t)-1 is the kernel's "no uid" (setresuid's "unchanged"): no process has it. */
        uint64_t uid;
        if (parse_uint(a->uid_s, UINT32_MAX - 1, &uid) < 0)
            return usage_error("watch", "--uid takes a numeric uid, not '%s'", a->uid_s);
        ret->have_uid = true;
        ret->uid = (uid_t)uid;
    }
    return CLI_GO_ON;
}

/* Signals, the sandbox and reporting for a run that lasts the life of the pod. */
static int setup_watch(struct attach_cli *a)
{
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return attach_cli_setup_watcher(a);
}

static void print_summary(const struct watch_ctx *ctx, size_t tracked, size_t known)
{
    char note[96];
    fprintf(stderr,
            "clrattach: watch: stopped (%u attached, %u failed, %zu instances tracked, "
            "%zu processes known%s%s",
            ctx->attached, ctx->failed, tracked, known,
            attach_cli_suppressed_note(ctx->a, note, sizeof(note)),
            ctx->interrupted ? "; " : ")\n");
    if (ctx->interrupted)
        fprintf(stderr, "%u in flight interrupted)\n", ctx->interrupted);
}

static int run_watch(struct attach_cli *a, const struct watch_selector *sel)
{
    struct watch_ctx ctx = {.a = a};
    size_t tracked = 0, known = 0;
    struct watch_opts wo = {
        .proc_dirfd = a->procfd,
        .sel = *sel,
        /* Each attach runs in a child of its own, which tightens its own seccomp stages
         * (on_stage) as it goes: the watcher stays in the first stage for the next ones. */
        .attach = attach_cli_opts(a),
        .interval_ms = (int64_t)a->interval_ms,
        .pid_poll_ms = a->pid_poll_ms,
        .ready_file = a->ready_file,
        .on_result = on_watch_result,
        .on_warning = on_watch_warning,
        .userdata = &ctx,
        .stop = &stop_requested,
        .ret_tracked = &tracked,
        .ret_known = &known,
    };
    /* --perfmap: each child sends EnablePerfMap instead of attaching. */
    struct perfmap_opts po = {.proc_dirfd = a->procfd,
                              .proc_path = a->co.proc,
                              .enable = true,
                              .type = IPC_PERFMAP_PERFMAP,
                              .timeout_ms = wo.attach.timeout_ms,
                              .on_stage = wo.attach.on_stage,
                              .userdata = wo.attach.userdata};
    if (a->perfmap)
        wo.attach.perfmap = &po;
    /* --otel: each child starts the OpenTelemetry agent, the pod's attributes from the
     * sidecar's own environment (the Downward API, deploy/components/otel). */
    struct otel_opts oo = {.proc_dirfd = a->procfd,
                           .agent = a->otel_agent,
                           .endpoint = a->otel_endpoint,
                           .protocol = a->otel_protocol,
                           .service_name = a->otel_service_name,
                           .resource_attributes = a->otel_resource_attributes,
                           .pod_name = getenv("CLRATTACH_POD_NAME"),
                           .pod_namespace = getenv("CLRATTACH_POD_NAMESPACE"),
                           .container_name = getenv("CLRATTACH_CONTAINER_NAME"),
                           .env = wo.attach.env,
                           .env_count = wo.attach.env_count,
                           .target_dir = a->target_dir,
                           .timeout_ms = wo.attach.timeout_ms,
                           .on_stage = wo.attach.on_stage,
                           .userdata = wo.attach.userdata};
    if (a->otel)
        wo.attach.otel = &oo;
    struct cla_error e = {0};
    fprintf(stderr, "clrattach: watch: scanning every %llu ms\n",
            (unsigned long long)a->interval_ms);
    int r = watch_run(&wo, &e);
    print_summary(&ctx, tracked, known);
    return r < 0 ? fatal("watch", ATTACH_INTERNAL, &e) : 0;
}

int cmd_watch(int argc, char **argv)
{
    struct attach_cli a = ATTACH_CLI_INIT("watch", usage_watch, true);
    struct watch_selector sel;
    int r = attach_cli_parse(argc, argv, &a);
    if (r == CLI_GO_ON && a.listen)
        return listen_cli_run(&a);
    if (r == CLI_GO_ON)
        r = parse_selector(&a, &sel);
    if (r != CLI_GO_ON)
        return r;
    if ((r = setup_watch(&a)) == CLI_GO_ON)
        r = run_watch(&a, &sel);
    attach_cli_release(&a);
    return r;
}
