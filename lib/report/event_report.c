/* SPDX-License-Identifier: Apache-2.0 */
/* Reporting one attach result: where the configuration comes from (our own, or the app
 * container's service account), the Event sent once or as a series, the termination log. */
#include "report/event_report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/opfile.h"
#include "base/util.h"
#include "report/result_text.h"

extern char **environ;

/* Opens the termination log now: creating files is forbidden by the sandbox after delivery.
 * The path is written as root, so it is opened as an operator's file (opfile.h): a link, FIFO
 * or device planted under it is refused, never followed or waited on. */
static int open_termination_log(struct event_reporter *rep, struct cla_error *e)
{
    if (rep->termination_log) {
        rep->termination_fd = opfile_open_for_write(rep->termination_log, "--termination-log",
                                                    O_CREAT | O_TRUNC, 0644, e);
        return rep->termination_fd < 0 ? rep->termination_fd : 0;
    }
    /* The kubelet creates /dev/termination-log in every container; elsewhere it is absent and
     * we never create it. Anything but a regular file there is passed over just as quietly. */
    rep->termination_fd =
        opfile_open_for_write("/dev/termination-log", "--termination-log", O_TRUNC, 0, NULL);
    return 0;
}

static void set_field(char *dst, size_t size, const char *val)
{
    if (val)
        snprintf(dst, size, "%s", val);
}

/* The pod reported about: the downward-API env, overridden field by field by the options. */
static int find_pod(struct event_reporter *rep, struct cla_error *e)
{
    struct k8s_pod_ref *pod = &rep->pod;
    int r = k8s_pod_ref_from_env(environ, pod, e);
    if (r < 0 && r != -ENOENT)
        return r;
    set_field(pod->name, sizeof(pod->name), rep->pod_name);
    set_field(pod->uid, sizeof(pod->uid), rep->pod_uid);
    set_field(pod->container, sizeof(pod->container), rep->container);
    set_field(pod->namespace_, sizeof(pod->namespace_), rep->opts.namespace_);
    return 0;
}

/* Loads the configuration from rep->opts and checks there is a pod to name. */
static int load_config(struct event_reporter *rep, const char *hint, struct cla_error *e)
{
    int r = k8s_config_load(&rep->opts, &rep->cfg, e);
    if (r == 0 && !rep->pod.name[0]) {
        r = err_set(e, -ENOENT, "no pod name to report about");
        err_hint(e, "%s", hint);
    }
    return r;
}

static void enable(struct event_reporter *rep)
{
    if (!rep->pod.namespace_[0])
        set_field(rep->pod.namespace_, sizeof(rep->pod.namespace_), rep->cfg.namespace_);
    rep->enabled = true;
}

int event_report_prepare(struct event_reporter *rep, struct cla_error *ret_warning,
                         struct cla_error *e)
{
    rep->sa.token_fd = rep->sa.ca_fd = -1;
    int r = open_termination_log(rep, e);
    if (r < 0 || rep->mode == EVENT_MODE_OFF)
        return r;
    if ((r = find_pod(rep, e)) < 0)
        return r;
    if (rep->dry_run) {
        if (!rep->pod.namespace_[0])
            set_field(rep->pod.namespace_, sizeof(rep->pod.namespace_), "default");
        rep->enabled = true;
        return 0;
    }
    err_clear(e);
    /* An ephemeral container (kubectl debug) has the cluster's service env but no token of its
     * own: the app container's will be used, once the target is known. */
    if (!rep->opts.token_file && !rep->opts.sa_dir &&
        (rep->opts.api_url || getenv("KUBERNETES_SERVICE_HOST")) &&
        access(K8S_SA_DIR_DEFAULT "/token", F_OK) < 0) {
        rep->from_target = true;
        return 0;
    }
    r = load_config(rep, "set CLRATTACH_POD_NAME (downward API metadata.name) or --pod", e);
    if (r < 0 && rep->mode == EVENT_MODE_REQUIRED) {
        err_prefix(e, "--events=required");
        return r;
    }
    if (r < 0) {
        /* auto: not in a cluster, or not configured; worth a word only when it was meant to
         * be. */
        if ((r != -ENOENT || rep->opts.api_url) && ret_warning) {
            *ret_warning = *e;
            err_prefix(ret_warning, "Events off");
        }
        err_clear(e);
        return 0;
    }
    enable(rep);
    return 0;
}

int event_report_use_target(struct event_reporter *rep, const struct target *t,
                            const struct cla_error *pin_error, struct cla_error *e)
{
    rep->sa.token_fd = rep->sa.ca_fd = -1;
    int r;
    if (t) {
        r = k8s_target_sa_open(t, &rep->sa, e);
    } else {
        *e = *pin_error;
        r = e->code < 0 ? e->code : -ESRCH;
        err_prefix(e, "the target's service account");
    }
    if (r == 0) {
        rep->opts.token_file = rep->sa.token_path;
        rep->opts.ca_file = rep->sa.ca_path;
        if (!rep->opts.namespace_ && rep->sa.namespace_[0] && !rep->pod.namespace_[0])
            set_field(rep->pod.namespace_, sizeof(rep->pod.namespace_), rep->sa.namespace_);
        if (!rep->opts.namespace_ && rep->pod.namespace_[0])
            rep->opts.namespace_ = rep->pod.namespace_;
        r = load_config(rep, "set CLRATTACH_POD_NAME or --pod (HOSTNAME is the pod name in a pod)",
                        e);
    }
    if (r < 0) {
        err_prefix(e, "Events: this container has no service-account token and");
        if (!e->hint[0])
            err_hint(e, "mount the pod's kube-api-access volume into this container (kubectl "
                        "debug --custom), or pass --token-file and --ca-file");
        return r;
    }
    enable(rep);
    return 0;
}

