/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach ps`: the .NET processes reachable from here, one line or one JSON array. */
#include <getopt.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flow/ps.h"
#include "report/result_json.h"
#include "target/target.h"
#include "base/util.h"

static const char usage_ps[] =
    "Usage: clrattach ps [-o text|json] [--no-query] [--timeout SECONDS] [--pid PID]\n"
    "                    [--match-cgroup STR] [--seccomp MODE] [--proc DIR]\n"
    "\n"
    "  --pid PID    only this process; listed even when it runs as another user (no_access,\n"
    "               with its uid and gid: whom to run 'clrattach attach' as)\n"
    "  --match-cgroup STR  only the processes whose /proc/<pid>/cgroup holds STR (a container's\n"
    "               ID), each listed as --pid lists it: one container's processes in a PID\n"
    "               namespace that several share (a pod with shareProcessNamespace)\n"
    "  --no-query   do not ask each runtime for its version (no connection is made)\n"
    "  --timeout S  how long the whole listing waits for the runtimes' answers, all asked at\n"
    "               once (default 2); one that has not answered by then is shown no_answer\n";

/* What `ps` is asked to list. */
struct ps_args {
    bool query;
    uint64_t timeout_s;
    pid_t only;
    const char *cgroup;
};

static int parse_ps(int argc, char **argv, struct common *co, struct ps_args *a)
{
    static const struct option opts[] = {
        {"no-query", no_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"timeout", required_argument, NULL, 'T'},
        {"pid", required_argument, NULL, 'p'},
        {"match-cgroup", required_argument, NULL, 'C'},
        {"seccomp", required_argument, NULL, 'S'},
        {"proc", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    int c, r;
    /* '+': parsing stops at the first word that is not an option, whatever POSIXLY_CORRECT
     * says, so a stray word is reported below instead of being stepped over. */
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': a->query = false; break;
        case 'T':
            /* 0 would fail every exchange at once; never "wait for ever": a runtime is hostile
             * input and must not hold the listing. */
            if (parse_uint(optarg, 3600, &a->timeout_s) < 0 || a->timeout_s == 0)
                return usage_error("ps", "--timeout takes 1..3600 seconds, not '%s'", optarg);
            break;
        case 'p': {
            uint64_t v;
            if (parse_uint(optarg, INT32_MAX, &v) < 0 || v == 0)
                return usage_error("ps", "--pid takes a process id, not '%s'", optarg);
            a->only = (pid_t)v;
            break;
        }
        case 'C':
            /* A container ID is 64 hex digits; a cgroup path part is short too. */
            if (!optarg[0] || strlen(optarg) > 256)
                return usage_error("ps", "--match-cgroup takes 1..256 characters");
            a->cgroup = optarg;
            break;
        case 'h': fputs(usage_ps, stdout); return 0;
        case '?': return usage_error("ps", "unrecognised option");
        default:
            if ((r = parse_common(c, optarg, co, "ps")) != CLI_GO_ON)
                return r;
        }
    }
    if (optind < argc)
        return usage_error("ps", "unexpected argument '%s'", argv[optind]);
    return CLI_GO_ON;
}

static int print_ps(const struct common *co, const struct ps_entry *list, size_t n)
{
    if (co->json) {
        _cleanup_free_ char *js = result_ps_list_json(list, n);
        if (!js)
            return out_of_memory();
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
    /* A paused runtime looks ready in the table: its next step is said once, below it. */
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].state, "paused") == 0)
            say(stderr, "clrattach: ps: pid %d is %s", (int)list[i].pid, list[i].detail);
    return 0;
}

int cmd_ps(int argc, char **argv)
{
    struct common co = COMMON_INIT;
    struct ps_args a = {.query = true, .timeout_s = 2};
    int r = parse_ps(argc, argv, &co, &a);
    if (r != CLI_GO_ON)
        return r;
    /* Our own view of /proc, opened once before the filter: every process is then reached
     * relative to this fd, never through a "/proc/<pid>" path built again for each step. */
    struct cla_error e = {0};
    _cleanup_close_ int procfd = target_open_proc(co.proc, &e);
    if (procfd < 0)
        return fatal("internal error", ATTACH_INTERNAL, &e);
    /* Acting as each process's user and reading its /proc takes these; the listing and the
     * connection then run with only those of them the process itself holds (creds.h). */
    r = enter_sandbox(&co,
                      CAP(CAP_SETUID) | CAP(CAP_SETGID) | CAP(CAP_SYS_PTRACE) |
                          CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH),
                      SANDBOX_STAGE_PS);
    if (r != CLI_GO_ON)
        return r;
    struct ps_entry *list = NULL;
    size_t n = 0;
    /* One deadline for the whole listing: the runtimes are asked at once, and those that have
     * not answered by then are rows of their own (no_answer). A process that cannot be
     * inspected is a row with its state; only a failure to list at all (/proc itself, memory)
     * ends the command, as an internal error. */
    if (ps_scan(procfd, a.only, a.cgroup, a.query, (int64_t)a.timeout_s * 1000, &list, &n, &e) < 0)
        return fatal("ps", ATTACH_INTERNAL, &e);
    r = print_ps(&co, list, n);
    free(list);
    return r;
}
