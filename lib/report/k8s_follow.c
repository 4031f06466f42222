/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The follower's pods: list, watch from the list's resourceVersion (bookmarks move it on), a
 * relist on 410 Gone, back-off with jitter after a failure, a watch silent past its timeout
 * restarted; and the libcurl multi handle driven by the caller's poll (socket and timer
 * callbacks, never curl_multi_poll).
 */
#include "report/k8s_follow_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/util.h"
#include "report/k8s_client.h"
#include "report/k8s_event.h"

/* A list gets this long in all; a watch has no total timeout (its stall deadline instead). */
#define LIST_TIMEOUT_MS 120000

void follow_log(struct k8s_follow *f, const char *fmt, ...)
{
    if (!f->o.hooks.on_log)
        return;
    va_list ap;
    va_start(ap, fmt);
    f->o.hooks.on_log(f->o.hooks.userdata, fmt, ap);
    va_end(ap);
}

int k8s_follow_path(char *buf, size_t size, const char *node, const char *rv, long timeout_s)
{
    int n;
    if (!rv)
        n = snprintf(buf, size, "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", node);
    else
        n = snprintf(buf, size,
                     "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s&watch=1"
                     "&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld",
                     node, rv, timeout_s);
    return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

int64_t k8s_follow_backoff_ms(unsigned failures, uint32_t rnd)
{
    if (failures == 0)
        return 0;
    int64_t ms = K8S_FOLLOW_BACKOFF_FIRST_MS;
    for (unsigned i = 1; i < failures && ms < K8S_FOLLOW_BACKOFF_MAX_MS; i++)
        ms *= 2;
    if (ms > K8S_FOLLOW_BACKOFF_MAX_MS)
        ms = K8S_FOLLOW_BACKOFF_MAX_MS;
    return ms / 2 + (int64_t)(rnd % (uint32_t)(ms / 2 + 1));
}

/* ---- the multi handle and its sockets ---------------------------------------------------- */

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    (void)socketp;
    struct k8s_follow *f = userp;
    size_t i = 0;
    while (i < f->n_socks && f->socks[i].fd != s)
        i++;
    if (what == CURL_POLL_REMOVE) {
        if (i < f->n_socks)
            f->socks[i] = f->socks[--f->n_socks];
        return 0;
    }
    if (i == f->n_socks) {
        if (f->n_socks == K8S_FOLLOW_FDS_MAX)
            return -1; /* libcurl fails that transfer: more sockets than we ever open */
        f->n_socks++;
    }
    f->socks[i].fd = s;
    f->socks[i].what = what;
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct k8s_follow *f = userp;
    f->timer_at = timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
    return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata);

long follow_xfer_status(const struct xfer *x)
{
    long st = 0;
    if (x->easy)
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &st);
    return st;
}

static void free_headers(struct curl_slist *h)
{
    /* The first header holds the token. */
    for (struct curl_slist *p = h; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data));
    curl_slist_free_all(h);
}

static bool xfer_headers(struct k8s_follow *f, struct xfer *x, struct cla_error *e)
{
    if (k8s_token_refresh(f->o.cfg, &f->tok, f->token_force, util_now_ms(), e) < 0)
        return false;
    f->token_force = false;
    char auth[K8S_TOKEN_MAX + 32];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", f->tok.value);
    struct curl_slist *t = curl_slist_append(NULL, auth);
    explicit_bzero(auth, sizeof(auth));
    if (t)
        x->hdrs = t;
    if (!t || !(t = curl_slist_append(x->hdrs, "Accept: application/json"))) {
        err_set(e, -ENOMEM, "out of memory");
        return false;
    }
    return true;
}

