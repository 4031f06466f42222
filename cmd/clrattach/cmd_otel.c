/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach otel`: OpenTelemetry started (or stopped) in a running app, with no restart. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "attach_cli.h"
#include "base/util.h"
#include "flow/otel.h"
#include "profset/otel_status.h"
#include "target/target.h"

static const char usage_otel[] =
    "Usage: clrattach otel --pid PID --endpoint URL [options]\n"
    "       clrattach otel --stop --pid PID\n"
    "\n"
    "Starts OpenTelemetry tracing and metrics in a running .NET 10+ app, with no restart: the\n"
    "agent clrattach ships (a startup hook with the OpenTelemetry SDK in a load context of its\n"
    "own) is delivered into the app's view as its user, its settings are set in the app with\n"
    "SetEnvironmentVariable, and the runtime runs it (ApplyStartupHook). What started is read\n"
    "back from the agent's status file. --stop flushes and shuts its providers down; a later\n"
    "otel starts them again. docs/otel.md.\n"
    "\n"
    "  --pid PID                    the process, as this namespace sees it ('clrattach ps')\n"
    "  --endpoint URL               the OTLP collector: http:// or https:// (required to start)\n"
    "  --protocol http/protobuf|grpc  the OTLP transport (default http/protobuf)\n"
    "  --service-name NAME          service.name (default: the app's entry assembly's name)\n"
    "  --resource-attributes K=V,...  more resource attributes; k8s.pod.name,\n"
    "                               k8s.namespace.name and k8s.container.name come from\n"
    "                               CLRATTACH_POD_NAME, CLRATTACH_POD_NAMESPACE and\n"
    "                               CLRATTACH_CONTAINER_NAME when set\n"
    "  --env NAME=VALUE|@FILE       any other OTEL_* setting, set after the agent's own\n"
    "  --agent DIR                  the agent's directory on this side (default\n"
    "                               $CLRATTACH_OTEL_AGENT, else /otel-agent)\n"
    "  --force                      start beside an OpenTelemetry SDK of the app's own\n"
    "  --stop                       stop the agent in the app\n"
    "  --target-dir DIR             directory in the target's view (default: its TMPDIR)\n"
    "  --timeout SECONDS            deadline for each exchange with the runtime (default 30)\n"
    "  -o, --output, --seccomp, --proc   as for every command\n"
    "  --events, --dry-run-events, --api-url, --token-file, --ca-file, --namespace, --pod,\n"
    "  --pod-uid, --container, --termination-log   reporting, as for attach\n"
    "\n"
    "Exit codes: 0 started (or stopped), 2 usage error (no or a bad --endpoint), 3 the agent\n"
    "already runs there (--stop first), 4 no such process or not .NET, 5 permission, 6\n"
    "delivery failed, 7 the agent refused or failed to start (its reason is named), or nothing\n"
    "to stop, 9 protocol error or timeout, 10 done but the required Event failed, 11\n"
    "interrupted, 12 the app died, 14 the app runs an OpenTelemetry SDK of its own (--force),\n"
    "15 the runtime is older than .NET 10 (nothing delivered), 1 internal error.\n";

enum {
    OPT_ENDPOINT = OPT_REPORT_END,
    OPT_PROTOCOL,
    OPT_SERVICE_NAME,
    OPT_RESOURCE_ATTRIBUTES,
    OPT_ENV,
    OPT_AGENT,
    OPT_FORCE,
    OPT_STOP,
    OPT_TARGET_DIR,
};

static const struct option otel_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"endpoint", required_argument, NULL, OPT_ENDPOINT},
    {"protocol", required_argument, NULL, OPT_PROTOCOL},
    {"service-name", required_argument, NULL, OPT_SERVICE_NAME},
    {"resource-attributes", required_argument, NULL, OPT_RESOURCE_ATTRIBUTES},
    {"env", required_argument, NULL, OPT_ENV},
    {"agent", required_argument, NULL, OPT_AGENT},
    {"force", no_argument, NULL, OPT_FORCE},
    {"stop", no_argument, NULL, OPT_STOP},
    {"target-dir", required_argument, NULL, OPT_TARGET_DIR},
    {"timeout", required_argument, NULL, 'T'},
    ATTACH_CLI_REPORT_OPTIONS,
    ATTACH_CLI_COMMON_OPTIONS,
    {0},
};

static int parse_one(int c, struct attach_cli *a, struct otel_opts *o)
{
    switch (c) {
    case 'p': a->pid_s = optarg; break;
    case OPT_ENDPOINT: o->endpoint = optarg; break;
    case OPT_PROTOCOL: o->protocol = optarg; break;
    case OPT_SERVICE_NAME: o->service_name = optarg; break;
    case OPT_RESOURCE_ATTRIBUTES: o->resource_attributes = optarg; break;
    case OPT_AGENT: a->profiler = optarg; break;
    case OPT_FORCE: o->force = true; break;
    case OPT_STOP: o->stop = true; break;
    case OPT_TARGET_DIR: a->target_dir = optarg; break;
    case OPT_ENV: return attach_cli_env_option(optarg, a);
    case 'T':
        if (parse_uint(optarg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
            return usage_error(a->cmd, "--timeout takes 1..3600 seconds, not '%s'", optarg);
        break;
    case '?': return usage_error(a->cmd, "unrecognised option");
    default: return attach_cli_report_option(c, optarg, a);
    }
    return CLI_GO_ON;
}

/* The settings checked before the target is touched: a usage error is found here. */
static int check(struct attach_cli *a, struct otel_opts *o)
{
    struct cla_error e = {0};
    if (!a->pid_s)
        return usage_error(a->cmd, "--pid is required");
    if (o->stop && (o->endpoint || o->protocol || o->service_name || o->resource_attributes ||
                    o->force || a->env_args_count))
        return usage_error(a->cmd, "--stop takes no settings: it stops what runs");
    if (!o->stop && !o->endpoint)
        return usage_error(a->cmd, "--endpoint is required: the OTLP collector, such as "
                                   "http://otel-collector.observability:4318");
    if (!o->stop && (otel_endpoint_check(o->endpoint, &e) < 0 ||
                     (o->protocol && otel_protocol_check(o->protocol, &e) < 0) ||
                     otel_attributes_check(o->resource_attributes, &e) < 0))
        return usage_error(a->cmd, "%s%s%s", e.msg, e.hint[0] ? "; e.g. " : "", e.hint);
    if (!a->profiler) {
        const char *env = getenv("CLRATTACH_OTEL_AGENT");
        a->profiler = env && env[0] ? env : "/otel-agent";
    }
    return attach_cli_check_target_dir(a);
}

static int parse(int argc, char **argv, struct attach_cli *a, struct otel_opts *o)
{
    int c, r;
    while ((c = getopt_long(argc, argv, "+o:h", otel_options, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_otel, stdout);
            return 0;
        }
        if ((r = parse_one(c, a, o)) != CLI_GO_ON)
            return r;
    }
    if (optind < argc)
        return usage_error(a->cmd, "unexpected argument '%s'", argv[optind]);
    return check(a, o);
}

static int run(const void *opts, struct target *t, struct attach_result *res)
{
    return otel_run(opts, t, res);
}

/* The pod's attributes, from the variables the Downward API sets (deploy/). */
static const char *pod_env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

int cmd_otel(int argc, char **argv)
{
    struct attach_cli a = ATTACH_CLI_INIT("otel", usage_otel, false);
    struct otel_opts o = {0};
    int r = parse(argc, argv, &a, &o);
    if (r != CLI_GO_ON)
        return r;
    pid_t pid;
    attach_cli_catch_stop_signals();
    if ((r = attach_cli_begin(&a, SANDBOX_STAGE_ATTACH, &pid)) != CLI_GO_ON)
        return r;
    struct attach_opts ao = attach_cli_opts(&a);
    o.proc_dirfd = a.procfd;
    o.agent = a.profiler;
    o.pod_name = pod_env("CLRATTACH_POD_NAME");
    o.pod_namespace = pod_env("CLRATTACH_POD_NAMESPACE");
    o.container_name = pod_env("CLRATTACH_CONTAINER_NAME");
    o.env = ao.env;
    o.env_count = ao.env_count;
    o.target_dir = a.target_dir;
    o.timeout_ms = ao.timeout_ms;
    o.on_stage = ao.on_stage;
    o.userdata = ao.userdata;
    o.stop_signal = &attach_cli_stop;
    return attach_cli_pin_run(&a, pid, o.stop ? ATTACH_KIND_OTEL_STOP : ATTACH_KIND_OTEL_START, run,
                              &o);
}
