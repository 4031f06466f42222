/* SPDX-License-Identifier: Apache-2.0 */
/* Building the Event body and the series patch as JSON, and their pieces: UTF-8-safe cuts,
 * MicroTime, DNS-1123 names checked, the Event's name. Pure: no I/O. */
#include "report/k8s_event.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes readable), or 0 when the
 * bytes there are not one. Overlongs, surrogates and code points above U+10FFFF are invalid:
 * jansson refuses them, and so would the apiserver's JSON decoder. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char b = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        n = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

size_t k8s_utf8_copy(const char *src, size_t max, char *dst)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t in = 0, out = 0, len = src ? strlen(src) : 0;
    while (in < len) {
        size_t n = utf8_seq_len(s + in, len - in);
        if (n == 0) {
            /* One '?' per bad byte keeps the output no longer than the input. */
            if (out + 1 > max)
                break;
            dst[out++] = '?';
            in++;
            continue;
        }
        if (out + n > max)
            break;
        memcpy(dst + out, s + in, n);
        out += n;
        in += n;
    }
    dst[out] = '\0';
    return out;
}

int k8s_format_microtime(const struct timespec *t, char *buf, size_t size)
{
    struct tm tm;
    if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)
        return -ERANGE;
    time_t sec = t->tv_sec;
    if (!gmtime_r(&sec, &tm) || tm.tm_year + 1900 > 9999)
        return -ERANGE;
    /* Go's MicroTime layout is "2006-01-02T15:04:05.000000Z07:00": seconds-only or millisecond
     * forms fail to decode with a 400, so the six digits are not optional. */
    int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (long)(t->tv_nsec / 1000));
    if (n < 0 || (size_t)n >= size)
        return -ENOBUFS;
    return 0;
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One label of [a-z0-9]([-a-z0-9]*[a-z0-9])? spanning s[0..len). These mirror apimachinery's
 * IsDNS1123Label/Subdomain: a name the apiserver would refuse is caught here, before a POST
 * that could only end in 422. Note the subdomain regex puts no 63-byte limit on its labels. */
