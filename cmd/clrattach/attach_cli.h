/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line of `attach` and `watch`: the options they share, what they set up before any
 * target is touched, and how one result is reported (the lines it prints are output.c's); the
 * pin-then-run the other commands on one target share.
 */
#ifndef CLRATTACH_ATTACH_CLI_H
#define CLRATTACH_ATTACH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/attach.h"
#include "cli.h"
#include "report/event_report.h"
#include "runtime/ipc.h"
#include "target/target.h"

/* The long options of reporting, shared by every command that reports a result (attach, watch,
 * perfmap, startup-hook): their codes, then their rows for a getopt_long table. A command's own
 * long-only codes start at OPT_REPORT_END. */
enum {
    OPT_API_URL = 1001,
    OPT_TOKEN_FILE,
    OPT_CA_FILE,
    OPT_NAMESPACE,
    OPT_POD,
    OPT_POD_UID,
    OPT_CONTAINER,
    OPT_TERMINATION_LOG,
    OPT_REPORT_END,
};

#define ATTACH_CLI_REPORT_OPTIONS                                                                  \
    {"events", required_argument, NULL, 'E'}, {"dry-run-events", no_argument, NULL, 'D'},          \
        {"api-url", required_argument, NULL, OPT_API_URL},                                         \
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},                                   \
        {"ca-file", required_argument, NULL, OPT_CA_FILE},                                         \
        {"namespace", required_argument, NULL, OPT_NAMESPACE},                                     \
        {"pod", required_argument, NULL, OPT_POD},                                                 \
        {"pod-uid", required_argument, NULL, OPT_POD_UID},                                         \
        {"container", required_argument, NULL, OPT_CONTAINER},                                     \
    {                                                                                              \
        "termination-log", required_argument, NULL, OPT_TERMINATION_LOG                            \
    }

/* -o, --seccomp, --proc (parse_common) and --help. */
#define ATTACH_CLI_COMMON_OPTIONS                                                                  \
    {"output", required_argument, NULL, 'o'}, {"seccomp", required_argument, NULL, 'S'},           \
        {"proc", required_argument, NULL, 'P'},                                                    \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

struct attach_cli {
    const char *cmd;
    const char *usage; /* printed for --help */
    bool watch;
    struct common co;
    const char *pid_s, *profiler, *clsid_s, *data_s, *target_dir, *rid, *entry;
    uint64_t timeout_s, attach_timeout_ms, settle_ms;
    bool startup, force_rid, skip_dependency_check, keep, force, show_env;
    uint64_t resume_deadline_s;
    /* --env as given (NAME=VALUE or @FILE), read into `env` by attach_cli_setup */
    const char *env_args[ENV_VARS_MAX];
    size_t env_args_count;
    struct event_reporter rep;
    /* --listen (attach and watch): the runtime connects to us (listen_cli.c) */
    const char *listen, *deliver_dir, *app_dir, *socket_mode_s, *socket_owner_s, *match_entry;
    /* watch only */
    const char *match_comm, *match_cmdline, *uid_s, *ready_file, *match_cgroup;
    bool other_containers;
    bool perfmap; /* --perfmap: EnablePerfMap in every match instead of a profiler */
    /* --otel: the OpenTelemetry agent in every match instead of a profiler (flow/otel.h) */
    bool otel;
    const char *otel_endpoint, *otel_protocol, *otel_service_name, *otel_resource_attributes,
        *otel_agent;
    uint64_t interval_ms;
    int64_t pid_poll_ms; /* watch --pid-poll: 0 default, -1 off */
    /* derived */
    struct ipc_guid clsid;
    uint8_t *data;
    size_t data_len;
    char *env[ENV_VARS_MAX]; /* each "NAME=VALUE", owned */
    size_t env_count;
    int procfd;
};

#define ATTACH_CLI_INIT(name, usage_text, is_watch)                                                \
    {                                                                                              \
        .cmd = (name), .usage = (usage_text), .watch = (is_watch), .co = COMMON_INIT,              \
        .timeout_s = 30, .settle_ms = 2000, .attach_timeout_ms = 5000, .interval_ms = 250,         \
        .resume_deadline_s = 10, .rep = EVENT_REPORTER_INIT, .procfd = -1                          \
    }

