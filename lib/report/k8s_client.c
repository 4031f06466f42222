/* SPDX-License-Identifier: Apache-2.0 */
/* The requests to the apiserver over libcurl: one handle kept across retries with backoff,
 * bodies capped as they arrive, errors worded from the reply; the pod's uid looked up, and the
 * Event created or its series patched. */
#include "report/k8s_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "report/k8s_reply.h"
#include "base/util.h"

#ifndef CLRATTACH_VERSION
#define CLRATTACH_VERSION "0"
#endif

#define BACKOFF_BASE_MS 200
#define BACKOFF_CAP_MS  5000

/* What one exchange produced. The body is capped in the write callback, never after. */
struct reply {
    long status;
    char *body;
    size_t len;
    bool too_big;
    bool json; /* Content-Type application/json: only then is the body parsed (APF's 429 is
                  text/plain) */
    long retry_after_s;
    CURLcode cc;
    char curl_err[CURL_ERROR_SIZE];
};

struct session {
    const struct k8s_config *cfg;
    CURL *curl;
    struct k8s_token tok;
    int64_t deadline_ms;
    bool token_retried; /* the one re-read after a 401 is spent */
    struct k8s_report_outcome *out;
};

static void reply_reset(struct reply *r)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
}

size_t k8s_client_body_append(char **body, size_t *len, size_t cap, bool *too_big, const char *data,
                              size_t n)
{
    if (n > cap - *len) {
        /* Returning short makes libcurl abort with CURLE_WRITE_ERROR: a hostile or broken
         * server cannot make us buffer without bound. */
        *too_big = true;
        return 0;
    }
    /* Growing per chunk is fine at these sizes (a Status is < 1 KiB, a pod a few KiB). */
    char *nb = realloc(*body, *len + n + 1);
    if (!nb)
        return 0;
    memcpy(nb + *len, data, n);
    *len += n;
    nb[*len] = '\0';
    *body = nb;
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct reply *r = userdata;
    return k8s_client_body_append(&r->body, &r->len, K8S_RESPONSE_MAX, &r->too_big, data,
                                  size * nmemb);
}

static int sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* Exponential backoff with jitter in [d/2, d]: callers that fail together (many pods after an
 * apiserver restart) should not come back together. */
static long backoff_ms(int attempt)
{
    long d = BACKOFF_BASE_MS;
    for (int i = 1; i < attempt && d < BACKOFF_CAP_MS; i++)
        d *= 2;
    if (d > BACKOFF_CAP_MS)
        d = BACKOFF_CAP_MS;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
        rnd = (uint32_t)util_now_ms();
    return d / 2 + (long)(rnd % (uint32_t)(d / 2 + 1));
}

/* No proxy, whatever the *_proxy environment variables say: an empty CURLOPT_PROXY overrides
 * them. A libcurl built without proxy support (the static build's) knows no such option and
 * has no proxy to use: that is the same guarantee. */
static bool no_proxy(CURL *c)
{
    CURLcode cc = curl_easy_setopt(c, CURLOPT_PROXY, "");
    return cc == CURLE_OK || cc == CURLE_UNKNOWN_OPTION;
}

/* No CA directory, only the CA file. A TLS backend that cannot read CA directories at all
 * refuses the option as not built in: nothing to clear. */
static bool no_ca_path(CURL *c)
{
    CURLcode cc = curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    return cc == CURLE_OK || cc == CURLE_NOT_BUILT_IN;
}

int k8s_client_secure_handle(void *curl, const struct k8s_config *cfg, struct cla_error *e)
{
    CURL *c = curl;
    /* Only the CA file is trusted (CAPATH cleared: a static binary has no distro CA bundle, and
     * the cluster CA is the one that signed the apiserver), only https, no redirects, no proxy
     * from the environment: the bearer token must reach the apiserver and nothing else. */
    bool ok = curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_path) == CURLE_OK && no_ca_path(c) &&
              curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https") == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https") == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK && no_proxy(c) &&
              curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, cfg->connect_timeout_ms) == CURLE_OK &&
              curl_easy_setopt(c, CURLOPT_USERAGENT, "clrattach/" CLRATTACH_VERSION) == CURLE_OK;
    if (!ok)
        return err_set(e, -EPROTO, "k8s: libcurl lacks a required option (https-only, TLS)");
    return 0;
}

