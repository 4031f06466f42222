/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON of `-o json`: an attach result written section by section, a ps entry or list, an
 * error before any target; one compact line each, keys in a fixed order. */
#include "report/result_json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/hresult.h"
#include "base/render.h"

/* A JSON string of v, or null when out of memory. */
static json_t *str_value(const char *v)
{
    /* Target strings arrive rendered (render.h); this pass is the last line of defence for one
     * that did not: jansson would copy a C1, bidi or invisible character as it is (and refuse
     * invalid UTF-8, losing the whole result), and `jq -r` would hand it to a terminal. Text
     * that is already rendered passes unchanged. */
    size_t len = strlen(v);
    size_t size = RENDER_SIZE_MAX(len);
    char *buf = malloc(size);
    json_t *s = NULL;
    if (buf) {
        size_t n = render_message(v, len, buf, size);
        s = json_stringn(buf, n);
        free(buf);
    }
    return s ? s : json_null();
}

static void set_str(json_t *o, const char *k, const char *v)
{
    /* Out of memory gives null rather than a missing key: scripts see the same keys. jansson
     * returns -1 and releases the value when `o` is NULL (its json_object() failed), so the
     * builders below need no check after each nested object. */
    json_object_set_new(o, k, str_value(v));
}

/* Takes `o` and returns the caller's malloc'd text (free()), or NULL. No JSON_INDENT: one line
 * per document, so `watch` output is one JSON object per line; PRESERVE_ORDER keeps the keys in
 * the order they are set here (older jansson hashes them otherwise). */
static char *dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static const char *command_of(enum attach_kind k)
{
    switch (k) {
    case ATTACH_KIND_PERFMAP_ENABLE:
    case ATTACH_KIND_PERFMAP_DISABLE: return "perfmap";
    case ATTACH_KIND_STARTUP_HOOK: return "startup-hook";
    case ATTACH_KIND_OTEL_START:
    case ATTACH_KIND_OTEL_STOP: return "otel";
    case ATTACH_KIND_PROFILER: break;
    }
    return "attach";
}

static const char *perfmap_type_name(uint32_t type)
{
    switch (type) {
    case IPC_PERFMAP_ALL: return "all";
    case IPC_PERFMAP_JITDUMP: return "jitdump";
    case IPC_PERFMAP_PERFMAP: return "perfmap";
    default: return "";
    }
}

/* {"target_path", "node_path"[, "size"]}: a runtime-written file as the app sees it and as
 * clrattach's side does (what perf or an eBPF profiler on the node opens). */
static json_t *perfmap_file(const struct attach_result *r, const char *path, bool with_size)
{
    char node[TARGET_PATH_MAX + 64];
    snprintf(node, sizeof(node), "%s%s", r->node_root, path);
    json_t *f = json_object();
    set_str(f, "target_path", path);
    set_str(f, "node_path", node);
    if (with_size && r->perfmap_size >= 0)
        json_object_set_new(f, "size", json_integer(r->perfmap_size));
    return f;
}

/* The perf map's part of a perfmap result. */
static void perfmap_fields(json_t *o, const struct attach_result *r)
{
    set_str(o, "action", r->kind == ATTACH_KIND_PERFMAP_ENABLE ? "enable" : "disable");
    if (r->kind == ATTACH_KIND_PERFMAP_ENABLE)
        set_str(o, "kind", perfmap_type_name(r->perfmap_type));
    if (r->perfmap_path[0])
        json_object_set_new(o, "perf_map", perfmap_file(r, r->perfmap_path, true));
    if (r->jitdump_path[0])
        json_object_set_new(o, "jitdump", perfmap_file(r, r->jitdump_path, false));
}

/* "a,b,c" as ["a","b","c"]. */
static json_t *name_list(const char *s)
{
    json_t *a = json_array();
    while (a && *s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        json_array_append_new(a, json_stringn(s, n));
        s += n + (comma ? 1 : 0);
    }
    return a;
}

