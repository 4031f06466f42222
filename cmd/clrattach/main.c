/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clrattach: parse options, call lib/, print once. The command table below names every
 * command and the file it lives in (cmd_<name>.c, its usage text beside it). The seccomp
 * filter goes on right after a command's options are parsed and our own inputs read, before
 * the first byte of any target is read.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "base/render.h"

static const char usage_main[] =
    "Usage: clrattach [--version] [--help] <command> [options]\n"
    "\n"
    "Load a profiler into a running .NET (CoreCLR) process, across containers.\n"
    "\n"
    "Commands:\n"
    "  ps                list the .NET processes reachable from here\n"
    "  attach            deliver a profiler into a process and attach it\n"
    "  watch             sidecar mode: attach to every matching process, once per instance\n"
    "  agent             node agent (DaemonSet): attach on a pod's clrattach.io/profile\n"
    "  perfmap           make a running app write (or stop) the perf map perf and eBPF\n"
    "                    profilers read (.NET 8+)\n"
    "  startup-hook      deliver a managed assembly and run its StartupHook in a running app\n"
    "                    (.NET 8+)\n"
    "  otel              start (or stop) OpenTelemetry traces and metrics in a running app\n"
    "                    (.NET 10+)\n"
    "  seccomp-profile   print the seccomp profile clrattach runs under (OCI/Kubernetes JSON)\n"
    "  version           this build's version, commit and the components it is built from\n"
    "\n"
    "Common options (after the command):\n"
    "  -o, --output text|json   human text (default) or one JSON object per result on stdout\n"
    "      --seccomp kill|log|off  the in-process seccomp filter (default kill; off is for\n"
    "                           diagnosis only)\n"
    "      --proc DIR           the proc filesystem to scan (default /proc)\n"
    "\n"
    "Run 'clrattach <command> --help' for a command's options. Exit codes: docs/exit-codes.md.\n";

static const struct cli_command commands[] = {
    {"ps", cmd_ps},           {"attach", cmd_attach},
    {"watch", cmd_watch},     {"agent", cmd_agent},
    {"perfmap", cmd_perfmap}, {"startup-hook", cmd_startup_hook},
    {"otel", cmd_otel},       {"seccomp-profile", cmd_seccomp_profile},
    {"version", cmd_version},
};

int main(int argc, char **argv)
{
    cli_scan_for_json(argc, argv);
    if (argc < 2) {
        fputs(usage_main, stderr);
        return usage_error("", "no command given");
    }
    const char *cmd = argv[1];
    cli_set_command(cmd);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    /* The one line scripts compare; `clrattach version` says what the build is made of. */
    if (strcmp(cmd, "--version") == 0) {
        printf("clrattach %s\n", CLRATTACH_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        /* getopt_long sees the command as argv[0]. */
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    char shown_cmd[64];
    render_text(cmd, strlen(cmd), shown_cmd, sizeof(shown_cmd));
    cli_set_command("clrattach");
    return usage_error("", "unknown command '%s'", shown_cmd);
}