static int setup_handle(struct session *s, struct cla_error *e)
{
    int r = k8s_client_secure_handle(s->curl, s->cfg, e);
    if (r == 0 && curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK)
        r = err_set(e, -EPROTO, "k8s: libcurl lacks a required option (https-only, TLS)");
    return r;
}

/* The request's headers into *ret (caller frees, also on failure): the token, JSON, and the
 * body's media type. Returns false when out of memory. */
static bool build_headers(const char *auth, const char *body, bool patch, struct curl_slist **ret)
{
    /* The apiserver answers 415 to a PATCH in plain JSON: the patch type is the media type. A
     * merge patch is enough for `series` (an object of scalars) and is what every group
     * accepts, unlike strategic merge, which custom and aggregated APIs refuse. */
    const char *const hdrs[] = {auth, "Accept: application/json",
                                !body   ? NULL
                                : patch ? "Content-Type: application/merge-patch+json"
                                        : "Content-Type: application/json"};
    struct curl_slist *t;
    for (size_t i = 0; i < ARRAY_SIZE(hdrs) && hdrs[i]; i++) {
        if (!(t = curl_slist_append(*ret, hdrs[i])))
            return false;
        *ret = t;
    }
    return true;
}

/* Status, media type and Retry-After of a response that came back. */
static void read_reply_info(CURL *c, struct reply *r)
{
    char *ct = NULL;
    curl_off_t ra = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    r->json = ct && strncmp(ct, "application/json", 16) == 0;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        r->retry_after_s = ra > K8S_RETRY_AFTER_MAX_S ? K8S_RETRY_AFTER_MAX_S : (long)ra;
}

/* One exchange on the kept handle (keep-alive across retries): GET without a body, POST or
 * PATCH with one. PATCH rides on libcurl's POST machinery with the method name replaced. */
static void do_request(struct session *s, const char *method, const char *path, const char *body,
                       struct reply *r)
{
    bool patch = strcmp(method, "PATCH") == 0;
    CURL *c = s->curl;
    char url[K8S_URL_MAX + 512];
    snprintf(url, sizeof(url), "%s%s", s->cfg->api_url, path);

    /* The header holds the token; it is wiped once the request is done. */
    char auth[K8S_TOKEN_MAX + 32];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s->tok.value);
    struct curl_slist *h = NULL;
    if (!build_headers(auth, body, patch, &h)) {
        r->cc = CURLE_OUT_OF_MEMORY;
        goto out;
    }
    /* A request never outlives the report's budget, so a hanging server costs at most what
     * the caller allowed for the whole report. */
    int64_t left = s->deadline_ms - util_now_ms();
    long timeout = s->cfg->total_timeout_ms;
    if (left < timeout)
        timeout = left > 1 ? (long)left : 1;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->curl_err);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    /* Set on every request, NULL included: the handle is reused, and a PATCH left over from
     * the previous request would turn a later POST into one. */
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, patch ? "PATCH" : NULL);

    r->cc = curl_easy_perform(c);
    if (r->cc == CURLE_OK)
        read_reply_info(c, r);
out:
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    explicit_bzero(auth, sizeof(auth));
}

/* libcurl result to errno, and whether another try could help. A certificate that does not
 * verify will not verify on the next try either. */
static int transport_errno(CURLcode cc, bool *retry)
{
    *retry = true;
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return -ECONNRESET;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM: *retry = false; return -EACCES;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_WRITE_ERROR:
    case CURLE_OUT_OF_MEMORY: *retry = false; return -EPROTO;
    default: return -EIO;
    }
}