/* otel: the agent sent, the action, and what its status said (rendered when read). */
static void otel_fields(json_t *o, const struct attach_result *r, const char *agent)
{
    const struct otel_status *st = &r->otel;
    set_str(o, "agent", agent);
    set_str(o, "action", r->kind == ATTACH_KIND_OTEL_STOP ? "stop" : "start");
    if (st->state == OTEL_STATE_NONE)
        return;
    json_t *s = json_object();
    set_str(s, "state", otel_state_name(st->state));
    if (st->reason[0])
        set_str(s, "reason", st->reason);
    if (st->instrumentations[0] || r->kind == ATTACH_KIND_OTEL_START) {
        json_object_set_new(s, "instrumentations", name_list(st->instrumentations));
        json_object_set_new(s, "traces", name_list(st->traces));
        json_object_set_new(s, "metrics", name_list(st->metrics));
    }
    const struct {
        const char *key, *value;
    } strs[] = {{"exporter", st->exporter},           {"protocol", st->protocol},
                {"endpoint", st->endpoint},           {"service_name", st->service_name},
                {"agent_version", st->agent_version}, {"status_path", r->otel_status_path}};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (strs[i].value[0])
            set_str(s, strs[i].key, strs[i].value);
    if (st->initialize_ms >= 0)
        json_object_set_new(s, "initialize_ms", json_integer(st->initialize_ms));
    if (st->stop_ms >= 0)
        json_object_set_new(s, "stop_ms", json_integer(st->stop_ms));
    if (st->flushed >= 0)
        json_object_set_new(s, "flushed", json_boolean(st->flushed));
    json_object_set_new(o, "otel", s);
}

/* Which process: its pids, its user and start, its socket, the runtime in it. */
static void target_fields(json_t *o, const struct attach_result *r)
{
    /* A runtime that connected to --listen: ns_pid is the pid it advertised, uid its socket's
     * peer; "pid" is absent when it has no pid in clrattach's PID namespace (0 would read as a
     * pid; docs/exit-codes.md). */
    if (!r->listen || r->pid > 0)
        json_object_set_new(o, "pid", json_integer(r->pid));
    if (r->nspid)
        json_object_set_new(o, "ns_pid", json_integer(r->nspid));
    if (r->listen) {
        json_object_set_new(o, "listen", json_true());
        json_object_set_new(o, "uid", json_integer(r->uid));
    }
    /* These exist only once the target was inspected (its start time read): before that, a
     * uid of 0 would read as root. */
    if (r->starttime) {
        json_object_set_new(o, "uid", json_integer(r->uid));
        json_object_set_new(o, "start_time", json_integer((json_int_t)r->starttime));
        set_str(o, "command_line", r->command_line);
        set_str(o, "tmpdir", r->tmpdir);
    }
    if (r->socket_name[0])
        set_str(o, "socket", r->socket_name);
    if (r->have_runtime) {
        json_t *rt = json_object();
        set_str(rt, "version", r->runtime_version);
        set_str(rt, "rid", r->runtime_rid);
        set_str(rt, "platform", r->os_arch);
        json_object_set_new(o, "runtime", rt);
    }
}

/* What was sent: the profiler (its build and CLSID), the assembly, or the perf map's part. */
static void sent_fields(json_t *o, const struct attach_result *r, const char *profiler,
                        const struct ipc_guid *clsid)
{
    if (r->kind == ATTACH_KIND_PROFILER)
        set_str(o, "profiler", profiler);
    else if (r->kind == ATTACH_KIND_STARTUP_HOOK)
        set_str(o, "assembly", profiler);
    else if (r->kind == ATTACH_KIND_OTEL_START || r->kind == ATTACH_KIND_OTEL_STOP)
        otel_fields(o, r, profiler);
    else
        perfmap_fields(o, r);
    if (r->target_rid[0] || r->rid_source) {
        set_str(o, "target_rid", r->target_rid);
        /* "" rather than null: the key's type stays a string. */
        set_str(o, "rid_source", r->rid_source ? r->rid_source : "");
    }
    if (r->variant[0])
        set_str(o, "variant", r->variant);
    if (r->kind == ATTACH_KIND_PROFILER) {
        char guid[39];
        ipc_guid_format(clsid, guid);
        set_str(o, "clsid", guid);
    }
}