int follow_xfer_start(struct k8s_follow *f, struct xfer *x, const char *path, size_t cap,
                      long timeout_ms, struct cla_error *e)
{
    char url[K8S_URL_MAX + 1024];
    snprintf(url, sizeof(url), "%s%s", f->o.cfg->api_url, path);
    x->f = f;
    x->cap = cap;
    x->len = 0;
    x->too_big = x->feed_failed = false;
    err_clear(&x->feed_err);
    if (!(x->easy = curl_easy_init()))
        return err_set(e, -ENOMEM, "k8s: curl_easy_init failed");
    int r = k8s_client_secure_handle(x->easy, f->o.cfg, e);
    if (r == 0 && !xfer_headers(f, x, e))
        r = e->code < 0 ? e->code : -ENOMEM;
    if (r == 0) {
        curl_easy_setopt(x->easy, CURLOPT_URL, url);
        curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
        curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
        curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPALIVE, 1L);
        if (curl_multi_add_handle(f->multi, x->easy) != CURLM_OK)
            r = err_set(e, -EIO, "k8s: curl_multi_add_handle failed");
    }
    if (r < 0) {
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
        free_headers(x->hdrs);
        x->hdrs = NULL;
    }
    return r;
}

void follow_xfer_end(struct k8s_follow *f, struct xfer *x)
{
    if (x->easy) {
        curl_multi_remove_handle(f->multi, x->easy);
        curl_easy_cleanup(x->easy);
    }
    x->easy = NULL;
    free_headers(x->hdrs);
    x->hdrs = NULL;
    free(x->body);
    x->body = NULL;
    x->len = 0;
}

/* ---- the pods ---------------------------------------------------------------------------- */

static int on_event(const struct k8s_watch_event *ev, void *userdata, struct cla_error *e)
{
    struct k8s_follow *f = userdata;
    const struct k8s_follow_hooks *h = &f->o.hooks;
    f->st.events++;
    switch (ev->type) {
    case K8S_WATCH_ADDED:
    case K8S_WATCH_MODIFIED:
    case K8S_WATCH_DELETED:
        if (h->on_pod)
            h->on_pod(ev->type == K8S_WATCH_DELETED ? K8S_FOLLOW_DELETE : K8S_FOLLOW_UPSERT,
                      &ev->pod, h->userdata);
        break;
    case K8S_WATCH_BOOKMARK: f->st.bookmarks++; break;
    case K8S_WATCH_ERROR:
        if (ev->status.code == 410) {
            f->gone = true;
            return err_set(e, -ESTALE, "the resourceVersion expired (410 Gone)");
        }
        return err_set(e, -EPROTO, "the watch sent an ERROR (code %d)", ev->status.code);
    }
    if (ev->pod.resource_version[0])
        memcpy(f->st.resource_version, ev->pod.resource_version, sizeof(f->st.resource_version));
    return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;
    struct k8s_follow *f = x->f;
    size_t n = size * nmemb;
    if (x->ns < 0)
        f->last_byte_ms = util_now_ms();
    if (x->watch && follow_xfer_status(x) == 200) {
        if (k8s_watch_feed(f->stream, data, n, on_event, f, &x->feed_err) < 0) {
            x->feed_failed = true;
            return 0; /* libcurl ends the transfer: relisted or rewatched from the last version */
        }
        return n;
    }
    return k8s_client_body_append(&x->body, &x->len, x->cap, &x->too_big, data, n);
}

/* A failed request: the next one after the back-off; a list again when asked. */
static void main_failed(struct k8s_follow *f, int64_t now, const char *what, const char *why)
{
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)now;
    f->failures++;
    f->st.failures++;
    f->phase = PH_WAIT;
    f->wake_ms = now + k8s_follow_backoff_ms(f->failures, rnd);
    follow_log(f, "%s failed (%s); again in %lld ms", what, why, (long long)(f->wake_ms - now));
}

static void start_main(struct k8s_follow *f, int64_t now)
{
    char path[K8S_NAME_MAX + K8S_RESOURCE_VERSION_MAX + 256];
    bool list = f->want_list || !f->st.resource_version[0];
    struct cla_error e = {0};
    int r = k8s_follow_path(path, sizeof(path), f->node, list ? NULL : f->st.resource_version,
                            f->o.watch_timeout_s);
    f->main.ns = -1;
    f->main.watch = !list;
    f->gone = false;
    k8s_watch_stream_freep(&f->stream);
    if (!list && r == 0 && !(f->stream = k8s_watch_stream_new()))
        r = err_set(&e, -ENOMEM, "out of memory");
    if (r == 0)
        r = follow_xfer_start(f, &f->main, path, list ? K8S_LIST_MAX : K8S_STATUS_MAX,
                              list ? LIST_TIMEOUT_MS : 0, &e);
    if (r < 0) {
        main_failed(f, now, list ? "list" : "watch", e.msg[0] ? e.msg : "no request");
        return;
    }
    f->phase = list ? PH_LIST : PH_WATCH;
    f->last_byte_ms = now;
    if (list)
        f->st.lists++;
    else
        f->st.watches++;
}

