/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach perfmap enable|disable`: the runtime's perf map on demand, reported once. */
#include <getopt.h>
#include <linux/capability.h>
#include <string.h>

#include "cli.h"
#include "attach_cli.h"
#include "base/util.h"
#include "flow/perfmap.h"
#include "target/target.h"

static const char usage_perfmap[] =
    "Usage: clrattach perfmap enable|disable --pid PID [options]\n"
    "\n"
    "Makes a running .NET 8+ app write (enable) or stop writing (disable) the perf map\n"
    "/tmp/perf-<pid>.map, and/or the jitdump /tmp/jit-<pid>.dump, in its own filesystem view:\n"
    "what perf, bpftrace and eBPF profilers read to name JIT-compiled .NET frames. Nothing is\n"
    "delivered; the result names the map as the app sees it and as this side sees it\n"
    "(/proc/<pid>/root/...). Cost, clean-up and perf across namespaces: docs/perfmap.md.\n"
    "\n"
    "  --pid PID              the process, as this namespace sees it ('clrattach ps')\n"
    "  --kind perfmap|jitdump|all  enable: what the runtime writes (default perfmap: the text\n"
    "                         map perf reads; jitdump also names ReadyToRun code, for perf\n"
    "                         inject; all: both)\n"
    "  --timeout SECONDS      deadline for each exchange with the runtime (default 30)\n"
    "  -o, --output, --seccomp, --proc   as for every command\n"
    "  --events, --dry-run-events, --api-url, --token-file, --ca-file, --namespace, --pod,\n"
    "  --pod-uid, --container, --termination-log   reporting, as for attach\n"
    "\n"
    "Exit codes: 0 enabled or disabled, 4 no such process or not .NET, 5 permission, 7 the\n"
    "runtime refused, 9 protocol error or timeout, 10 done but the required Event failed,\n"
    "15 the runtime is older than .NET 8 (nothing sent), 2 usage error, 1 internal error.\n";

enum { OPT_KIND = OPT_REPORT_END };

static const struct option perfmap_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"kind", required_argument, NULL, OPT_KIND},
    {"timeout", required_argument, NULL, 'T'},
    ATTACH_CLI_REPORT_OPTIONS,
    ATTACH_CLI_COMMON_OPTIONS,
    {0},
};

static int parse_kind(const char *arg, uint32_t *ret)
{
    static const struct {
        const char *name;
        uint32_t type;
    } kinds[] = {
        {"perfmap", IPC_PERFMAP_PERFMAP},
        {"jitdump", IPC_PERFMAP_JITDUMP},
        {"all", IPC_PERFMAP_ALL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        if (strcmp(arg, kinds[i].name) == 0) {
            *ret = kinds[i].type;
            return CLI_GO_ON;
        }
    }
    return usage_error("perfmap", "--kind takes perfmap, jitdump or all, not '%s'", arg);
}

static int parse(int argc, char **argv, struct attach_cli *a, struct perfmap_opts *po)
{
    const char *kind = NULL;
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", perfmap_options, NULL)) != -1) {
        switch (c) {
        case 'p': a->pid_s = optarg; break;
        case OPT_KIND: kind = optarg; break;
        case 'T':
            /* 0 would fail every exchange at once; the runtime must never hold us for ever. */
            if (parse_uint(optarg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
                return usage_error("perfmap", "--timeout takes 1..3600 seconds, not '%s'", optarg);
            break;
        case 'h': fputs(usage_perfmap, stdout); return 0;
        case '?': return usage_error("perfmap", "unrecognised option");
        default:
            if ((r = attach_cli_report_option(c, optarg, a)) != CLI_GO_ON)
                return r;
        }
    }
    if (optind < argc)
        return usage_error("perfmap", "unexpected argument '%s'", argv[optind]);
    if (!a->pid_s)
        return usage_error("perfmap", "--pid is required");
    if (kind && !po->enable)
        return usage_error("perfmap",
                           "--kind goes with enable: disable stops whatever was enabled");
    po->type = IPC_PERFMAP_PERFMAP;
    return kind ? parse_kind(kind, &po->type) : CLI_GO_ON;
}

static int run(const void *opts, struct target *t, struct attach_result *res)
{
    return perfmap_run(opts, t, res);
}

int cmd_perfmap(int argc, char **argv)
{
    struct attach_cli a = ATTACH_CLI_INIT("perfmap", usage_perfmap, false);
    struct perfmap_opts po = {0};
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_perfmap, stdout);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "enable") != 0 && strcmp(argv[1], "disable") != 0))
        return usage_error("perfmap", "say what to do: perfmap enable|disable --pid PID");
    po.enable = strcmp(argv[1], "enable") == 0;
    /* getopt_long sees the action as argv[0]. */
    int r = parse(argc - 1, argv + 1, &a, &po);
    if (r != CLI_GO_ON)
        return r;
    /* The narrowest stage from the start: nothing is created anywhere (sandbox_policy.h). */
    pid_t pid;
    if ((r = attach_cli_begin(&a, SANDBOX_STAGE_QUERY, &pid)) != CLI_GO_ON)
        return r;
    /* Nothing is delivered: chown and fowner have no use (docs/security.md, Capabilities). */
    if (a.co.seccomp != SANDBOX_MODE_OFF)
        (void)sandbox_drop_caps(CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                                    CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH),
                                false, NULL);
    struct attach_opts ao = attach_cli_opts(&a);
    po.proc_dirfd = a.procfd;
    po.proc_path = a.co.proc;
    po.timeout_ms = ao.timeout_ms;
    po.on_stage = ao.on_stage;
    po.userdata = ao.userdata;
    return attach_cli_pin_run(
        &a, pid, po.enable ? ATTACH_KIND_PERFMAP_ENABLE : ATTACH_KIND_PERFMAP_DISABLE, run, &po);
}
