/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Everything cmd/ prints goes through here, so that every line is rendered (render.h) and every
 * early end still gives the one JSON document that -o json promises.
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "base/render.h"
#include "report/event_report.h"
#include "report/result_json.h"
#include "base/util.h"

static bool json_wanted;
static const char *json_cmd = "clrattach";

void cli_scan_for_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return;
        if (strcmp(a, "-ojson") == 0 || strcmp(a, "--output=json") == 0 ||
            ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc &&
             strcmp(argv[i + 1], "json") == 0))
            json_wanted = true;
    }
}

void cli_set_command(const char *cmd)
{
    json_cmd = cmd;
}

/*
 * Every result and error line passes through the renderer as the last line of defence: a
 * target string that a call site forgot to render still cannot reach the terminal or a log raw,
 * while our own text, text that is already rendered, and our own UTF-8 ('…', '→') come out
 * unchanged.
 */
void say(FILE *f, const char *fmt, ...)
{
    char line[4096], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    render_message(line, strnlen(line, sizeof(line)), shown, sizeof(shown));
    fprintf(f, "%s\n", shown);
}

void print_error(const char *what, const struct cla_error *e)
{
    say(stderr, "clrattach: %s: %s", what, e->msg[0] ? e->msg : "failed");
    if (e->hint[0])
        say(stderr, "clrattach: next step: %s", e->hint);
}

static void print_error_json(const char *cmd, enum attach_outcome o, const char *msg,
                             const char *hint)
{
    if (!json_wanted)
        return;
    _cleanup_free_ char *js = result_error_json(cmd, o, msg, hint);
    if (js)
        printf("%s\n", js);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024], hint[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(hint, sizeof(hint), "see 'clrattach %s%s--help'", cmd, cmd[0] ? " " : "");
    say(stderr, "clrattach: usage error: %s", msg);
    say(stderr, "clrattach: next step: %s", hint);
    print_error_json(cmd[0] ? cmd : json_cmd, ATTACH_USAGE, msg, hint);
    return EXIT_USAGE;
}

int fatal(const char *what, enum attach_outcome o, const struct cla_error *e)
{
    print_error(what, e);
    print_error_json(json_cmd, o, e->msg[0] ? e->msg : "failed", e->hint);
    return attach_outcome_exit_code(o);
}

int out_of_memory(void)
{
    fputs("clrattach: internal error: out of memory\n", stderr);
    return 1;
}

/* The --env variables and the resume owed to a paused runtime, for success and failure alike. */
static void print_startup_lines(FILE *f, const struct attach_result *r)
{
    char line[1024] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < r->env_count && i < ENV_VARS_MAX && len + 1 < sizeof(line); i++) {
        snprintf(line + len, sizeof(line) - len, "%s%s", i ? ", " : "", r->env[i]);
        len = strlen(line);
    }
    if (r->env_count)
        say(f, "%senv:      %s (%u of %u set)", f == stderr ? "clrattach: " : "  ", line,
            (unsigned)r->env_sent, (unsigned)r->env_count);
    if (r->vendor_env[0])
        say(f, "%svendor:   %s: the vendor's own startup settings, added to --env",
            f == stderr ? "clrattach: " : "  ", r->vendor_env);
    if (!r->resume_owed)
        return;
    if (r->resumed)
        say(f, "%sresumed:  yes, %lld ms after the attach began",
            f == stderr ? "clrattach: " : "  ", (long long)r->resumed_after_ms);
    else
        say(f, "%sresumed:  NO: ResumeRuntime failed, the app may still be paused at startup",
            f == stderr ? "clrattach: " : "  ");
}

/* A runtime-written file of a perfmap result: in the app's view, and from here. */
static void print_perfmap_file(const char *label, const struct attach_result *r, const char *path,
                               bool with_size)
{
    if (!path[0])
        return;
    if (with_size && r->perfmap_size >= 0)
        say(stdout, "  %-9s %s (in the target's view; %lld bytes now)", label, path,
            (long long)r->perfmap_size);
    else
        say(stdout, "  %-9s %s (in the target's view)", label, path);
    say(stdout, "  from here: %s%s", r->node_root, path);
}