static void log_attempt(struct session *s, const char *method, const struct reply *r, long elapsed)
{
    struct k8s_report_outcome *o = s->out;
    o->attempts++;
    o->http_status = (int)r->status;
    if (o->n_log < K8S_ATTEMPT_LOG_MAX) {
        struct k8s_attempt *a = &o->log[o->n_log++];
        snprintf(a->method, sizeof(a->method), "%s", method);
        a->http_status = (int)r->status;
        a->curl_code = (int)r->cc;
        a->elapsed_ms = elapsed;
        a->slept_ms = 0;
    }
}

static bool status_retryable(long st)
{
    return st == 429 || st == 500 || st == 502 || st == 503 || st == 504;
}

/*
 * Sends until a final answer: returns 0 with *r holding the last HTTP response (any status;
 * 429/5xx only when attempts or budget ran out), or a negative errno for a transport failure.
 * *ret_maybe_sent tells whether an earlier try may have reached the server (transport error
 * or 5xx), which is what makes a 409 on a create mean "ours". Retrying a series PATCH is safe
 * for the same reason a POST is: the body sets absolute values, so applying it twice leaves
 * the same object.
 */
static int send_with_retries(struct session *s, const char *method, const char *path,
                             const char *body, struct reply *r, bool *ret_maybe_sent,
                             struct cla_error *e)
{
    bool maybe_sent = false;
    for (;;) {
        reply_reset(r);
        int tr = k8s_token_refresh(s->cfg, &s->tok, false, util_now_ms(), e);
        if (tr < 0)
            return tr;
        int64_t t0 = util_now_ms();
        do_request(s, method, path, body, r);
        log_attempt(s, method, r, (long)(util_now_ms() - t0));

        long wait = 0;
        int terr = 0;
        if (r->cc != CURLE_OK) {
            bool retry;
            terr = transport_errno(r->cc, &retry);
            if (r->too_big)
                return err_set(e, -EPROTO, "k8s: %s %s: reply larger than %d bytes", method, path,
                               K8S_RESPONSE_MAX);
            err_set(e, terr, "k8s: %s %s: %s", method, path,
                    r->curl_err[0] ? r->curl_err : curl_easy_strerror(r->cc));
            if (terr == -EACCES)
                err_hint(e, "the API server's certificate does not verify against '%s'",
                         s->cfg->ca_path);
            if (!retry)
                return terr;
            maybe_sent = true;
            wait = backoff_ms(s->out->attempts);
        } else if (r->status == 401 && !s->token_retried) {
            /* client-go drops its cached token on any 401; the kubelet may have rotated it
             * since we read it. One re-read, then the 401 is final. */
            s->token_retried = true;
            if ((tr = k8s_token_refresh(s->cfg, &s->tok, true, util_now_ms(), e)) < 0)
                return tr;
            if (s->out->attempts < s->cfg->max_attempts)
                continue;
            break;
        } else if (status_retryable(r->status)) {
            if (r->status != 429)
                maybe_sent = true;
            wait = r->retry_after_s > 0 ? r->retry_after_s * 1000 : backoff_ms(s->out->attempts);
        } else {
            break;
        }

        if (s->out->attempts >= s->cfg->max_attempts || util_now_ms() + wait >= s->deadline_ms) {
            if (terr < 0)
                return err_prefix(e, "gave up after %d attempts", s->out->attempts);
            break;
        }
        if (s->out->n_log > 0)
            s->out->log[s->out->n_log - 1].slept_ms = wait;
        sleep_ms(wait);
    }
    *ret_maybe_sent = maybe_sent;
    return 0;
}

/* Text bodies (APF's 429, proxies) are shown cut and with control bytes masked. */
static void body_excerpt(const struct reply *r, char detail[static 161])
{
    size_t n = k8s_utf8_copy(r->body ? r->body : "", 160, detail);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)detail[i] < 0x20 || detail[i] == 0x7f)
            detail[i] = ' ';
}

