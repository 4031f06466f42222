/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenTelemetry agent's settings checked, the app's maps read for it, and its status file
 * decoded: JSON the app wrote, so untrusted: bounded, typed field by field, every string
 * rendered. Pure: no I/O. */
#include "profset/otel_status.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "base/bounds.h"
#include "base/render.h"
#include "base/util.h"

static const char *const state_names[] = {
    [OTEL_STATE_NONE] = "",
    [OTEL_STATE_STARTED] = "started",
    [OTEL_STATE_STARTING] = "starting",
    [OTEL_STATE_STOPPED] = "stopped",
    [OTEL_STATE_STOPPING] = "stopping",
    [OTEL_STATE_REFUSED] = "refused",
    [OTEL_STATE_FAILED] = "failed",
};

const char *otel_state_name(enum otel_state s)
{
    return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "";
}

/* A string field rendered into out; "" when absent or not a string. */
static void get_str(json_t *o, const char *key, char *out, size_t size)
{
    json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (json_is_string(v))
        render_text(json_string_value(v), json_string_length(v), out, size);
}

static int64_t get_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

/* A list of strings as "a,b,c", at most OTEL_STATUS_LIST_MAX names, each rendered; what does not
 * fit `size` whole is left out. */
static void get_list(json_t *o, const char *key, char *out, size_t size)
{
    json_t *v = json_object_get(o, key);
    size_t len = 0;
    out[0] = '\0';
    if (!json_is_array(v))
        return;
    for (size_t i = 0; i < json_array_size(v) && i < OTEL_STATUS_LIST_MAX; i++) {
        json_t *s = json_array_get(v, i);
        char one[64];
        if (!json_is_string(s))
            continue;
        size_t n = render_text(json_string_value(s), json_string_length(s), one, sizeof(one));
        if (n == 0 || len + n + 2 > size)
            continue;
        if (len)
            out[len++] = ',';
        memcpy(out + len, one, n + 1);
        len += n;
    }
}

int otel_status_parse(const char *buf, size_t len, struct otel_status *ret, struct cla_error *e)
{
    if (len > OTEL_STATUS_MAX)
        return err_set(e, -E2BIG, "the agent's status is over %d bytes", OTEL_STATUS_MAX);
    json_error_t je;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return err_set(e, -EPROTO, "the agent's status is not JSON (line %d)", je.line);
    if (!json_is_object(o)) {
        json_decref(o);
        return err_set(e, -EPROTO, "the agent's status is not a JSON object");
    }
    json_t *st = json_object_get(o, "state");
    enum otel_state state = OTEL_STATE_NONE;
    for (size_t i = 1; json_is_string(st) && i < ARRAY_SIZE(state_names); i++)
        if (strcmp(json_string_value(st), state_names[i]) == 0)
            state = (enum otel_state)i;
    if (state == OTEL_STATE_NONE) {
        json_decref(o);
        return err_set(e, -EPROTO, "the agent's status has no known \"state\"");
    }
    struct otel_status s = {.state = state};
    get_str(o, "action", s.action, sizeof(s.action));
    get_str(o, "reason", s.reason, sizeof(s.reason));
    get_str(o, "next_step", s.next_step, sizeof(s.next_step));
    get_list(o, "instrumentations", s.instrumentations, sizeof(s.instrumentations));
    get_list(o, "traces", s.traces, sizeof(s.traces));
    get_list(o, "metrics", s.metrics, sizeof(s.metrics));
    get_str(o, "exporter", s.exporter, sizeof(s.exporter));
    get_str(o, "protocol", s.protocol, sizeof(s.protocol));
    get_str(o, "endpoint", s.endpoint, sizeof(s.endpoint));
    get_str(o, "service_name", s.service_name, sizeof(s.service_name));
    json_t *ver = json_object_get(o, "versions");
    if (json_is_object(ver))
        get_str(ver, "agent", s.agent_version, sizeof(s.agent_version));
    s.initialize_ms = get_int(o, "initialize_ms");
    s.stop_ms = get_int(o, "stop_ms");
    json_t *fl = json_object_get(o, "flushed");
    s.flushed = json_is_boolean(fl) ? json_is_true(fl) : -1;
    json_decref(o);
    *ret = s;
    return 0;
}

/* Does the mapped path p[0..n) end with "/" name? */
static bool ends_with(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && p[n - k - 1] == '/' && memcmp(p + n - k, name, k) == 0;
}

/* Each mapped path (from the line's first '/', " (deleted)" dropped) to `fn`; stops at `fn`'s
 * true. */