static void list_done(struct k8s_follow *f, int64_t now)
{
    const struct k8s_follow_hooks *h = &f->o.hooks;
    struct k8s_pod_list l = {0};
    struct cla_error e = {0};
    if (k8s_pod_list_parse(f->main.body, f->main.len, &l, &e) < 0) {
        main_failed(f, now, "list", e.msg);
        return;
    }
    if (h->on_pod)
        h->on_pod(K8S_FOLLOW_SYNC_BEGIN, NULL, h->userdata);
    for (size_t i = 0; i < l.n_items; i++)
        if (h->on_pod)
            h->on_pod(K8S_FOLLOW_UPSERT, &l.items[i], h->userdata);
    if (h->on_pod)
        h->on_pod(K8S_FOLLOW_SYNC_END, NULL, h->userdata);
    memcpy(f->st.resource_version, l.resource_version, sizeof(f->st.resource_version));
    follow_log(f, "listed %zu pods of node %s at resourceVersion %s", l.n_items, f->node,
               l.resource_version);
    k8s_pod_list_free(&l);
    f->st.synced = true;
    f->want_list = false;
    f->failures = 0;
    f->phase = PH_WAIT;
    f->wake_ms = now; /* the watch starts at once */
}

/* A watch ended: the server's timeout (watch again from the last version), 410 (relist), or a
 * failure (back off). */
static void watch_done(struct k8s_follow *f, CURLcode cc, long status, int64_t now)
{
    if (f->gone || status == 410) {
        f->st.gone++;
        follow_log(f, "watch: the resourceVersion expired (410 Gone); relisting");
        f->want_list = true;
        f->phase = PH_WAIT;
        f->wake_ms = now;
        return;
    }
    if (f->main.feed_failed) {
        f->want_list = true; /* a line we refused: start over from a list */
        main_failed(f, now, "watch", f->main.feed_err.msg);
        return;
    }
    if (cc == CURLE_OK && status == 200) {
        f->failures = 0;
        f->phase = PH_WAIT;
        f->wake_ms = now;
        return;
    }
    char why[CURL_ERROR_SIZE + 32];
    snprintf(why, sizeof(why), "HTTP %ld, %s", status, curl_easy_strerror(cc));
    main_failed(f, now, "watch", why);
}

static void main_done(struct k8s_follow *f, CURLcode cc, int64_t now)
{
    long status = follow_xfer_status(&f->main);
    if (status == 401)
        f->token_force = true;
    if (f->phase == PH_LIST) {
        if (cc == CURLE_OK && status == 200) {
            list_done(f, now);
        } else {
            char why[CURL_ERROR_SIZE + 32];
            snprintf(why, sizeof(why), "HTTP %ld, %s%s", status, curl_easy_strerror(cc),
                     f->main.too_big ? ", above the cap" : "");
            main_failed(f, now, "list", why);
        }
    } else {
        watch_done(f, cc, status, now);
    }
    follow_xfer_end(f, &f->main);
    k8s_watch_stream_freep(&f->stream);
}

/* A watch that sent nothing (not even its end) past its timeout and the slack is stalled: a
 * half-open connection, a proxy that holds it. Ended and started again. */
static void check_stall(struct k8s_follow *f, int64_t now)
{
    if (f->phase != PH_WATCH ||
        now < f->last_byte_ms + f->o.watch_timeout_s * 1000 + f->o.stall_slack_ms)
        return;
    f->st.stalls++;
    follow_xfer_end(f, &f->main);
    k8s_watch_stream_freep(&f->stream);
    main_failed(f, now, "watch", "nothing came past its timeout: stalled");
}

static void read_done(struct k8s_follow *f, int64_t now)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(f->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct xfer *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode cc = m->data.result;
        if (x == &f->main)
            main_done(f, cc, now);
        else if (x)
            follow_ns_done(f, x, cc, now);
    }
}