bool result_delivered_home(const struct attach_result *r)
{
    size_t d = strlen(r->delivered_dir), v = strlen(r->variant);
    return d && v && strncmp(r->delivered_path, r->delivered_dir, d) == 0 &&
           r->delivered_path[d] == '/' && strncmp(r->delivered_path + d + 1, r->variant, v) == 0 &&
           r->delivered_path[d + 1 + v] == '/';
}

/* Where it was delivered, and what the target's side showed of it after. */
static void delivery_fields(json_t *o, const struct attach_result *r)
{
    if (r->delivered_path[0]) {
        set_str(o, "delivered_path", r->delivered_path);
        if (r->loader_path[0])
            set_str(o, "env_loader", r->loader_path);
        if (r->delivered_dir[0])
            set_str(o, "delivered_dir", r->delivered_dir);
        if (result_delivered_home(r))
            set_str(o, "layout", "home");
        set_str(o, "sha256", r->sha256);
        json_object_set_new(o, "reused", json_boolean(r->reused));
        if (r->removed)
            json_object_set_new(o, "removed", json_true());
    }
    /* Only what was looked at: a listening clrattach never reads the app's maps. */
    if (r->kind == ATTACH_KIND_PROFILER && !r->listen &&
        (attach_outcome_loaded(r->outcome) || r->outcome == ATTACH_ALREADY_ACTIVE ||
         r->outcome == ATTACH_STARTUP_FAILED))
        json_object_set_new(o, "mapped", json_boolean(r->mapped));
    if (r->holder[0])
        set_str(o, "holder", r->holder);
    if (r->dependency_note[0])
        set_str(o, "dependency_check", r->dependency_note);
    if (r->verify_note[0])
        set_str(o, "verified", r->verify_note);
}

/* How the process fared: died, loaded at startup, resumed; the --env sent; what was skipped. */
static void run_fields(json_t *o, const struct attach_result *r)
{
    if (r->died)
        json_object_set_new(o, "died_after_ms", json_integer(r->died_after_ms));
    if (r->startup_load)
        set_str(o, "load", "startup");
    /* A runtime that may have been paused at startup: whether clrattach resumed it, and when
     * (ms from the attach's start). */
    if (r->resume_owed) {
        json_object_set_new(o, "resumed", json_boolean(r->resumed));
        if (r->resumed)
            json_object_set_new(o, "resumed_after_ms", json_integer(r->resumed_after_ms));
    }
    /* --env: names, or NAME=VALUE with --show-env; env_sent of them were taken. */
    if (r->env_count) {
        json_t *env = json_array();
        for (uint32_t i = 0; i < r->env_count && i < ENV_VARS_MAX; i++)
            json_array_append_new(env, str_value(r->env[i]));
        json_object_set_new(o, "env", env);
        json_object_set_new(o, "env_sent", json_integer(r->env_sent));
    }
    /* --force sent a profiler whose InitializeForAttach is known to do nothing (vendors.h). */
    if (r->expected_inert) {
        json_object_set_new(o, "expected_inert", json_true());
        /* Only once it is attached does it hold the slot. */
        if (r->outcome == ATTACH_OK)
            set_str(o, "note", attach_inert_note);
    }
    if (r->vendor_env[0])
        set_str(o, "vendor_env", r->vendor_env);
    if (r->placement[0])
        set_str(o, "placement_skipped", r->placement);
}

