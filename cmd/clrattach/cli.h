/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the command files share: printing (output.c), the options every command takes
 * (options.c), and the command table's entry points (one cmd_*.c each). The command line that
 * `attach` and `watch` share is attach_cli.h.
 *
 * One return convention throughout cmd/: a step returns CLI_GO_ON to let the command go on,
 * or the exit code to leave with (0 included: --help ends a command successfully).
 */
#ifndef CLRATTACH_CLI_H
#define CLRATTACH_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "flow/attach.h"
#include "base/err.h"
#include "sandbox/sandbox.h"

#define CLI_GO_ON -1

#define EXIT_USAGE          2
#define EXIT_EVENT_REQUIRED 10

#define CAP(c) (1ULL << (c))

/* A command: its name on the command line and its entry point, which sees the command as
 * argv[0] and returns the exit code. */
struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
};

int cmd_ps(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_perfmap(int argc, char **argv);
int cmd_startup_hook(int argc, char **argv);
int cmd_otel(int argc, char **argv);
int cmd_seccomp_profile(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* output.c */

/* Set before any option is parsed when `-o json` is anywhere on the command line: a usage
 * error found before (or while) parsing is then also one JSON document on stdout. */
void cli_scan_for_json(int argc, char **argv);
/* The command being run, for the JSON document of an error that ends it early. */
void cli_set_command(const char *cmd);

/* Prints one line through the renderer (render.h); the newline is added. */
void say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "clrattach: <what>: <message>" and the hint, on stderr. */
void print_error(const char *what, const struct cla_error *e);
/* A usage error: message and hint on stderr (and JSON with -o json). Returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends a command before any result: the message on stderr and, with -o json, the one JSON
 * document every outcome has. Returns the outcome's exit code. */
int fatal(const char *what, enum attach_outcome o, const struct cla_error *e);
/* The warning for an out-of-memory end, and its exit code. */
int out_of_memory(void);

struct event_reporter;
struct event_report_sent;

/* One attach result: with `json` the document `js` on stdout (nothing when it is NULL) and a
 * failure's message and next step on stderr; else the result as text. stdout is flushed. */
void print_attach_result(const struct attach_result *r, const char *js, bool json);
/* What happened to the Event (`r` and `e` from event_report_send), on stderr; a dry run's
 * Event on stdout. Nothing when no Event was due. */
void print_report(const struct event_reporter *rep, const struct event_report_sent *s, int r,
                  const struct cla_error *e);

/* options.c */

/* -o, --seccomp and --proc, which every command but seccomp-profile takes. */
struct common {
    bool json;
    enum sandbox_mode seccomp;
    const char *proc;
};

#define COMMON_INIT                                                                                \
    {                                                                                              \
        .seccomp = SANDBOX_MODE_KILL, .proc = "/proc"                                              \
    }

/* Takes one of the common options (getopt's `c` and `arg`); CLI_GO_ON or a usage error. */
int parse_common(int c, const char *arg, struct common *co, const char *cmd);
/* A number 0..max, all digits; < 0 otherwise. */
int parse_uint(const char *s, uint64_t max, uint64_t *ret);
/* Drops every capability but `keep`, then enters the sandbox at `stage`. CLI_GO_ON or the
 * exit code of the failure. */
int enter_sandbox(const struct common *co, uint64_t keep, enum sandbox_stage stage);

#endif
