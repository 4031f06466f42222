/* SPDX-License-Identifier: Apache-2.0 */
/* The otel flow: the agent's settings built, the app checked for what would make a start wrong,
 * the agent run as a startup hook (startup_hook_run, one way) and its status read back. */
#include "flow/otel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bounds.h"
#include "base/util.h"
#include "flow/startup_hook.h"
#include "profset/otel_status.h"
#include "target/rootfs.h"
#include "target/target.h"

/* The status file beside the delivered directory (the directory itself is read-only). */
#define STATUS_SUFFIX ".status.json"

/* What one run holds. */
struct otel {
    const struct otel_opts *o;
    char *env[ENV_VARS_MAX];
    size_t env_count;
    struct otel_maps maps;
    bool had_status; /* a status was there before the hook ran: its identity */
    struct stat before;
};

static void otel_free(struct otel *ot)
{
    for (size_t i = 0; i < ot->env_count; i++)
        free(ot->env[i]);
}

static int add_env(struct otel *ot, struct cla_error *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_env(struct otel *ot, struct cla_error *e, const char *fmt, ...)
{
    if (ot->env_count >= ENV_VARS_MAX)
        return err_set(e, -E2BIG, "more than %d variables with the agent's own settings",
                       ENV_VARS_MAX);
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&ot->env[ot->env_count], fmt, ap);
    va_end(ap);
    if (n < 0) {
        ot->env[ot->env_count] = NULL;
        return err_set(e, -ENOMEM, "out of memory");
    }
    if (n > ENV_VAR_BYTES_MAX) {
        free(ot->env[ot->env_count]);
        return err_set(e, -E2BIG, "a setting of the agent is over %d bytes", ENV_VAR_BYTES_MAX);
    }
    ot->env_count++;
    return 0;
}

/* OTEL_RESOURCE_ATTRIBUTES: the pod's attributes, then the operator's (a later key wins). */
static int add_resource(struct otel *ot, struct cla_error *e)
{
    const struct otel_opts *o = ot->o;
    char buf[ENV_VAR_BYTES_MAX];
    size_t len = 0;
    const struct {
        const char *key, *value;
    } attrs[] = {{"k8s.pod.name", o->pod_name},
                 {"k8s.namespace.name", o->pod_namespace},
                 {"k8s.container.name", o->container_name},
                 {NULL, o->resource_attributes}};
    buf[0] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
        if (!attrs[i].value || !attrs[i].value[0])
            continue;
        int n = snprintf(buf + len, sizeof(buf) - len, "%s%s%s%s", len ? "," : "",
                         attrs[i].key ? attrs[i].key : "", attrs[i].key ? "=" : "", attrs[i].value);
        if (n < 0 || (size_t)n >= sizeof(buf) - len)
            return err_set(e, -E2BIG, "the resource attributes are over %d bytes",
                           ENV_VAR_BYTES_MAX);
        len += (size_t)n;
    }
    return len ? add_env(ot, e, "OTEL_RESOURCE_ATTRIBUTES=%s", buf) : 0;
}

/* Every variable the agent reads, set each time: the app's environment keeps what an earlier
 * run set. {dir} is the delivered directory as the app sees it. */
static int build_env(struct otel *ot, struct cla_error *e)
{
    const struct otel_opts *o = ot->o;
    int r;
    if ((r = add_env(ot, e, "CLRATTACH_OTEL_ACTION=%s", o->stop ? "stop" : "start")) < 0 ||
        (r = add_env(ot, e, "CLRATTACH_OTEL_STATUS={dir}" STATUS_SUFFIX)) < 0)
        return r;
    if (o->stop)
        return 0;
    if ((r = add_env(ot, e, "OTEL_EXPORTER_OTLP_ENDPOINT=%s", o->endpoint)) < 0 ||
        (r = add_env(ot, e, "OTEL_EXPORTER_OTLP_PROTOCOL=%s",
                     o->protocol ? o->protocol : "http/protobuf")) < 0 ||
        (r = add_env(ot, e, "CLRATTACH_OTEL_FORCE=%s", o->force ? "1" : "0")) < 0 ||
        (r = add_resource(ot, e)) < 0)
        return r;
    if (o->service_name && (r = add_env(ot, e, "OTEL_SERVICE_NAME=%s", o->service_name)) < 0)
        return r;
    for (size_t i = 0; i < o->env_count; i++)
        if ((r = add_env(ot, e, "%s", o->env[i])) < 0)
            return r;
    return 0;
}

/* The agent's status at `path` in the target's view, as its user: 1 with *ret (and its identity
 * in *ret_st), 0 when there is none, else a negative errno (e says why). */