/* The runtime's answer, and on a failure the error and the next step. */
static void answer_fields(json_t *o, const struct attach_result *r)
{
    if (r->have_hresult) {
        char hr[16];
        hresult_format(r->hresult, hr, sizeof(hr));
        set_str(o, "hresult", hr);
        /* hresult_lookup() is never NULL: an unknown code is named "UNKNOWN". */
        set_str(o, "hresult_name", hresult_lookup(r->hresult)->name);
    }
    if (r->profiler_env[0])
        set_str(o, "profiler_env", r->profiler_env);
    /* A success has no error; every other outcome says why and, when known, what to do. */
    if (!attach_outcome_ok(r->outcome)) {
        set_str(o, "error", r->error.msg);
        if (r->error.hint[0])
            set_str(o, "next_step", r->error.hint);
    }
}

/* How long the attach took, and the runtime's part of it. */
static void timing_fields(json_t *o, const struct attach_result *r)
{
    json_object_set_new(o, "duration_ms", json_integer(r->duration_ms));
    if (r->have_hresult) {
        json_object_set_new(o, "answer_ms", json_integer(r->answer_ms));
        json_object_set_new(o, "settle_wait_ms", json_integer(r->settle_wait_ms));
    }
}

char *result_attach_json(const struct attach_result *r, const char *profiler,
                         const struct ipc_guid *clsid, int exit_code)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    /* The keys in this order, section by section: scripts and tests read them so. */
    set_str(o, "command", command_of(r->kind));
    set_str(o, "outcome", attach_outcome_name(r->outcome));
    json_object_set_new(o, "exit_code", json_integer(exit_code));
    target_fields(o, r);
    sent_fields(o, r, profiler, clsid);
    delivery_fields(o, r);
    run_fields(o, r);
    answer_fields(o, r);
    timing_fields(o, r);
    return dump(o);
}

static json_t *ps_object(const struct ps_entry *p)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "pid", json_integer(p->pid));
    /* A refused process could not be inspected: no namespace pid, uid or gid to give (0 would
     * read as root). */
    if (p->nspid) {
        json_object_set_new(o, "ns_pid", json_integer(p->nspid));
        json_object_set_new(o, "uid", json_integer(p->uid));
        json_object_set_new(o, "gid", json_integer(p->gid));
    }
    set_str(o, "comm", p->comm);
    set_str(o, "command_line", p->command_line);
    set_str(o, "tmpdir", p->tmpdir);
    set_str(o, "socket", p->socket_name);
    set_str(o, "state", p->state);
    if (p->runtime_version[0] || p->arch[0]) {
        json_t *rt = json_object();
        set_str(rt, "version", p->runtime_version);
        set_str(rt, "rid", p->runtime_rid);
        set_str(rt, "arch", p->arch);
        json_object_set_new(o, "runtime", rt);
    }
    if (p->detail[0])
        set_str(o, "detail", p->detail);
    return o;
}

char *result_ps_json(const struct ps_entry *p)
{
    json_t *o = ps_object(p);
    return o ? dump(o) : NULL;
}

char *result_ps_list_json(const struct ps_entry *list, size_t n)
{
    json_t *o = json_object(), *a = json_array();
    if (!o || !a) {
        json_decref(o);
        json_decref(a);
        return NULL;
    }
    set_str(o, "command", "ps");
    for (size_t i = 0; i < n; i++) {
        json_t *p = ps_object(&list[i]);
        /* All or nothing: a list cut short would read as fewer processes, not as a failure. */
        if (!p || json_array_append_new(a, p) < 0) {
            json_decref(a);
            json_decref(o);
            return NULL;
        }
    }
    json_object_set_new(o, "processes", a);
    return dump(o);
}

char *result_error_json(const char *command, enum attach_outcome outcome, const char *msg,
                        const char *hint)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    /* The same first keys as an attach result, so one reader handles both. */
    set_str(o, "command", command);
    set_str(o, "outcome", attach_outcome_name(outcome));
    json_object_set_new(o, "exit_code", json_integer(attach_outcome_exit_code(outcome)));
    set_str(o, "error", msg);
    if (hint && hint[0])
        set_str(o, "next_step", hint);
    return dump(o);
}