static void each_path(const char *buf, size_t len, bool (*fn)(const char *p, size_t n, void *arg),
                      void *arg)
{
    static const char deleted[] = " (deleted)";
    size_t at = 0;
    while (at < len) {
        const char *line = buf + at, *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;
        at += ll + 1;
        const char *p = memchr(line, '/', ll);
        if (!p)
            continue;
        size_t n = ll - (size_t)(p - line);
        if (n > sizeof(deleted) - 1 &&
            memcmp(p + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
            n -= sizeof(deleted) - 1;
        if (memchr(p, '\0', n) == NULL && fn(p, n, arg))
            return;
    }
}

struct scan {
    const char *buf;
    size_t len;
    struct otel_maps *out;
    const char *sdk_dir; /* a candidate's directory, for agent_in */
    size_t sdk_dir_len;
    bool found;
};

static bool find_agent(const char *p, size_t n, void *arg)
{
    struct scan *s = arg;
    size_t k = strlen(OTEL_AGENT_ENTRY) + 1;
    if (!ends_with(p, n, OTEL_AGENT_ENTRY) || n - k >= sizeof(s->out->agent_dir))
        return false;
    memcpy(s->out->agent_dir, p, n - k);
    s->out->agent_dir[n - k] = '\0';
    return true;
}

/* Is the agent's hook mapped in the candidate's directory? */
static bool agent_in(const char *p, size_t n, void *arg)
{
    struct scan *s = arg;
    size_t k = strlen(OTEL_AGENT_ENTRY) + 1;
    s->found = s->found || (ends_with(p, n, OTEL_AGENT_ENTRY) && n - k == s->sdk_dir_len &&
                            memcmp(p, s->sdk_dir, n - k) == 0);
    return s->found;
}

static bool find_sdk(const char *p, size_t n, void *arg)
{
    struct scan *s = arg;
    if (!ends_with(p, n, "OpenTelemetry.dll") || n >= sizeof(s->out->sdk_path))
        return false;
    s->sdk_dir = p;
    s->sdk_dir_len = n - strlen("OpenTelemetry.dll") - 1;
    s->found = false;
    each_path(s->buf, s->len, agent_in, s);
    if (s->found)
        return false;
    memcpy(s->out->sdk_path, p, n);
    s->out->sdk_path[n] = '\0';
    return true;
}

void otel_maps_scan(const char *buf, size_t len, struct otel_maps *ret)
{
    struct scan s = {.buf = buf, .len = len, .out = ret};
    ret->agent_dir[0] = ret->sdk_path[0] = '\0';
    each_path(buf, len, find_agent, &s);
    each_path(buf, len, find_sdk, &s);
}

int otel_endpoint_check(const char *url, struct cla_error *e)
{
    size_t n = url ? strlen(url) : 0;
    const char *host = NULL;
    if (n > 1024)
        return err_set(e, -EINVAL, "the endpoint is over 1024 bytes");
    if (n > 7 && strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else if (n > 8 && strncmp(url, "https://", 8) == 0)
        host = url + 8;
    for (size_t i = 0; host && i < n; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c <= 0x20 || c == 0x7f || c == '"' || c == '\\')
            host = NULL;
    }
    if (!host || !*host || *host == '/' || *host == ':') {
        err_set(e, -EINVAL,
                "the endpoint must be an http:// or https:// URL with a host, not '%.64s'",
                url ? url : "");
        return err_hint(e, "--endpoint http://otel-collector.observability:4318 (OTLP/HTTP), or "
                           "port 4317 with --protocol grpc");
    }
    return 0;
}

int otel_protocol_check(const char *p, struct cla_error *e)
{
    if (p && (strcmp(p, "http/protobuf") == 0 || strcmp(p, "grpc") == 0))
        return 0;
    return err_set(e, -EINVAL, "--protocol is http/protobuf or grpc, not '%.32s'", p ? p : "");
}

int otel_attributes_check(const char *s, struct cla_error *e)
{
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        const char *eq = memchr(s, '=', n);
        bool ok = eq && eq > s;
        for (size_t i = 0; ok && i < n; i++)
            ok = (unsigned char)s[i] >= 0x20 && s[i] != 0x7f;
        if (!ok) {
            err_set(e, -EINVAL,
                    "--resource-attributes takes key=value pairs joined by ',', not "
                    "'%.*s'",
                    (int)(n > 64 ? 64 : n), s);
            return err_hint(e, "--resource-attributes deployment.environment=prod,team=payments");
        }
        s += n + (comma ? 1 : 0);
    }
    return 0;
}
