/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach startup-hook`: a managed assembly into a running app, its StartupHook run once. */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "attach_cli.h"
#include "base/util.h"
#include "flow/startup_hook.h"
#include "target/target.h"

static const char usage_startup_hook[] =
    "Usage: clrattach startup-hook --pid PID --assembly PATH|DIR [options]\n"
    "\n"
    "Delivers a managed assembly into a running .NET 8+ app's filesystem view, the way attach\n"
    "delivers a profiler, then has the runtime load it and run its StartupHook.Initialize() at\n"
    "once (ApplyStartupHook): a managed payload without a native profiler and without a restart.\n"
    "\n"
    "  --pid PID              the process, as this namespace sees it ('clrattach ps')\n"
    "  --assembly PATH|DIR    on this side: the hook's .dll (a class library with\n"
    "                         'internal class StartupHook { public static void Initialize() }'\n"
    "                         in no namespace), or its directory with the files it needs,\n"
    "                         delivered whole, names kept\n"
    "  --entry NAME           the hook's file in a directory (default: the only .NET assembly)\n"
    "  --target-dir DIR       directory in the target's view (default: its TMPDIR)\n"
    "  --keep                 keep what was delivered when the runtime refused the hook\n"
    "                         (default: removed)\n"
    "  --env NAME=VALUE|@FILE set in the runtime's environment (SetEnvironmentVariable) before\n"
    "                         the hook runs, as attach's --env; {dir} is the directory the\n"
    "                         hook was delivered to, {entry} the hook, as the app sees them\n"
    "  --force                send a hook known to be for process start only (OpenTelemetry's\n"
    "                         StartupHook: it runs the app again, then ends it)\n"
    "  --again                send a hook the app has loaded already: its Initialize runs a\n"
    "                         second time\n"
    "  --timeout SECONDS      deadline for each exchange with the runtime, Initialize included\n"
    "                         (default 30)\n"
    "  -o, --output, --seccomp, --proc   as for every command\n"
    "  --events, --dry-run-events, --api-url, --token-file, --ca-file, --namespace, --pod,\n"
    "  --pod-uid, --container, --termination-log   reporting, as for attach\n"
    "\n"
    "SIGTERM, SIGINT or SIGHUP during delivery removes what was delivered and ends the run as\n"
    "interrupted (exit 11); once ApplyStartupHook is sent, the run goes to its end.\n"
    "A hook runs once per call, on the runtime's diagnostics thread; it stays loaded for the\n"
    "app's life (an assembly cannot be unloaded from the default context).\n"
    "Before anything is delivered, every assembly the hook references must be delivered with it\n"
    "(--assembly DIR) or be in the app's shared framework or its own directory.\n"
    "\n"
    "Exit codes: 0 the hook ran, 3 the app has it loaded already (--again), 4 no such process\n"
    "or not .NET, 5 permission, 6 delivery failed, 7 the runtime refused the hook, 9 protocol\n"
    "error or timeout, 10 done but the required Event failed, 11 interrupted, 12 the app died\n"
    "under the hook, 13 a referenced assembly is missing, 14 a hook for process start only\n"
    "(--force), 15 the runtime is older than .NET 8 (nothing delivered), 2 usage error (also:\n"
    "a missing file, not a .NET assembly, no StartupHook type or no static void Initialize()),\n"
    "1 internal error.\n";

enum {
    OPT_ASSEMBLY = OPT_REPORT_END,
    OPT_ENTRY,
    OPT_TARGET_DIR,
    OPT_KEEP,
    OPT_ENV,
    OPT_FORCE,
    OPT_AGAIN
};

static const struct option hook_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"assembly", required_argument, NULL, OPT_ASSEMBLY},
    {"entry", required_argument, NULL, OPT_ENTRY},
    {"target-dir", required_argument, NULL, OPT_TARGET_DIR},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"env", required_argument, NULL, OPT_ENV},
    {"force", no_argument, NULL, OPT_FORCE},
    {"again", no_argument, NULL, OPT_AGAIN},
    {"timeout", required_argument, NULL, 'T'},
    ATTACH_CLI_REPORT_OPTIONS,
    ATTACH_CLI_COMMON_OPTIONS,
    {0},
};

static int parse(int argc, char **argv, struct attach_cli *a, bool *again)
{
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", hook_options, NULL)) != -1) {
        switch (c) {
        case 'p': a->pid_s = optarg; break;
        case OPT_ASSEMBLY: a->profiler = optarg; break;
        case OPT_ENTRY: a->entry = optarg; break;
        case OPT_TARGET_DIR: a->target_dir = optarg; break;
        case OPT_KEEP: a->keep = true; break;
        case OPT_FORCE: a->force = true; break;
        case OPT_AGAIN: *again = true; break;
        case OPT_ENV:
            if ((r = attach_cli_env_option(optarg, a)) != CLI_GO_ON)
                return r;
            break;
        case 'T':
            if (parse_uint(optarg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
                return usage_error(a->cmd, "--timeout takes 1..3600 seconds, not '%s'", optarg);
            break;
        case 'h': fputs(usage_startup_hook, stdout); return 0;
        case '?': return usage_error(a->cmd, "unrecognised option");
        default:
            if ((r = attach_cli_report_option(c, optarg, a)) != CLI_GO_ON)
                return r;
        }
    }
    if (optind < argc)
        return usage_error(a->cmd, "unexpected argument '%s'", argv[optind]);
    if (!a->pid_s || !a->profiler)
        return usage_error(a->cmd, "--pid and --assembly are required");
    return attach_cli_check_target_dir(a);
}

static int run(const void *opts, struct target *t, struct attach_result *res)
{
    return startup_hook_run(opts, t, res);
}

int cmd_startup_hook(int argc, char **argv)
{
    struct attach_cli a = ATTACH_CLI_INIT("startup-hook", usage_startup_hook, false);
    bool again = false;
    int r = parse(argc, argv, &a, &again);
    if (r != CLI_GO_ON)
        return r;
    /* Delivery creates files: the attach's stages (ATTACH, DELIVERED, REPORT). */
    pid_t pid;
    attach_cli_catch_stop_signals();
    if ((r = attach_cli_begin(&a, SANDBOX_STAGE_ATTACH, &pid)) != CLI_GO_ON)
        return r;
    struct attach_opts ao = attach_cli_opts(&a);
    struct startup_hook_opts ho = {
        .proc_dirfd = a.procfd,
        .assembly = a.profiler,
        .entry = a.entry,
        .target_dir = a.target_dir,
        .keep = a.keep,
        .force = a.force,
        .again = again,
        .env = ao.env,
        .env_count = ao.env_count,
        .timeout_ms = ao.timeout_ms,
        .on_stage = ao.on_stage,
        .userdata = ao.userdata,
        .stop = &attach_cli_stop,
    };
    return attach_cli_pin_run(&a, pid, ATTACH_KIND_STARTUP_HOOK, run, &ho);
}