void k8s_follow_step(struct k8s_follow *f, const struct pollfd *fds, size_t n, int64_t now_ms)
{
    int running = 0;
    for (size_t i = 0; i < n; i++) {
        short re = fds[i].revents;
        if (!re)
            continue;
        int ev = ((re & (POLLIN | POLLHUP)) ? CURL_CSELECT_IN : 0) |
                 ((re & POLLOUT) ? CURL_CSELECT_OUT : 0) | ((re & POLLERR) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(f->multi, fds[i].fd, ev, &running);
    }
    if (f->timer_at >= 0 && util_now_ms() >= f->timer_at) {
        f->timer_at = -1;
        curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    now_ms = util_now_ms();
    read_done(f, now_ms);
    check_stall(f, now_ms);
    if (f->phase == PH_WAIT && now_ms >= f->wake_ms)
        start_main(f, now_ms);
    follow_ns_start(f, now_ms);
}

size_t k8s_follow_fds(struct k8s_follow *f, struct pollfd *fds, size_t max, int64_t *until_ms)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_socks && n < max; i++) {
        short ev = 0;
        if (f->socks[i].what & CURL_POLL_IN)
            ev |= POLLIN;
        if (f->socks[i].what & CURL_POLL_OUT)
            ev |= POLLOUT;
        fds[n++] = (struct pollfd){.fd = f->socks[i].fd, .events = ev};
    }
    int64_t at = INT64_MAX;
    if (f->timer_at >= 0)
        at = f->timer_at;
    if (f->phase == PH_WAIT && f->wake_ms < at)
        at = f->wake_ms;
    if (f->phase == PH_WATCH) {
        int64_t stall = f->last_byte_ms + f->o.watch_timeout_s * 1000 + f->o.stall_slack_ms;
        if (stall < at)
            at = stall;
    }
    if (at < *until_ms)
        *until_ms = at;
    return n;
}

int k8s_follow_new(const struct k8s_follow_opts *o, struct k8s_follow **ret, struct cla_error *e)
{
    if (!o->node || strlen(o->node) > K8S_NAME_MAX || !k8s_is_dns1123_subdomain(o->node))
        return err_set(e, -EINVAL, "agent: the node name is not a DNS-1123 subdomain");
    struct k8s_follow *f = calloc(1, sizeof(*f));
    if (!f)
        return err_set(e, -ENOMEM, "out of memory");
    f->o = *o;
    if (f->o.watch_timeout_s <= 0)
        f->o.watch_timeout_s = K8S_WATCH_TIMEOUT_S;
    /* A tenth of the timeout, from 5 s up to K8S_WATCH_STALL_SLACK_MS: a short watch (tests)
     * is found stalled sooner. */
    if (f->o.stall_slack_ms <= 0)
        f->o.stall_slack_ms = f->o.watch_timeout_s * 100;
    if (f->o.stall_slack_ms < 5000)
        f->o.stall_slack_ms = 5000;
    if (f->o.stall_slack_ms > K8S_WATCH_STALL_SLACK_MS)
        f->o.stall_slack_ms = K8S_WATCH_STALL_SLACK_MS;
    snprintf(f->node, sizeof(f->node), "%s", o->node);
    f->timer_at = -1;
    f->phase = PH_WAIT;
    f->want_list = true;
    f->main.ns = -1;
    for (size_t i = 0; i < K8S_FOLLOW_NS_INFLIGHT; i++)
        f->nsx[i].ns = -1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(f);
        return err_set(e, -EIO, "k8s: libcurl initialisation failed");
    }
    if (!(f->multi = curl_multi_init())) {
        curl_global_cleanup();
        free(f);
        return err_set(e, -ENOMEM, "k8s: curl_multi_init failed");
    }
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
    *ret = f;
    return 0;
}

void k8s_follow_free(struct k8s_follow *f)
{
    if (!f)
        return;
    follow_xfer_end(f, &f->main);
    for (size_t i = 0; i < K8S_FOLLOW_NS_INFLIGHT; i++)
        follow_xfer_end(f, &f->nsx[i]);
    follow_ns_free(f);
    k8s_watch_stream_freep(&f->stream);
    curl_multi_cleanup(f->multi);
    curl_global_cleanup();
    explicit_bzero(&f->tok, sizeof(f->tok));
    free(f);
}

void k8s_follow_stats(const struct k8s_follow *f, struct k8s_follow_stats *ret)
{
    *ret = f->st;
}