/* "WHAT: pid 4242 (namespace pid 1, uid 1000)". A runtime that connected to --listen advertised
 * its namespace pid; with no pid in clrattach's PID namespace there is no other to give. */
static void print_who(const char *what, const struct attach_result *r)
{
    if (r->listen && r->pid <= 0)
        say(stdout, "%s: namespace pid %d (advertised by the runtime, uid %u)", what, (int)r->nspid,
            (unsigned)r->uid);
    else if (r->listen)
        say(stdout, "%s: pid %d (namespace pid %d, advertised by the runtime, uid %u)", what,
            (int)r->pid, (int)r->nspid, (unsigned)r->uid);
    else
        say(stdout, "%s: pid %d (namespace pid %d, uid %u)", what, (int)r->pid, (int)r->nspid,
            (unsigned)r->uid);
}

/* An otel success: what started, where it exports; or what stopped. */
static void print_otel_text(const struct attach_result *r)
{
    const struct otel_status *st = &r->otel;
    bool stop = r->kind == ATTACH_KIND_OTEL_STOP;
    print_who(stop ? "OpenTelemetry stopped" : "OpenTelemetry started", r);
    if (r->runtime_rid[0])
        say(stdout, "  runtime:  %s %s", r->runtime_version, r->runtime_rid);
    if (!stop) {
        say(stdout, "  service:  %s", st->service_name);
        say(stdout, "  traces:   %s", st->traces[0] ? st->traces : "none");
        say(stdout, "  metrics:  %s", st->metrics[0] ? st->metrics : "none");
        say(stdout, "  exporter: %s %s to %s", st->exporter, st->protocol, st->endpoint);
        if (st->state == OTEL_STATE_STARTING)
            say(stdout,
                "  note:     still starting after 5 s; its status (%s) is rewritten when "
                "it is done",
                r->otel_status_path);
    } else {
        if (st->flushed >= 0)
            say(stdout, "  flushed:  %s", st->flushed ? "yes" : "no, within 3 s");
        if (st->reason[0])
            say(stdout, "  note:     %s", st->reason);
    }
    say(stdout, "  agent:    %s (in the target's view%s)", r->delivered_dir,
        r->reused ? ", reused" : "");
    say(stdout, "  status:   %s", r->otel_status_path);
    say(stdout, "  took:     %lld ms", (long long)r->duration_ms);
}

/* A perfmap or startup-hook success. */
static void print_other_text(const struct attach_result *r)
{
    if (r->kind == ATTACH_KIND_OTEL_START || r->kind == ATTACH_KIND_OTEL_STOP) {
        print_otel_text(r);
        return;
    }
    print_who(r->outcome == ATTACH_PERFMAP_ENABLED    ? "perf map enabled"
              : r->outcome == ATTACH_PERFMAP_DISABLED ? "perf map disabled"
                                                      : "startup hook applied",
              r);
    if (r->runtime_rid[0])
        say(stdout, "  runtime:  %s %s", r->runtime_version, r->runtime_rid);
    if (r->kind == ATTACH_KIND_STARTUP_HOOK) {
        say(stdout, "  assembly: %s (in the target's view%s)", r->delivered_path,
            r->reused ? ", reused" : "");
        if (r->delivered_dir[0])
            say(stdout, "  with:     the files of its directory, in %s", r->delivered_dir);
        say(stdout, "  sha256:   %s", r->sha256);
        if (r->dependency_note[0])
            say(stdout, "  deps:     %s", r->dependency_note);
        print_startup_lines(stdout, r);
    } else {
        print_perfmap_file("perf map:", r, r->perfmap_path, r->kind == ATTACH_KIND_PERFMAP_ENABLE);
        print_perfmap_file("jitdump:", r, r->jitdump_path, false);
    }
    say(stdout, "  took:     %lld ms", (long long)r->duration_ms);
}