int event_report_for_watch(struct event_reporter *rep, struct cla_error *ret_warning,
                           struct cla_error *e)
{
    if (rep->from_target) {
        /* A watcher runs for the life of the pod as its sidecar, with a token of its own. */
        if (rep->mode == EVENT_MODE_REQUIRED) {
            err_set(e, -ENOENT,
                    "--events=required: this container has no service-account token of its own");
            err_hint(e, "a watch sidecar needs automountServiceAccountToken");
            return -ENOENT;
        }
        err_set(ret_warning, -ENOENT,
                "Events off: this container has no service-account token; a watch sidecar "
                "needs automountServiceAccountToken");
        rep->from_target = false;
    }
    if (rep->enabled && !rep->dry_run && !(rep->series = k8s_series_cache_new()))
        return err_set(e, -ENOMEM, "out of memory");
    if (!(rep->limit = event_limit_new()))
        return err_set(e, -ENOMEM, "out of memory");
    return 0;
}

bool event_report_admit(struct event_reporter *rep, const struct attach_result *res,
                        const char *profiler)
{
    if (!rep->limit)
        return true;
    char key[K8S_SERIES_KEY_MAX];
    snprintf(key, sizeof(key), "%s|%08x|%s", attach_outcome_name(res->outcome),
             res->have_hresult ? res->hresult : 0u, profiler ? profiler : "-");
    return event_limit_take(rep->limit, key, util_now_ms());
}

uint64_t event_report_suppressed(const struct event_reporter *rep)
{
    return rep->limit ? event_limit_suppressed_total(rep->limit) : 0;
}

/* The first Event after suppressed ones says how many there were. */
static void note_suppressed(struct event_reporter *rep, struct result_text_event *ev)
{
    uint64_t n = rep->limit ? event_limit_take_note(rep->limit) : 0;
    if (!n)
        return;
    size_t len = strlen(ev->note);
    char add[160];
    int m = snprintf(add, sizeof(add),
                     "%s%llu earlier result(s) were not reported: rate limit (docs/events.md)",
                     len ? " " : "", (unsigned long long)n);
    /* Room is made at the end of a long note, on a UTF-8 boundary: the count must not be lost. */
    if (len + (size_t)m >= sizeof(ev->note)) {
        len = sizeof(ev->note) - 1 - (size_t)m;
        while (len > 0 && ((unsigned char)ev->note[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(ev->note + len, add, (size_t)m + 1);
}

/* One series per outcome, profiler and HRESULT: a crash-looping app attached at every start,
 * or every instance failing alike, is one Event with a count. */
static void series_key(const struct result_text_event *ev, const struct attach_result *res,
                       const char *profiler, char key[K8S_SERIES_KEY_MAX])
{
    snprintf(key, K8S_SERIES_KEY_MAX, "%s|%s|%08x|%s", ev->spec.reason,
             attach_outcome_name(res->outcome), res->have_hresult ? res->hresult : 0u,
             profiler ? profiler : "-");
}

int event_report_send(struct event_reporter *rep, const struct attach_result *res,
                      const char *profiler, const struct ipc_guid *clsid,
                      struct event_report_sent *ret, struct cla_error *e)
{
    memset(ret, 0, sizeof(*ret));
    if (!rep->enabled)
        return rep->mode == EVENT_MODE_REQUIRED ? -ENOENT : 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct result_text_event ev;
    result_text_event(res, profiler, clsid, &now, &ev);
    note_suppressed(rep, &ev);
    ret->sent = true;
    ret->reason = ev.spec.reason;
    if (rep->dry_run) {
        ret->dry_run = true;
        return k8s_event_build(&rep->pod, &ev.spec, false, &ret->body, e);
    }
    if (!rep->series)
        return k8s_report_event(&rep->cfg, &rep->pod, &ev.spec, &ret->out, e);
    char key[K8S_SERIES_KEY_MAX];
    series_key(&ev, res, profiler, key);
    return k8s_report_event_dedup(&rep->cfg, &rep->pod, &ev.spec, key, rep->series, &ret->out, e);
}

int event_report_termination_log(struct event_reporter *rep, const struct attach_result *res,
                                 const char *json, int exit_code)
{
    if (rep->termination_fd < 0)
        return 0;
    char msg[RESULT_TEXT_TERMINATION_MAX + 1];
    size_t n = result_text_termination(res, json, exit_code, msg);
    /* The kubelet reads the file once the container ends: keep only the latest result.
     * ftruncate is not on the seccomp list, so a shorter message is padded with spaces over
     * the end of a longer earlier one (JSON readers skip trailing white space). */
    size_t pad = rep->termination_len > n ? rep->termination_len - n : 0;
    if (pad > RESULT_TEXT_TERMINATION_MAX - n)
        pad = RESULT_TEXT_TERMINATION_MAX - n;
    memset(msg + n, ' ', pad);
    if (n + pad > rep->termination_len)
        rep->termination_len = n + pad;
    if (lseek(rep->termination_fd, 0, SEEK_SET) < 0 ||
        util_write_all(rep->termination_fd, msg, n + pad) < 0)
        return -errno;
    return 0;
}

void event_report_close(struct event_reporter *rep)
{
    if (rep->from_target)
        k8s_target_sa_close(&rep->sa);
    k8s_series_cache_free(rep->series);
    rep->series = NULL;
    event_limit_free(rep->limit);
    rep->limit = NULL;
    /* util_closep leaves the value set: reset it so that a second close is a no-op. */
    util_closep(&rep->termination_fd);
    rep->termination_fd = -1;
}