static int read_status(struct target *t, const char *path, struct otel_status *ret,
                       struct stat *ret_st, struct cla_error *e)
{
    _cleanup_close_ int fd =
        rootfs_open(t->rootfd, path, ROOTFS_REG, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, NULL);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return err_set(e, fd, "the agent's status %s cannot be opened: %s", path, strerror(-fd));
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    int r;
    if (fstat(fd, ret_st) < 0)
        return err_setsys(e, -errno, "fstat %s", path);
    if ((r = util_read_all(fd, OTEL_STATUS_MAX, &buf, &len)) < 0)
        return err_set(e, r, "the agent's status %s cannot be read: %s", path, strerror(-r));
    if ((r = otel_status_parse(buf, len, ret, e)) < 0)
        return err_prefix(e, "%s", path);
    return 1;
}

/* After ProcessInfo (the runtime checked: min_major), before delivery: the app's own SDK, the
 * agent running. */
static int before_deliver(void *ctx, struct target *t, struct attach_result *res)
{
    struct otel *ot = ctx;
    const struct otel_opts *o = ot->o;
    struct cla_error *e = &res->error;
    int r;
    _cleanup_free_ char *maps = NULL;
    size_t len = 0;
    if ((r = target_read_file(t, "maps", PROC_MAPS_MAX, &maps, &len, e)) < 0)
        return attach_fail(res, attach_outcome_of_errno(r), r);
    otel_maps_scan(maps, len, &ot->maps);
    if (o->stop) {
        if (ot->maps.agent_dir[0])
            return 0;
        err_set(e, -ENOENT,
                "the OpenTelemetry agent was never started in pid %d (" OTEL_AGENT_ENTRY
                " is not mapped there): nothing to stop",
                (int)res->pid);
        err_hint(e, "nothing to do");
        return attach_fail(res, ATTACH_OTEL_FAILED, -ENOENT);
    }
    if (ot->maps.sdk_path[0] && !o->force) {
        err_set(e, -EEXIST,
                "the app runs an OpenTelemetry SDK of its own (%s is mapped): a second one would "
                "export its spans again",
                ot->maps.sdk_path);
        err_hint(e, "point the app's own SDK at the collector (OTEL_EXPORTER_OTLP_ENDPOINT at its "
                    "next start); --force starts the agent beside it, in a load context of its "
                    "own");
        return attach_fail(res, ATTACH_OTEL_SDK_PRESENT, -EEXIST);
    }
    if (!ot->maps.agent_dir[0])
        return 0;
    char path[TARGET_PATH_MAX + sizeof(STATUS_SUFFIX)];
    struct otel_status st;
    struct stat sb;
    snprintf(path, sizeof(path), "%s" STATUS_SUFFIX, ot->maps.agent_dir);
    if (read_status(t, path, &st, &sb, NULL) != 1 ||
        (st.state != OTEL_STATE_STARTED && st.state != OTEL_STATE_STARTING))
        return 0; /* loaded, not running: a start builds new providers */
    err_set(e, -EALREADY,
            "the OpenTelemetry agent already runs in this app (%s, its status says %s%s%s)",
            ot->maps.agent_dir, otel_state_name(st.state), st.endpoint[0] ? ", exporting to " : "",
            st.endpoint);
    err_hint(e,
             "nothing to do; to start it with other settings: clrattach otel --stop --pid %d, "
             "then otel again",
             (int)res->pid);
    return attach_fail(res, ATTACH_ALREADY_ACTIVE, -EALREADY);
}