/* The error for a final answer other than the one expected, with the Status message and causes
 * when the body is a JSON Status. */
static int http_error(const struct session *s, const char *what, const struct reply *r,
                      struct cla_error *e)
{
    char detail[CLA_ERR_MSG_MAX];
    struct k8s_status st;
    if (r->json && r->body && k8s_status_parse(r->body, r->len, &st, NULL) == 0)
        k8s_status_describe(&st, detail, sizeof(detail));
    else
        body_excerpt(r, detail);
    int code;
    switch (r->status) {
    case 400:
    case 422: code = -EINVAL; break;
    case 401:
    case 403: code = -EACCES; break;
    case 404: code = -ENOENT; break;
    case 409: code = -EEXIST; break;
    default: code = status_retryable(r->status) ? -EAGAIN : -EPROTO;
    }
    err_set(e, code, "k8s: %s: HTTP %ld after %d attempts: %s", what, r->status, s->out->attempts,
            detail);
    const char *ns = s->cfg->namespace_;
    if (r->status == 403 && strstr(what, "pods"))
        err_hint(e,
                 "RBAC: grant the pod's service account verbs [get] on resources [pods] in "
                 "apiGroups [\"\"] in namespace %s, or set CLRATTACH_POD_UID",
                 ns);
    else if (r->status == 403)
        err_hint(e,
                 "RBAC: grant the pod's service account verbs [%s] on resources "
                 "[events] in apiGroups [\"events.k8s.io\", \"\"] in namespace %s",
                 strncmp(what, "PATCH", 5) == 0 ? "create, patch" : "create", ns);
    else if (r->status == 401)
        err_hint(e, "the token in '%s' is not accepted, even after re-reading it",
                 s->cfg->token_path);
    else if (r->status >= 200 && r->status < 300)
        err_hint(e,
                 "the API server answers a create with 201 and a series PATCH with 200: is "
                 "something else answering at %s?",
                 s->cfg->api_url);
    return code;
}

/* Whether the answer to a create (201) or a series PATCH (200) shows `name` stored: only the
 * Event itself, in JSON, does. A proxy's page or a reply cut short proves nothing, and a report
 * counted as done on it would never be retried or noticed. */
static int stored_event(const struct session *s, const char *what, const struct reply *r,
                        const char *name, struct cla_error *e)
{
    char detail[161];
    int rc;
    if (r->json) {
        rc = k8s_event_reply_check(r->body ? r->body : "", r->len, name, e);
        if (rc < 0)
            err_prefix(e, "%s: HTTP %ld", what, r->status);
    } else {
        body_excerpt(r, detail);
        rc = err_set(e, -EPROTO, "k8s: %s: HTTP %ld with a body that is not JSON: %s", what,
                     r->status, detail);
    }
    if (rc < 0)
        err_hint(e, "the Event is not counted as reported: is something else answering at %s?",
                 s->cfg->api_url);
    return rc;
}

/* Without the uid an Event is stored but never shown by `kubectl describe pod`, so a failed
 * lookup fails the report (with an RBAC hint for 403) rather than posting a hidden Event. */
static int get_pod_uid(struct session *s, struct k8s_pod_ref *pod, struct cla_error *e)
{
    char path[K8S_NAME_MAX + K8S_LABEL_MAX + 64], what[sizeof(path) + 8];
    struct reply r = {0};
    bool maybe_sent;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", pod->namespace_, pod->name);
    snprintf(what, sizeof(what), "GET %s", path);
    int ret = send_with_retries(s, "GET", path, NULL, &r, &maybe_sent, e);
    if (ret < 0)
        goto out;
    if (r.status != 200) {
        ret = http_error(s, what, &r, e);
        goto out;
    }
    if ((ret = k8s_pod_parse_uid(r.body ? r.body : "", r.len, pod->name, pod->namespace_, pod->uid,
                                 e)) < 0)
        err_prefix(e, "%s", what);
out:
    reply_reset(&r);
    return ret;
}

