/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach attach`: one profiler into one process, reported once. */
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>

#include "cli.h"
#include "attach_cli.h"
#include "base/util.h"
#include "target/target.h"

static const char usage_attach[] =
    "Usage: clrattach attach --pid PID --profiler PATH --clsid GUID [options]\n"
    "\n"
    "  --pid PID              the process, as this namespace sees it ('clrattach ps')\n"
    "  --profiler PATH        on this side: the profiler's .so; or its directory (the .so with\n"
    "                         the files it needs, delivered whole, names kept); or a bundle\n"
    "                         with one build per runtime identifier (linux-x64/, ...); or a\n"
    "                         home, RID folders beside other files (OpenTelemetry's linux-x64/\n"
    "                         beside net/ and LICENSE), delivered whole; or a NuGet package\n"
    "                         (runtimes/<rid>/native/); or - for a .so or a tar of a directory\n"
    "                         on stdin. The build that fits the target goes into its own\n"
    "                         filesystem view under a content-addressed name\n"
    "  --entry NAME           the profiler library in a directory, by its relative path (./\n"
    "                         allowed) or a name (default: the only one that exports\n"
    "                         DllGetClassObject; in a home, the target's RID folder's)\n"
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
    "  --force                send a profiler known to do nothing when attached (OpenTelemetry,\n"
    "                         Datadog, Pyroscope: docs/bundles.md) instead of refusing it; the\n"
    "                         result says it is expected to stay inert\n"
    "  --target-dir DIR       directory in the target's view for the profiler (default: its\n"
    "                         TMPDIR)\n"
    "  --timeout SECONDS      deadline for each exchange with the runtime (default 30)\n"
    "  --attach-timeout MS    sent to the runtime: how long it may wait for a background GC\n"
    "                         when the profiler asks for GC events (default 5000)\n"
    "  --startup              if the runtime is suspended at startup, load the profiler as a\n"
    "                         startup profiler (StartupProfiler) and resume the runtime (no\n"
    "                         --client-data: that command carries none); the result is\n"
    "                         loaded_at_startup once the profiler shows in the app's maps,\n"
    "                         else startup_load_failed (exit 7)\n"
    "  --env NAME=VALUE|@FILE set a variable in the runtime's environment "
    "(SetEnvironmentVariable)\n"
    "                         before StartupProfiler; repeatable, @FILE one per line ('#'\n"
    "                         comments); {dir} and {entry} as for --client-data; up to 32 of\n"
    "                         4096 bytes. Needs --startup on a paused app; --force sets them in a\n"
    "                         running app too. The result names them; --show-env adds values\n"
    "  --resume-deadline SECONDS  a runtime paused at startup is resumed within this, whatever\n"
    "                         fails (default 10)\n"
    "  --listen PATH          instead of --pid: listen on a Unix socket at PATH and serve the\n"
    "                         first runtime that connects (the app started with\n"
    "                         DOTNET_DiagnosticPorts=<PATH as the app sees it>); needs\n"
    "                         --deliver-dir (docs/sidecar.md, 'Listen mode')\n"
    "  --deliver-dir DIR      --listen: the directory shared with the app, as clrattach sees it\n"
    "  --app-dir DIR          --listen: the same directory as the app sees it (default: DIR)\n"
    "  --socket-mode OCTAL    --listen: the socket's mode (default 0600: our uid only; 0660\n"
    "                         for a group both containers share, e.g. fsGroup)\n"
    "  --socket-owner UID[:GID]  --listen: chown the socket (needs CAP_CHOWN)\n"
    "  --match-entry NAME     --listen: only a runtime whose entry assembly is NAME\n"
    "                         (--match-cmdline STR: a substring of its command line)\n"
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
    "SIGTERM, SIGINT or SIGHUP during delivery removes what was delivered and ends the attach as\n"
    "interrupted (exit 11); once AttachProfiler is sent, the attach runs to its end. With\n"
    "--startup a paused runtime is resumed on every way out (not after SIGKILL: then it stays\n"
    "paused until another clrattach --startup resumes it).\n"
    "\n"
    "Exit codes: 0 attached or loaded at startup, 3 a profiler is already active, 4 no such\n"
    "process or not .NET, 5 permission, 6 delivery failed, 7 the runtime could not load the\n"
    "profiler (at startup too), 8 runtime not ready (or --env for a runtime that runs), 9\n"
    "protocol error or timeout, 10 attached but the required Event failed, 11 interrupted, 12 the\n"
    "app died after the answer, 13 a library the profiler needs is missing, 2 usage error, 1\n"
    "internal error.\n";

/* Pins the process and attaches. *ret is the result in every case. */
static int pin_and_attach(struct attach_cli *a, pid_t pid, struct attach_result *ret)
{
    struct attach_opts ao = attach_cli_opts(a);
    ao.stop = &attach_cli_stop;
    struct target t;
    _cleanup_(target_closep) struct target *pinned = NULL;
    int r = attach_cli_pin(a, pid, &t, &pinned, ret);
    if (r == CLI_GO_ON && pinned)
        attach_run(&ao, pinned, ret);
    return r;
}

int cmd_attach(int argc, char **argv)
{
    struct attach_cli a = ATTACH_CLI_INIT("attach", usage_attach, false);
    int r = attach_cli_parse(argc, argv, &a);
    if (r != CLI_GO_ON)
        return r;
    if (a.listen)
        return listen_cli_run(&a);
    pid_t pid;
    if ((r = attach_cli_pid(&a, &pid)) != CLI_GO_ON)
        return r;
    struct attach_result res;
    attach_cli_catch_stop_signals();
    if ((r = attach_cli_setup(&a, SANDBOX_STAGE_ATTACH)) == CLI_GO_ON)
        r = pin_and_attach(&a, pid, &res);
    if (r != CLI_GO_ON) {
        attach_cli_release(&a);
        return r;
    }
    /* The target is behind us: reading service-account files is all that is left, so only
     * the two capabilities that reading needs stay (docs/security.md, Capabilities). With
     * --seccomp off no part of the sandbox applies, as in enter_sandbox(). */
    if (a.co.seccomp != SANDBOX_MODE_OFF)
        (void)sandbox_drop_caps(CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH), false, NULL);
    /* An attach stopped before its request went out sends no Event: nothing happened to the app
     * that its owners need to hear of. */
    int code = attach_cli_emit_result(&a, &res, res.outcome != ATTACH_INTERRUPTED);
    attach_cli_release(&a);
    return code;
}