/* After delivery: where the status will be, and the one there now (to tell the new from it). */
static int before_send(void *ctx, struct target *t, const struct placed *p,
                       struct attach_result *res)
{
    struct otel *ot = ctx;
    struct otel_status st;
    int n =
        snprintf(res->otel_status_path, sizeof(res->otel_status_path), "%s" STATUS_SUFFIX, p->dir);
    if (n < 0 || (size_t)n >= sizeof(res->otel_status_path))
        return attach_fail(
            res, ATTACH_DELIVERY,
            err_set(&res->error, -ENAMETOOLONG, "the status path beside %s is too long", p->dir));
    ot->had_status = read_status(t, res->otel_status_path, &st, &ot->before, NULL) == 1;
    return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* How long a missing status is waited for after the runtime's answer: a runtime still starting
 * when ApplyStartupHook arrives answers at once and runs the hook as its startup goes on (seen
 * with watch --otel on an app caught early in its start), so the file may come a moment later. */
#define STATUS_WAIT_MS 10000

/* The new status, waited for up to STATUS_WAIT_MS (or --timeout if shorter): 1, 0 when none
 * came, or the error of a status that is there but cannot be read. */
static int wait_status(struct otel *ot, struct target *t, struct attach_result *res,
                       struct stat *sb, struct cla_error *e)
{
    int64_t wait = ot->o->timeout_ms < STATUS_WAIT_MS ? ot->o->timeout_ms : STATUS_WAIT_MS;
    int64_t until = util_now_ms() + wait;
    for (;;) {
        int r = read_status(t, res->otel_status_path, &res->otel, sb, e);
        if (r < 0 || (r == 1 && !(ot->had_status && same_file(&ot->before, sb))))
            return r;
        if (util_now_ms() >= until)
            return 0;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The runtime ran the hook: what the agent says it did is the outcome. */
static int after_answer(void *ctx, struct target *t, struct attach_result *res)
{
    struct otel *ot = ctx;
    struct cla_error *e = &res->error;
    struct stat sb;
    int r = wait_status(ot, t, res, &sb, e);
    if (r < 0) {
        res->otel.state = OTEL_STATE_NONE;
        err_hint(e, "the hook ran; see the app's stderr for the agent's own line");
        return attach_fail(res, ATTACH_OTEL_FAILED, r);
    }
    if (r == 0) {
        res->otel.state = OTEL_STATE_NONE;
        err_set(e, -ENODATA,
                "the runtime ran the agent's hook, but it wrote no status at %s: the app skips "
                "startup hooks (trimmed with System.StartupHookProvider.IsSupported=false) or "
                "cannot write there",
                res->otel_status_path);
        err_hint(e, "read the app's stderr for the agent's line; docs/otel.md");
        return attach_fail(res, ATTACH_OTEL_FAILED, -ENODATA);
    }
    enum otel_state s = res->otel.state;
    if (!ot->o->stop && (s == OTEL_STATE_STARTED || s == OTEL_STATE_STARTING)) {
        res->outcome = ATTACH_OTEL_STARTED;
        return 0;
    }
    if (ot->o->stop && (s == OTEL_STATE_STOPPED || s == OTEL_STATE_STOPPING)) {
        res->outcome = ATTACH_OTEL_STOPPED;
        return 0;
    }
    err_set(e, -EREMOTEIO, "the OpenTelemetry agent %s %s: %s", otel_state_name(s),
            ot->o->stop ? "to stop" : "to start",
            res->otel.reason[0] ? res->otel.reason : "(no reason given)");
    err_hint(e, "%s",
             s == OTEL_STATE_REFUSED ? "the reason says what to change; docs/otel.md"
                                     : "the app runs on; read its stderr and the status "
                                       "file; docs/otel.md");
    return attach_fail(res, ATTACH_OTEL_FAILED, -EREMOTEIO);
}

int otel_run(const struct otel_opts *o, struct target *t, struct attach_result *ret)
{
    _cleanup_(otel_free) struct otel ot = {.o = o};
    struct cla_error e = {0};
    int r = build_env(&ot, &e);
    if (r < 0) {
        memset(ret, 0, sizeof(*ret));
        ret->pid = t->pid;
        ret->perfmap_size = -1;
        ret->error = e;
        r = attach_fail(ret, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_USAGE, r);
    } else {
        struct startup_hook_opts ho = {
            .proc_dirfd = o->proc_dirfd,
            .assembly = o->agent,
            .entry = OTEL_AGENT_ENTRY,
            .target_dir = o->target_dir,
            /* a loaded agent that is not running takes the hook again (before_deliver decided) */
            .again = true,
            .env = (const char *const *)ot.env,
            .env_count = ot.env_count,
            .timeout_ms = o->timeout_ms,
            .on_stage = o->on_stage,
            .userdata = o->userdata,
            .stop = o->stop_signal,
            /* a stop too: the agent never starts on an older one */
            .min_major = OTEL_MIN_MAJOR,
            .needs_what = "the OpenTelemetry agent",
            .too_old_hint = "its OpenTelemetry 1.20 needs the System.Diagnostics.DiagnosticSource "
                            "of .NET 10: move the app to .NET 10, or use OpenTelemetry's own "
                            "instrumentation at its next start",
            .before_deliver = before_deliver,
            .before_send = before_send,
            .after_answer = after_answer,
            .ctx = &ot,
        };
        r = startup_hook_run(&ho, t, ret);
    }
    ret->kind = o->stop ? ATTACH_KIND_OTEL_STOP : ATTACH_KIND_OTEL_START;
    return r;
}
