/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach agent`: the DaemonSet's node agent, attaching on a pod annotation (docs/agent.md);
 * and `clrattach agent --status`, what a running one did per pod. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_cli.h"
#include "base/util.h"
#include "cli.h"
#include "report/agent.h"

#define STATUS_FILE_DEFAULT "/run/clrattach/agent.status"
#define STATUS_READ_MAX     (4 * 1024 * 1024)

static const char usage_agent[] =
    "Usage: clrattach agent --profiles FILE [--node NAME] [options]\n"
    "       clrattach agent --status [--status-file PATH]\n"
    "\n"
    "Node agent for a DaemonSet: follows the pods of its node through the API server and loads\n"
    "into each .NET runtime of a pod annotated clrattach.io/profile=NAME what the profile NAME\n"
    "of FILE says (docs/agent.md). An annotation names a profile and nothing else; an unknown\n"
    "profile, a namespace the profile does not allow or a malformed value gets a Warning Event\n"
    "on the pod and nothing loaded. Each runtime instance is served once (again after a\n"
    "restart), as 'watch' does, as the target's own user.\n"
    "\n"
    "  --profiles FILE        the profiles (JSON, docs/agent.md 'Profiles'): checked at start,\n"
    "                         reloaded when it changes (a bad change keeps the last good one)\n"
    "  --node NAME            this node's name (default: $NODE_NAME, from the downward API\n"
    "                         spec.nodeName)\n"
    "  --status-file PATH     rewritten as things change (default " STATUS_FILE_DEFAULT ")\n"
    "  --status               print a running agent's status file and exit\n"
    "  --check-profiles FILE  check a profiles file as the agent would load it, and exit\n"
    "  --interval MS          longest time between scans of /proc (default 1000)\n"
    "  --timeout SECONDS      each exchange with a runtime (default 30)\n"
    "  --watch-timeout SECONDS  the watch request's timeoutSeconds (default 300); a watch\n"
    "                         silent past it and a tenth more (5 s to 30 s) is restarted\n"
    "  --ready-file PATH      created once the first scan is complete\n"
    "  --settle MS            how long the app is watched after the runtime's answer before\n"
    "                         the result and its Event (default 2000; 'attach --help')\n"
    "  the reporting options (--api-url, --token-file, --ca-file, --pod, --events...) and\n"
    "  -o/--seccomp/--proc: as for 'attach'.\n";

enum {
    OPT_PROFILES = OPT_REPORT_END,
    OPT_NODE,
    OPT_STATUS_FILE,
    OPT_STATUS,
    OPT_CHECK_PROFILES,
    OPT_INTERVAL,
    OPT_TIMEOUT,
    OPT_WATCH_TIMEOUT,
    OPT_READY_FILE,
    OPT_SETTLE,
};

struct agent_cli {
    struct attach_cli a;
    const char *profiles, *node, *status_file, *check_profiles;
    bool status;
    uint64_t watch_timeout_s;
    struct k8s_config cfg;
    unsigned attached, failed;
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int number(const char *opt, const char *arg, uint64_t max, uint64_t *ret)
{
    if (parse_uint(arg, max, ret) < 0 || *ret == 0)
        return usage_error("agent", "%s takes a positive number, not '%s'", opt, arg);
    return CLI_GO_ON;
}

static int agent_option(int c, const char *arg, struct agent_cli *g)
{
    switch (c) {
    case OPT_PROFILES: g->profiles = arg; return CLI_GO_ON;
    case OPT_NODE: g->node = arg; return CLI_GO_ON;
    case OPT_STATUS_FILE: g->status_file = arg; return CLI_GO_ON;
    case OPT_STATUS: g->status = true; return CLI_GO_ON;
    case OPT_CHECK_PROFILES: g->check_profiles = arg; return CLI_GO_ON;
    case OPT_READY_FILE: g->a.ready_file = arg; return CLI_GO_ON;
    case OPT_INTERVAL: return number("--interval", arg, 60000, &g->a.interval_ms);
    case OPT_TIMEOUT: return number("--timeout", arg, 3600, &g->a.timeout_s);
    case OPT_WATCH_TIMEOUT: return number("--watch-timeout", arg, 3600, &g->watch_timeout_s);
    case OPT_SETTLE:
        if (parse_uint(arg, 60000, &g->a.settle_ms) < 0)
            return usage_error("agent", "--settle takes 0..60000 ms, not '%s'", arg);
        return CLI_GO_ON;
    }
    return attach_cli_report_option(c, arg, &g->a);
}

static int parse(int argc, char **argv, struct agent_cli *g)
{
    static const struct option opts[] = {
        {"profiles", required_argument, NULL, OPT_PROFILES},
        {"node", required_argument, NULL, OPT_NODE},
        {"status-file", required_argument, NULL, OPT_STATUS_FILE},
        {"status", no_argument, NULL, OPT_STATUS},
        {"check-profiles", required_argument, NULL, OPT_CHECK_PROFILES},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"watch-timeout", required_argument, NULL, OPT_WATCH_TIMEOUT},
        {"ready-file", required_argument, NULL, OPT_READY_FILE},
        {"settle", required_argument, NULL, OPT_SETTLE},
        ATTACH_CLI_REPORT_OPTIONS,
        ATTACH_CLI_COMMON_OPTIONS,
        {0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_agent, stdout);
            return 0;
        }
        if (c == '?')
            return usage_error("agent", "unknown option");
        int r = agent_option(c, optarg, g);
        if (r != CLI_GO_ON)
            return r;
    }
    if (optind < argc)
        return usage_error("agent", "unexpected argument '%s'", argv[optind]);
    if (g->status || g->check_profiles)
        return CLI_GO_ON;
    if (!g->node)
        g->node = getenv("NODE_NAME");
    if (!g->node || !g->node[0])
        return usage_error("agent", "no node name: set --node or NODE_NAME (the downward "
                                    "API's spec.nodeName)");
    if (!g->profiles)
        return usage_error("agent", "--profiles FILE is required");
    return CLI_GO_ON;
}

/* `--status`: the file a running agent keeps, as it is. */
static int print_status(const struct agent_cli *g)
{
    int fd = open(g->status_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    int r = fd < 0 ? -errno : util_read_all(fd, STATUS_READ_MAX, &buf, &len);
    if (fd >= 0)
        close(fd);
    if (r < 0) {
        struct cla_error e = {0};
        err_setsys(&e, r, "agent: the status file %s", g->status_file);
        err_hint(&e, "is an agent running on this node (clrattach agent), with this "
                     "--status-file?");
        print_error("agent --status", &e);
        return 1;
    }
    fwrite(buf, 1, len, stdout);
    return 0;
}

/* `--check-profiles`: what the agent would say of the file at start. */
static int check_profiles(const char *path)
{
    struct cla_error e = {0};
    int n = agent_profiles_check(path, &e);
    if (n < 0)
        return fatal("usage error", ATTACH_USAGE, &e);
    printf("%s: %d profiles, all checked\n", path, n);
    return 0;
}

static void on_agent_attach(const struct attach_result *r, bool retry,
                            const struct k8s_pod_ref *pod, const struct agent_profile *profile,
                            void *userdata)
{
    struct agent_cli *g = userdata;
    /* What the result, its JSON and its Event name as sent: the profile's, never the pod's. */
    g->a.profiler = profile && profile->profiler ? profile->profiler : "-";
    g->a.clsid = (struct ipc_guid){0};
    if (profile && profile->clsid[0])
        (void)ipc_guid_parse(profile->clsid, &g->a.clsid);
    if (!attach_cli_admit(&g->a, r))
        return;
    say(stderr, "clrattach: agent: pod %s/%s container %s: pid %d (namespace pid %d): %s%s",
        pod ? pod->namespace_ : "?", pod ? pod->name : "?", pod ? pod->container : "?", (int)r->pid,
        (int)r->nspid, attach_outcome_name(r->outcome), retry ? ", will retry" : "");
    if (attach_outcome_ok(r->outcome))
        g->attached++;
    else if (!retry && r->outcome != ATTACH_INTERRUPTED)
        g->failed++;
    /* The Event goes on the pod the process belongs to, from the agent's service account. */
    if (pod)
        g->a.rep.pod = *pod;
    (void)attach_cli_emit_result(&g->a, r, pod && r->outcome != ATTACH_INTERRUPTED);
}

static void on_agent_log(const char *msg, void *userdata)
{
    (void)userdata;
    say(stderr, "clrattach: agent: %s", msg);
}

/* The configuration the follower uses, loaded as the Events' is; then the sandbox. */
static int setup(struct agent_cli *g)
{
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct cla_error e = {0};
    if (k8s_config_load(&g->a.rep.opts, &g->cfg, &e) < 0) {
        err_prefix(&e, "agent: the in-cluster configuration");
        return fatal("usage error", ATTACH_USAGE, &e);
    }
    return attach_cli_setup_watcher(&g->a);
}

static int run(struct agent_cli *g)
{
    struct attach_cli *a = &g->a;
    struct agent_opts o = {
        .cfg = &g->cfg,
        .node = g->node,
        .profiles_path = g->profiles,
        .status_path = g->status_file,
        .watch_timeout_s = (long)g->watch_timeout_s,
        .warnings = a->rep.enabled && !a->rep.dry_run,
        .base = {.proc_dirfd = a->procfd,
                 .attach = attach_cli_opts(a),
                 .interval_ms = (int64_t)a->interval_ms,
                 .ready_file = a->ready_file,
                 .stop = &stop_requested},
        .on_attach = on_agent_attach,
        .on_log = on_agent_log,
        .userdata = g,
    };
    const struct attach_opts *ao = &o.base.attach;
    o.perfmap_base = (struct perfmap_opts){.proc_dirfd = a->procfd,
                                           .proc_path = a->co.proc,
                                           .enable = true,
                                           .type = IPC_PERFMAP_PERFMAP,
                                           .timeout_ms = ao->timeout_ms,
                                           .on_stage = ao->on_stage,
                                           .userdata = ao->userdata};
    o.otel_base = (struct otel_opts){.proc_dirfd = a->procfd,
                                     .target_dir = a->target_dir,
                                     .timeout_ms = ao->timeout_ms,
                                     .on_stage = ao->on_stage,
                                     .userdata = ao->userdata};
    struct cla_error e = {0};
    int r = agent_run(&o, &e);
    fprintf(stderr, "clrattach: agent: stopped (%u attached, %u failed)\n", g->attached, g->failed);
    if (r == -EINVAL)
        return fatal("usage error", ATTACH_USAGE, &e);
    return r < 0 ? fatal("agent", ATTACH_INTERNAL, &e) : 0;
}

int cmd_agent(int argc, char **argv)
{
    struct agent_cli g = {.a = ATTACH_CLI_INIT("agent", usage_agent, true),
                          .status_file = STATUS_FILE_DEFAULT};
    g.a.interval_ms = 1000;
    int r = parse(argc, argv, &g);
    if (r != CLI_GO_ON)
        return r;
    if (g.status)
        return print_status(&g);
    if (g.check_profiles)
        return check_profiles(g.check_profiles);
    if ((r = setup(&g)) == CLI_GO_ON)
        r = run(&g);
    attach_cli_release(&g.a);
    return r;
}