/* Takes one reporting option (ATTACH_CLI_REPORT_OPTIONS) or a common one (parse_common). CLI_GO_ON
 * or the exit code of a usage error. */
int attach_cli_report_option(int c, const char *arg, struct attach_cli *a);

/* One --env (NAME=VALUE or @FILE), kept for attach_cli_setup to read and check (at most
 * ENV_VARS_MAX). CLI_GO_ON or the exit code of a usage error. */
int attach_cli_env_option(const char *arg, struct attach_cli *a);

/* Parses and checks the options. CLI_GO_ON or the exit code. */
int attach_cli_parse(int argc, char **argv, struct attach_cli *a);
/* Everything before the first target byte: our own inputs, reporting, /proc, capabilities,
 * then the seccomp filter at `stage`. CLI_GO_ON or the exit code. */
int attach_cli_setup(struct attach_cli *a, enum sandbox_stage stage);
/* A long-running watcher's setup (watch, agent): attach_cli_setup at the FULL stage (it starts a
 * child per attach), then reporting with the Event series cache (event_report_for_watch).
 * CLI_GO_ON or the exit code. */
int attach_cli_setup_watcher(struct attach_cli *a);
/* The stop shared with attach_run() and startup_hook_run() (struct attach_stop), and the
 * SIGTERM, SIGINT, SIGHUP handler that sets it. */
extern struct attach_stop attach_cli_stop;
void attach_cli_catch_stop_signals(void);
/* --target-dir, held to the rules of a target's TMPDIR: CLI_GO_ON or a usage error. */
int attach_cli_check_target_dir(const struct attach_cli *a);
/* --pid, checked: CLI_GO_ON with *ret, or the exit code of a usage error. */
int attach_cli_pid(struct attach_cli *a, pid_t *ret);
/* --pid checked, then attach_cli_setup at `stage`: CLI_GO_ON with *ret_pid, or the exit code
 * (what was set up released). */
int attach_cli_begin(struct attach_cli *a, enum sandbox_stage stage, pid_t *ret_pid);
/* Pins `pid` for one command (attach_pin) and, for an ephemeral container's reporting
 * (rep.from_target), takes the pinned target's service account. CLI_GO_ON with *ret_pinned = t
 * when pinned (the caller closes it), or NULL with *ret the failure's result; else the exit code
 * (required reporting that cannot be done). */
int attach_cli_pin(struct attach_cli *a, pid_t pid, struct target *t, struct target **ret_pinned,
                   struct attach_result *ret);
/* The lib/ options of one attach. */
struct attach_opts attach_cli_opts(struct attach_cli *a);
/* Reports a result's Event (unless !send_event), then prints it and writes the termination
 * log; returns the exit code for it. */
int attach_cli_emit_result(struct attach_cli *a, const struct attach_result *res, bool send_event);

/* watch and listen: may this result be reported at all (its lines, JSON, Event and termination
 * log)? The rate limit of docs/events.md#rate-limit; always true for a one-shot command. */
bool attach_cli_admit(struct attach_cli *a, const struct attach_result *res);

/* How many results the rate limit kept from being reported, for a watcher's summary: ""
 * when none, else "; N results not reported (rate limit)" in buf. */
const char *attach_cli_suppressed_note(const struct attach_cli *a, char *buf, size_t size);
void attach_cli_release(struct attach_cli *a);
/* The steps every command that acts on one pinned target ends with (perfmap, startup-hook):
 * pins `pid` (attach_cli_pin) and runs `run` on it with `opts`, or, when nothing was pinned,
 * keeps the pin's failure as a result of `kind`; drops the capabilities reporting does not need,
 * emits the result (no Event for a run stopped before its request went out), releases `a`.
 * Returns the exit code. */
int attach_cli_pin_run(struct attach_cli *a, pid_t pid, enum attach_kind kind,
                       int (*run)(const void *opts, struct target *t, struct attach_result *res),
                       const void *opts);

/* `attach --listen` / `watch --listen` (listen_cli.c): after attach_cli_parse, the whole run.
 * Returns the exit code. */
int listen_cli_run(struct attach_cli *a);

#endif