static void print_attach_text(const struct attach_result *r)
{
    if (attach_outcome_ok(r->outcome) && r->kind != ATTACH_KIND_PROFILER) {
        print_other_text(r);
        return;
    }
    if (attach_outcome_loaded(r->outcome)) {
        print_who(r->outcome == ATTACH_STARTUP_LOADED ? "loaded at startup" : "attached", r);
        if (r->runtime_rid[0])
            say(stdout, "  runtime:  %s %s", r->runtime_version, r->runtime_rid);
        say(stdout, "  profiler: %s (in the target's view%s)", r->delivered_path,
            r->reused ? ", reused" : "");
        if (r->loader_path[0])
            say(stdout,
                "  loader:   %s (the env loader: the runtime loads it, it sets --env in "
                "the C library's environment, then loads the profiler)",
                r->loader_path);
        if (result_delivered_home(r))
            say(stdout, "  with:     the whole home (its %s/ folder's library the entry), in %s",
                r->variant, r->delivered_dir);
        else if (r->delivered_dir[0])
            say(stdout, "  with:     the files of its directory, in %s", r->delivered_dir);
        say(stdout, "  sha256:   %s", r->sha256);
        say(stdout,
            "  took:     %lld ms: the runtime answered in %lld ms, then the app was watched %lld "
            "ms",
            (long long)r->duration_ms, (long long)r->answer_ms, (long long)r->settle_wait_ms);
        if (r->outcome == ATTACH_OK)
            say(stdout, "  mapped:   %s",
                r->mapped ? "yes, after the settle time"
                          : "no: not in the app's maps after the settle "
                            "time; the runtime unloaded it (a profiler "
                            "that asks to detach is unloaded once its "
                            "threads leave it)");
        if (r->dependency_note[0])
            say(stdout, "  deps:     %s", r->dependency_note);
        if (r->verify_note[0])
            say(stdout, "  verified: %s", r->verify_note);
        print_startup_lines(stdout, r);
        if (r->expected_inert)
            say(stdout, "  note:     --force: %s (load it at startup: docs/bundles.md)",
                attach_inert_note);
        return;
    }
    print_error(attach_outcome_name(r->outcome), &r->error);
    print_startup_lines(stderr, r);
    if (r->removed)
        say(stderr, "clrattach: removed what this %s delivered (%s); --keep keeps it",
            r->kind == ATTACH_KIND_PROFILER ? "attach" : "run",
            r->delivered_dir[0] ? r->delivered_dir : r->delivered_path);
}

void print_report(const struct event_reporter *rep, const struct event_report_sent *s, int r,
                  const struct cla_error *e)
{
    if (!s->sent)
        return;
    if (s->dry_run) {
        if (r < 0) {
            print_error("events", e);
            return;
        }
        fprintf(stderr, "clrattach: dry run: would POST this Event:\n");
        printf("%s\n", s->body);
        return;
    }
    if (r < 0) {
        say(stderr, "clrattach: %s: could not report the Event: %s",
            rep->mode == EVENT_MODE_REQUIRED ? "error" : "warning", e->msg);
        if (e->hint[0])
            say(stderr, "clrattach: next step: %s", e->hint);
        return;
    }
    const struct k8s_report_outcome *out = &s->out;
    if (out->patched)
        say(stderr, "clrattach: updated Event %s/%s (%s, seen %d times, %d request%s)",
            rep->pod.namespace_, out->event_name, s->reason, out->series_count, out->attempts,
            out->attempts == 1 ? "" : "s");
    else
        say(stderr, "clrattach: reported Event %s/%s (%s, %d request%s)", rep->pod.namespace_,
            out->event_name, s->reason, out->attempts, out->attempts == 1 ? "" : "s");
}

void print_attach_result(const struct attach_result *r, const char *js, bool json)
{
    if (json) {
        if (js)
            printf("%s\n", js);
        /* stdout stays one JSON document per result for a program; the person reading the
         * log still gets the message and its next step on stderr. */
        if (!attach_outcome_ok(r->outcome))
            print_error(attach_outcome_name(r->outcome), &r->error);
    } else {
        print_attach_text(r);
    }
    /* Under a container runtime stdout is a pipe, fully buffered: without the flush a
     * watcher's results would reach its log only when the buffer fills. */
    fflush(stdout);
}