static bool dns_label_ok(const char *s, size_t len)
{
    if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool subdomain_ok(const char *s, size_t len)
{
    if (len == 0 || len > K8S_NAME_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (!dns_label_ok(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

bool k8s_is_dns1123_subdomain(const char *s)
{
    return s && subdomain_ok(s, strlen(s));
}

bool k8s_is_dns1123_label(const char *s)
{
    size_t len = s ? strlen(s) : 0;
    return len > 0 && len <= K8S_LABEL_MAX && dns_label_ok(s, len);
}

bool k8s_is_qualified_name(const char *s)
{
    /* apimachinery's IsQualifiedName: at most one '/', a subdomain before it, and a name part
     * that, unlike the prefix, may use upper case and '_'. */
    if (!s)
        return false;
    const char *name = s;
    const char *slash = strchr(s, '/');
    if (slash) {
        if (strchr(slash + 1, '/') || !subdomain_ok(s, (size_t)(slash - s)))
            return false;
        name = slash + 1;
    }
    size_t len = strlen(name);
    if (len == 0 || len > 63 || !is_alnum(name[0]) || !is_alnum(name[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++)
        if (!is_alnum(name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
            return false;
    return true;
}

int k8s_event_name(const char *pod_name, const struct timespec *t, const uint8_t rnd[16], char *buf,
                   size_t size)
{
    if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)
        return -ERANGE;
    /* client-go formats time.Now().UnixNano() with %x; the same time gives the same name, so a
     * retried POST collides with its own earlier copy (409) instead of duplicating it. */
    uint64_t ns = (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
    int n = snprintf(buf, size, "%s.%" PRIx64, pod_name ? pod_name : "", ns);
    if (n >= 0 && (size_t)n < size && k8s_is_dns1123_subdomain(buf))
        return 0;
    /* client-go falls back to a random UUID here (kubernetes issue #127594): a 253-byte pod
     * name plus the suffix no longer fits a subdomain. */
    uint8_t u[16];
    memcpy(u, rnd, sizeof(u));
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    n = snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                 u[13], u[14], u[15]);
    if (n < 0 || (size_t)n >= size)
        return -ENOBUFS;
    return 0;
}

/* Adds a string member; jansson refuses invalid UTF-8, which we report as the caller's bug. */
static int set_str(json_t *obj, const char *key, const char *val, struct cla_error *e)
{
    json_t *s = json_string(val);
    if (!s)
        return err_set(e, -EINVAL, "k8s: event field %s is not valid UTF-8", key);
    if (json_object_set_new(obj, key, s) < 0)
        return err_set(e, -ENOMEM, "k8s: out of memory building the event");
    return 0;
}

/* reason and action are refused rather than cut when too long: they are constants of the
 * caller, and a cut value would no longer match `--field-selector reason=...` queries. */
static int check_field(const char *name, const char *val, struct cla_error *e)
{
    if (!val || !val[0])
        return err_set(e, -EINVAL, "k8s: event %s is required", name);
    if (strlen(val) > K8S_EVENT_FIELD_MAX)
        return err_set(e, -EINVAL, "k8s: event %s is longer than %d bytes", name,
                       K8S_EVENT_FIELD_MAX);
    return 0;
}

static int check_spec(const struct k8s_pod_ref *pod, const struct k8s_event_spec *ev,
                      struct cla_error *e)
{
    int r;
    if (!k8s_is_dns1123_subdomain(pod->name))
        return err_set(e, -EINVAL, "k8s: pod name '%.253s' is not a DNS-1123 subdomain", pod->name);
    if (!k8s_is_dns1123_label(pod->namespace_))
        return err_set(e, -EINVAL, "k8s: namespace '%.63s' is not a DNS-1123 label",
                       pod->namespace_);
    if (pod->container[0] && !k8s_is_dns1123_label(pod->container))
        return err_set(e, -EINVAL, "k8s: container name '%.253s' is not a DNS-1123 label",
                       pod->container);
    if ((r = check_field("reason", ev->reason, e)) < 0 ||
        (r = check_field("action", ev->action, e)) < 0)
        return r;
    if (!ev->type || (strcmp(ev->type, "Normal") != 0 && strcmp(ev->type, "Warning") != 0))
        return err_set(e, -EINVAL, "k8s: event type must be Normal or Warning");
    return 0;
}

/* The object reference to the pod: `regarding` on events.k8s.io, `involvedObject` on core. */
static json_t *pod_reference(const struct k8s_pod_ref *pod)
{
    json_t *ref = json_object();
    if (!ref)
        return NULL;
    char field_path[K8S_NAME_MAX + 32];
    bool ok = json_object_set_new(ref, "apiVersion", json_string("v1")) == 0 &&
              json_object_set_new(ref, "kind", json_string("Pod")) == 0 &&
              json_object_set_new(ref, "name", json_string(pod->name)) == 0 &&
              json_object_set_new(ref, "namespace", json_string(pod->namespace_)) == 0;
    /* Without the uid the Event is stored but `kubectl describe pod` never shows it, since it
     * selects on involvedObject.uid; the client looks the uid up before building. */
    if (ok && pod->uid[0])
        ok = json_object_set_new(ref, "uid", json_string(pod->uid)) == 0;
    if (ok && pod->container[0]) {
        snprintf(field_path, sizeof(field_path), "spec.containers{%s}", pod->container);
        ok = json_object_set_new(ref, "fieldPath", json_string(field_path)) == 0;
    }
    if (!ok) {
        json_decref(ref);
        return NULL;
    }
    return ref;
}

int k8s_event_build(const struct k8s_pod_ref *pod, const struct k8s_event_spec *ev, bool core,
                    char **ret_json, struct cla_error *e)
{
    int r = check_spec(pod, ev, e);
    if (r < 0)
        return r;

    char when[40], name[K8S_NAME_MAX + 1];
    char instance[K8S_EVENT_FIELD_MAX + 1];
    char note[K8S_EVENT_NOTE_MAX + 1];
    if (k8s_format_microtime(&ev->event_time, when, sizeof(when)) < 0)
        return err_set(e, -EINVAL, "k8s: event time out of range");
    uint8_t rnd[16] = {0};
    /* The random bytes only matter for the UUID fallback; a short read leaves zeros, which
     * still give a valid name. */
    if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
        memset(rnd, 0, sizeof(rnd));
    if ((r = k8s_event_name(pod->name, &ev->event_time, rnd, name, sizeof(name))) < 0)
        return err_set(e, r, "k8s: cannot make an event name");

    if (ev->reporting_instance && ev->reporting_instance[0]) {
        k8s_utf8_copy(ev->reporting_instance, K8S_EVENT_FIELD_MAX, instance);
    } else {
        char dflt[K8S_NAME_MAX + 16];
        snprintf(dflt, sizeof(dflt), "clrattach-%s", pod->name);
        k8s_utf8_copy(dflt, K8S_EVENT_FIELD_MAX, instance);
    }
    k8s_utf8_copy(ev->note, K8S_EVENT_NOTE_MAX, note);

    r = 0;
    json_t *root = json_object(), *meta = json_object(), *ref = pod_reference(pod);
    if (!root || !meta || !ref) {
        json_decref(root);
        json_decref(meta);
        json_decref(ref);
        return err_set(e, -ENOMEM, "k8s: out of memory building the event");
    }
    /* The same fields under core/v1 JSON names (pkg/apis/events/v1/conversion.go). eventTime
     * on core/v1 switches on the strict checks, so reportingComponent/Instance and action are
     * sent there too; the deprecated source/count/timestamps are left out on both. */
    if ((r = set_str(root, "apiVersion", core ? "v1" : "events.k8s.io/v1", e)) < 0 ||
        (r = set_str(root, "kind", "Event", e)) < 0 ||
        json_object_set(root, "metadata", meta) < 0 || (r = set_str(meta, "name", name, e)) < 0 ||
        (r = set_str(meta, "namespace", pod->namespace_, e)) < 0 ||
        (r = set_str(root, "eventTime", when, e)) < 0 ||
        (r = set_str(root, core ? "reportingComponent" : "reportingController",
                     K8S_REPORTING_CONTROLLER, e)) < 0 ||
        (r = set_str(root, "reportingInstance", instance, e)) < 0 ||
        (r = set_str(root, "action", ev->action, e)) < 0 ||
        (r = set_str(root, "reason", ev->reason, e)) < 0 ||
        (r = set_str(root, "type", ev->type, e)) < 0 ||
        json_object_set(root, core ? "involvedObject" : "regarding", ref) < 0 ||
        (note[0] && (r = set_str(root, core ? "message" : "note", note, e)) < 0)) {
        r = r < 0 ? r : err_set(e, -ENOMEM, "k8s: out of memory building the event");
    }
    /* meta and ref were added with json_object_set() (a new reference each), so our own
     * references go here on both paths and nothing leaks whichever step failed. */
    json_decref(meta);
    json_decref(ref);
    if (r < 0) {
        json_decref(root);
        return r;
    }
    char *out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!out)
        return err_set(e, -ENOMEM, "k8s: out of memory serialising the event");
    *ret_json = out;
    return 0;
}

int k8s_series_patch_build(int count, const struct timespec *last_observed, char **ret_json,
                           struct cla_error *e)
{
    char when[40];
    /* validateV1EventSeries: a series starts at the second occurrence, and lastObservedTime
     * is a MicroTime with the same six-digit layout as eventTime. */
    if (count < 2)
        return err_set(e, -EINVAL, "k8s: series count %d is below 2", count);
    if (k8s_format_microtime(last_observed, when, sizeof(when)) < 0)
        return err_set(e, -EINVAL, "k8s: series time out of range");
    /* Only `series` is sent: a merge patch leaves every other field as stored, so the head
     * Event's note and eventTime stay those of the first occurrence (as with client-go), and
     * the body carries nothing that events.k8s.io's update validation treats as immutable. */
    json_t *root = json_pack("{s:{s:i,s:s}}", "series", "count", count, "lastObservedTime", when);
    if (!root)
        return err_set(e, -ENOMEM, "k8s: out of memory building the series patch");
    char *out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!out)
        return err_set(e, -ENOMEM, "k8s: out of memory serialising the series patch");
    *ret_json = out;
    return 0;
}