/* Name of the event in a body we built (for the outcome). */
static void body_name(const char *body, char *dst, size_t size)
{
    json_t *root = json_loads(body, 0, NULL);
    const char *n = json_string_value(json_object_get(json_object_get(root, "metadata"), "name"));
    snprintf(dst, size, "%s", n ? n : "");
    json_decref(root);
}

/* A 404 from the events.k8s.io path means "group not served" when it names no object: a
 * missing namespace comes back with details.name set and must not trigger the fallback. */
static bool group_missing(const struct reply *r)
{
    struct k8s_status st;
    if (!r->json || !r->body || k8s_status_parse(r->body, r->len, &st, NULL) < 0)
        return true;
    return st.details_name[0] == '\0';
}

static int post_event(struct session *s, const struct k8s_pod_ref *pod,
                      const struct k8s_event_spec *ev, bool core, struct reply *r,
                      struct cla_error *e)
{
    _cleanup_free_ char *body = NULL;
    char path[K8S_LABEL_MAX + 64], what[sizeof(path) + 8];
    bool maybe_sent = false;
    int ret = k8s_event_build(pod, ev, core, &body, e);
    if (ret < 0)
        return ret;
    body_name(body, s->out->event_name, sizeof(s->out->event_name));
    s->out->used_core_v1 = core;
    snprintf(path, sizeof(path),
             core ? "/api/v1/namespaces/%s/events" : "/apis/events.k8s.io/v1/namespaces/%s/events",
             pod->namespace_);
    snprintf(what, sizeof(what), "POST %s", path);
    if ((ret = send_with_retries(s, "POST", path, body, r, &maybe_sent, e)) < 0)
        return ret;
    /* The apiserver answers every create with 201 Created and the object stored. */
    if (r->status == 201)
        return stored_event(s, what, r, s->out->event_name, e);
    /* Our own earlier try was stored but its answer lost: the recorders treat this as done. */
    if (r->status == 409 && maybe_sent)
        return 0;
    if (r->status == 404 && !core && group_missing(r))
        return 1;
    return http_error(s, what, r, e);
}

/* Checks the arguments common to both entry points and fills the pod's namespace from cfg. */
static int check_args(const struct k8s_config *cfg, struct k8s_pod_ref *pod, struct cla_error *e)
{
    if (!pod->namespace_[0])
        memcpy(pod->namespace_, cfg->namespace_, sizeof(pod->namespace_));
    if (!k8s_is_dns1123_label(pod->namespace_) || !k8s_is_dns1123_subdomain(pod->name))
        return err_set(e, -EINVAL, "k8s: pod name or namespace is not a valid object name");
    if (cfg->max_attempts < 1)
        return err_set(e, -EINVAL, "k8s: max_attempts must be at least 1");
    return 0;
}

/* A session holds one easy handle and the token for the whole report, so the retry budget,
 * the single 401 re-read and keep-alive span the PATCH and any POST that follows it. */
