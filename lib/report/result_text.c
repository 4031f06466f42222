/* SPDX-License-Identifier: Apache-2.0 */
/* The wording of an attach result for Kubernetes: the Event's reason, type and note, and the
 * termination-log message. Pure: no I/O. */
#include "report/result_text.h"

#include <stdio.h>
#include <string.h>

#include "runtime/hresult.h"
#include "base/render.h"

static const char *basename_of(const char *p)
{
    if (!p)
        return "";
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/*
 * Appends `part` to the note in `buf` as a sentence of its own: a space before it, its first
 * letter upper-case, a period after it unless it already ends with one (or '!', '?'). Error
 * messages and hints come from many layers, some ending with a period (the HRESULT table's
 * texts), most without; pasting them with fixed punctuation gave "used.. Next step:". An empty
 * part adds nothing. The text is cut at the end of buf; k8s_utf8_copy repairs a split character.
 */
static void append_sentence(char *buf, size_t size, const char *prefix, const char *part)
{
    size_t len = strlen(buf), n = strlen(part);
    while (n > 0 && (part[n - 1] == ' ' || part[n - 1] == '\n'))
        n--;
    if (n == 0 || len + 1 >= size)
        return;
    const char *stop = strchr(".!?", part[n - 1]) ? "" : ".";
    char first = part[0];
    /* Only the first letter of the part itself; a prefix ("Next step: ") keeps the part as is. */
    if (!prefix[0] && first >= 'a' && first <= 'z')
        first = (char)(first - 'a' + 'A');
    snprintf(buf + len, size - len, "%s%s%c%.*s%s", len ? " " : "", prefix, first, (int)(n - 1),
             part + 1, stop);
}

/* ", with A, B set in its environment": the names of --env only, whatever --show-env says (an
 * Event is read by many; the values may hold tokens). */
static void env_names(const struct attach_result *r, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t len = 0;
    for (uint32_t i = 0; i < r->env_sent && i < ENV_VARS_MAX && len + 1 < size; i++) {
        const char *v = r->env[i], *eq = strchr(v, '=');
        int n = eq ? (int)(eq - v) : (int)strlen(v);
        snprintf(buf + len, size - len, "%s%.*s", i ? ", " : ", with ", n, v);
        len = strlen(buf);
    }
    if (buf[0] && len + 1 < size)
        snprintf(buf + len, size - len, " set in its environment");
}

/*
 * "1 (pid 4242 as seen from clrattach's PID namespace, uid 1000, .NET 10.0.12": the pid in the
 * app's PID namespace, then what clrattach knows of the process from its own side, for
 * ".NET pid %s)". clrattach's view is named only where it differs from the app's (a sidecar or
 * an ephemeral container sharing the app's PID namespace sees the same pid); it is never called
 * the node's, since clrattach may not run on the node. A runtime that connected to --listen gave
 * its pid in a message (its word); with no pid in clrattach's PID namespace (a sidecar sharing
 * only a volume) none is named.
 */
static void who(const struct attach_result *r, char *buf, size_t size)
{
    char here[112] = "";
    if (r->listen && r->pid <= 0)
        snprintf(here, sizeof(here), "the pid the runtime advertised, ");
    else if (r->listen)
        snprintf(here, sizeof(here),
                 "the pid the runtime advertised; pid %d as seen from clrattach's PID namespace, ",
                 (int)r->pid);
    else if (r->pid != r->nspid)
        snprintf(here, sizeof(here), "pid %d as seen from clrattach's PID namespace, ",
                 (int)r->pid);
    snprintf(buf, size, "%d (%suid %u%s%s", (int)r->nspid, here, (unsigned)r->uid,
             r->runtime_version[0] ? ", .NET " : "", r->runtime_version);
}

/* The Event of a perfmap or startup-hook result: its own reasons and action. */
static void other_event(const struct attach_result *r, const char *assembly, char *text,
                        size_t size, struct result_text_event *ret)
{
    char part[2048], hr[16] = "", pid[256];
    bool perfmap = r->kind != ATTACH_KIND_STARTUP_HOOK;
    const char *what = r->kind == ATTACH_KIND_PERFMAP_ENABLE    ? "Enabled the perf map"
                       : r->kind == ATTACH_KIND_PERFMAP_DISABLE ? "Disabled the perf map"
                                                                : "Ran the startup hook";
    ret->spec.action = r->kind == ATTACH_KIND_PERFMAP_ENABLE    ? "EnablePerfMap"
                       : r->kind == ATTACH_KIND_PERFMAP_DISABLE ? "DisablePerfMap"
                                                                : "ApplyStartupHook";
    if (attach_outcome_ok(r->outcome)) {
        ret->spec.reason = r->outcome == ATTACH_PERFMAP_ENABLED    ? "PerfMapEnabled"
                           : r->outcome == ATTACH_PERFMAP_DISABLED ? "PerfMapDisabled"
                                                                   : "StartupHookApplied";
        ret->spec.type = "Normal";
        who(r, pid, sizeof(pid));
        snprintf(part, sizeof(part), "%s%s%s of .NET pid %s) in %lld ms: %.1024s", what,
                 perfmap ? "" : " ", perfmap ? "" : basename_of(assembly), pid,
                 (long long)r->duration_ms,
                 perfmap ? (r->perfmap_path[0] ? r->perfmap_path : r->jitdump_path)
                         : r->delivered_path);
        append_sentence(text, size, "", part);
        return;
    }
    ret->spec.reason = perfmap ? "PerfMapFailed" : "StartupHookFailed";
    ret->spec.type = "Warning";
    const struct hresult_info *hi = r->have_hresult ? hresult_lookup(r->hresult) : NULL;
    if (r->have_hresult)
        hresult_format(r->hresult, hr, sizeof(hr));
    snprintf(part, sizeof(part), "%s%s%s, pid %d: %s%s%s%s%s%s", ret->spec.action,
             perfmap ? "" : " ", perfmap ? "" : basename_of(assembly),
             (int)(r->nspid ? r->nspid : r->pid), attach_outcome_name(r->outcome), hi ? " (" : "",
             hi ? hi->name : "", hi ? " " : "", hr, hi ? ")" : "");
    append_sentence(text, size, "", part);
    append_sentence(text, size, "", r->error.msg);
    append_sentence(text, size, "Next step: ", r->error.hint);
}

/* The Event of an otel result: its own reasons, what started and where it exports. */
static void otel_event(const struct attach_result *r, char *text, size_t size,
                       struct result_text_event *ret)
{
    char part[2048], pid[256];
    const struct otel_status *st = &r->otel;
    bool stop = r->kind == ATTACH_KIND_OTEL_STOP;
    ret->spec.action = "ApplyStartupHook";
    if (attach_outcome_ok(r->outcome)) {
        ret->spec.reason = stop ? "OpenTelemetryStopped" : "OpenTelemetryStarted";
        ret->spec.type = "Normal";
        who(r, pid, sizeof(pid));
        if (stop)
            snprintf(part, sizeof(part), "Stopped OpenTelemetry in .NET pid %s) in %lld ms%s", pid,
                     (long long)r->duration_ms,
                     st->flushed == 0 ? ": not everything was flushed" : "");
        else
            snprintf(part, sizeof(part),
                     "Started OpenTelemetry in .NET pid %s) in %lld ms: service %.128s, %.256s "
                     "exported with OTLP %.32s to %.256s",
                     pid, (long long)r->duration_ms, st->service_name,
                     st->instrumentations[0] ? st->instrumentations : "nothing", st->protocol,
                     st->endpoint);
        append_sentence(text, size, "", part);
        if (stop)
            append_sentence(text, size, "", st->reason);
        return;
    }
    /* Already running is a fact about the app, not a fault. */
    ret->spec.reason =
        r->outcome == ATTACH_ALREADY_ACTIVE ? "OpenTelemetryAlreadyRunning" : "OpenTelemetryFailed";
    ret->spec.type = r->outcome == ATTACH_ALREADY_ACTIVE ? "Normal" : "Warning";
    snprintf(part, sizeof(part), "OpenTelemetry %s, pid %d: %s", stop ? "stop" : "start",
             (int)(r->nspid ? r->nspid : r->pid), attach_outcome_name(r->outcome));
    append_sentence(text, size, "", part);
    append_sentence(text, size, "", r->error.msg);
    append_sentence(text, size, "Next step: ", r->error.hint);
}

void result_text_event(const struct attach_result *r, const char *profiler,
                       const struct ipc_guid *clsid, const struct timespec *when,
                       struct result_text_event *ret)
{
    char guid[39], text[3072] = "", part[2048], hr[16] = "", pid[256];
    ipc_guid_format(clsid, guid);
    if (r->have_hresult)
        hresult_format(r->hresult, hr, sizeof(hr));
    memset(ret, 0, sizeof(*ret));
    char env[512];
    env_names(r, env, sizeof(env));
    if (r->kind == ATTACH_KIND_OTEL_START || r->kind == ATTACH_KIND_OTEL_STOP) {
        otel_event(r, text, sizeof(text), ret);
    } else if (r->kind != ATTACH_KIND_PROFILER) {
        other_event(r, profiler, text, sizeof(text), ret);
    } else if (r->outcome == ATTACH_STARTUP_LOADED) {
        /* Not "attached": the runtime loaded it through Initialize as it started. */
        ret->spec.reason = "ProfilerLoadedAtStartup";
        ret->spec.type = "Normal";
        who(r, pid, sizeof(pid));
        snprintf(part, sizeof(part),
                 "Loaded profiler %s %s at startup into .NET pid %s)%s, resumed after %lld ms: "
                 "%.1024s",
                 basename_of(profiler), guid, pid, env, (long long)r->resumed_after_ms,
                 r->delivered_path);
        append_sentence(text, sizeof(text), "", part);
    } else if (r->outcome == ATTACH_OK) {
        ret->spec.reason = "ProfilerAttached";
        ret->spec.type = "Normal";
        who(r, pid, sizeof(pid));
        snprintf(
            part, sizeof(part), "Attached profiler %s %s to .NET pid %s) in %lld ms%s: %.1024s",
            basename_of(profiler), guid, pid, (long long)r->duration_ms, env, r->delivered_path);
        append_sentence(text, sizeof(text), "", part);
        if (r->expected_inert) {
            /* The runtime's S_OK is not the profiler running: --force sent a known no-op. */
            ret->spec.reason = "ProfilerAttachedInert";
            ret->spec.type = "Warning";
            append_sentence(text, sizeof(text), "", attach_inert_note);
            append_sentence(text, sizeof(text),
                            "Next step: ", "load it at startup (docs/bundles.md)");
        }
    } else {
        const struct hresult_info *hi = r->have_hresult ? hresult_lookup(r->hresult) : NULL;
        ret->spec.reason = r->outcome == ATTACH_ALREADY_ACTIVE   ? "ProfilerAlreadyActive"
                           : r->outcome == ATTACH_TARGET_DIED    ? "ProfilerTargetDied"
                           : r->outcome == ATTACH_INERT          ? "ProfilerInertOnAttach"
                           : r->outcome == ATTACH_STARTUP_FAILED ? "ProfilerStartupLoadFailed"
                                                                 : "ProfilerAttachFailed";
        /* Another profiler already loaded is a fact about the app, not a fault. */
        ret->spec.type = r->outcome == ATTACH_ALREADY_ACTIVE ? "Normal" : "Warning";
        /* Three sentences: what was attempted and the outcome, why, what to do. */
        snprintf(part, sizeof(part), "Profiler %s %s, pid %d: %s%s%s%s%s%s", basename_of(profiler),
                 guid, (int)(r->nspid ? r->nspid : r->pid), attach_outcome_name(r->outcome),
                 hi ? " (" : "", hi ? hi->name : "", hi ? " " : "", hr, hi ? ")" : "");
        append_sentence(text, sizeof(text), "", part);
        append_sentence(text, sizeof(text), "", r->error.msg);
        append_sentence(text, sizeof(text), "Next step: ", r->error.hint);
        /* An app that was paused at startup: did it run on? */
        if (r->resume_owed)
            append_sentence(text, sizeof(text), "",
                            r->resumed ? "The runtime was resumed: the app runs on"
                                       : "ResumeRuntime failed: the app may still be paused");
    }
    if (r->kind == ATTACH_KIND_PROFILER)
        ret->spec.action = r->startup_load ? "StartupProfiler" : "AttachProfiler";
    /* The note quotes target text (paths, messages): whatever was not rendered where it was
     * read is rendered here (already-rendered text passes unchanged), and the cut is made on a
     * character boundary, marked. */
    render_message(text, strlen(text), ret->note, sizeof(ret->note));
    ret->spec.note = ret->note;
    ret->spec.reporting_instance = NULL;
    ret->spec.event_time = *when;
}

size_t result_text_termination(const struct attach_result *r, const char *json, int exit_code,
                               char *out)
{
    if (json && strlen(json) <= RESULT_TEXT_TERMINATION_MAX) {
        size_t n = strlen(json);
        memcpy(out, json, n + 1);
        return n;
    }
    char text[RESULT_TEXT_TERMINATION_MAX * 2];
    char hr[16] = "-", pid[48];
    if (r->have_hresult)
        hresult_format(r->hresult, hr, sizeof(hr));
    /* A listening result: the advertised pid beside it, "-" for a pid clrattach cannot see. */
    if (r->listen && r->pid <= 0)
        snprintf(pid, sizeof(pid), "- ns_pid=%d", (int)r->nspid);
    else if (r->listen)
        snprintf(pid, sizeof(pid), "%d ns_pid=%d", (int)r->pid, (int)r->nspid);
    else
        snprintf(pid, sizeof(pid), "%d", (int)r->pid);
    snprintf(text, sizeof(text), "outcome=%s exit_code=%d pid=%s hresult=%s path=%.1024s error=%s",
             attach_outcome_name(r->outcome), exit_code, pid, hr,
             r->delivered_path[0] ? r->delivered_path : "-",
             attach_outcome_ok(r->outcome) ? "-" : r->error.msg);
    return render_message(text, strlen(text), out, RESULT_TEXT_TERMINATION_MAX + 1);
}