static int session_open(const struct k8s_config *cfg, struct k8s_report_outcome *out,
                        struct session **ret, struct cla_error *e)
{
    struct session *s = calloc(1, sizeof(*s));
    if (!s)
        return err_set(e, -ENOMEM, "k8s: out of memory");
    s->cfg = cfg;
    s->out = out;
    s->deadline_ms = util_now_ms() + cfg->retry_budget_ms;
    /* Reference-counted since libcurl 7.84, so pairing it with cleanup here does not disturb
     * another libcurl user in the process. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(s);
        return err_set(e, -EIO, "k8s: libcurl initialisation failed");
    }
    int rc;
    if (!(s->curl = curl_easy_init()))
        rc = err_set(e, -ENOMEM, "k8s: curl_easy_init failed");
    else
        rc = setup_handle(s, e);
    if (rc < 0) {
        curl_easy_cleanup(s->curl);
        curl_global_cleanup();
        free(s);
        return rc;
    }
    *ret = s;
    return 0;
}

static void session_close(struct session *s)
{
    if (!s)
        return;
    curl_easy_cleanup(s->curl);
    curl_global_cleanup();
    explicit_bzero(&s->tok, sizeof(s->tok));
    free(s);
}

/* The create path: pod GET when the uid is unknown, POST to events.k8s.io, core/v1 on a 404
 * for the group. */
static int create_event(struct session *s, struct k8s_pod_ref *pod, const struct k8s_event_spec *ev,
                        struct cla_error *e)
{
    struct reply r = {0};
    int rc = 0;
    if (!pod->uid[0] && (rc = get_pod_uid(s, pod, e)) < 0)
        return rc;
    rc = post_event(s, pod, ev, false, &r, e);
    if (rc == 1) {
        reply_reset(&r);
        rc = post_event(s, pod, ev, true, &r, e);
    }
    reply_reset(&r);
    if (rc < 0)
        return rc;
    s->out->series_count = 1;
    return 0;
}

/* PATCHes the head's series to head->count + 1. Returns 0 when applied, 1 when the Event is
 * gone (404), or a negative errno. */
static int patch_series(struct session *s, const struct k8s_series_head *se,
                        const struct k8s_event_spec *ev, struct cla_error *e)
{
    _cleanup_free_ char *body = NULL;
    char path[K8S_LABEL_MAX + K8S_NAME_MAX + 64], what[sizeof(path) + 8];
    struct reply r = {0};
    bool maybe_sent;
    int rc = k8s_series_patch_build(se->count + 1, &ev->event_time, &body, e);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path),
             se->core ? "/api/v1/namespaces/%s/events/%s"
                      : "/apis/events.k8s.io/v1/namespaces/%s/events/%s",
             se->namespace_, se->name);
    snprintf(what, sizeof(what), "PATCH %s", path);
    s->out->used_core_v1 = se->core;
    snprintf(s->out->event_name, sizeof(s->out->event_name), "%s", se->name);
    if ((rc = send_with_retries(s, "PATCH", path, body, &r, &maybe_sent, e)) < 0)
        goto out;
    if (r.status == 200)
        rc = stored_event(s, what, &r, se->name, e);
    else if (r.status == 404)
        /* The apiserver drops Events after its --event-ttl (1 h by default), and anyone may
         * delete one; client-go then creates a new Event, and so do we. */
        rc = 1;
    else
        rc = http_error(s, what, &r, e);
out:
    reply_reset(&r);
    return rc;
}

int k8s_report_event_or_patch(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                              const struct k8s_event_spec *ev, const struct k8s_series_head *head,
                              struct k8s_report_outcome *ret, struct cla_error *e)
{
    memset(ret, 0, sizeof(*ret));
    struct session *s = NULL;
    int rc = check_args(cfg, pod, e);
    if (rc < 0 || (rc = session_open(cfg, ret, &s, e)) < 0)
        return rc;
    if (head) {
        rc = patch_series(s, head, ev, e);
        if (rc == 0) {
            ret->patched = true;
            ret->series_count = head->count + 1;
            goto out;
        }
        if (rc < 0)
            goto out;
        /* Gone: a new Event heads the series from now on. */
        ret->used_core_v1 = false;
        ret->event_name[0] = '\0';
    }
    rc = create_event(s, pod, ev, e);
out:
    session_close(s);
    return rc < 0 ? rc : 0;
}

int k8s_report_event(const struct k8s_config *cfg, struct k8s_pod_ref *pod,
                     const struct k8s_event_spec *ev, struct k8s_report_outcome *ret,
                     struct cla_error *e)
{
    return k8s_report_event_or_patch(cfg, pod, ev, NULL, ret, e);
}
