/* SPDX-License-Identifier: Apache-2.0 */
/* The startup-hook flow: the operator's assembly read and checked, delivered through the attempt
 * core, ApplyStartupHook sent and its answer decoded. */
#include "flow/startup_hook.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "deliver/deliver.h"
#include "deliver/place.h"
#include "profset/assembly.h"
#include "profset/hooks.h"
#include "profset/profdir.h"
#include "profset/profdir_read.h"
#include "profset/profset.h"
#include "profset/target_hookdeps.h"
#include "profset/userfile.h"
#include "runtime/hresult.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "target/creds.h"
#include "target/target.h"

/* The first .NET with ApplyStartupHook (dotnet/runtime PRs 86813 and 87490). */
#define HOOK_MIN_MAJOR 8

/*
 * What the runtime answers when the hook fails: StartupHookProvider.CallStartupHook (dotnet/
 * runtime src/libraries/System.Private.CoreLib/src/System/StartupHookProvider.cs) throws, and
 * the exception's HRESULT comes back. A load failure of any kind (no file, not an assembly, one
 * of the same name already loaded) is wrapped in an ArgumentException, as is an Initialize with
 * the wrong signature.
 */
static const struct {
    uint32_t hr;
    const char *name;
    const char *cause;
    const char *next_step;
} hook_answers[] = {
    {0x80070057, "COR_E_ARGUMENT (ArgumentException)",
     "the runtime could not load the assembly (unreadable, not an assembly it can load, or one of "
     "the same name is already loaded), or StartupHook.Initialize has the wrong signature",
     "Initialize must be 'public static void Initialize()' without parameters; try the hook in a "
     "test app with DOTNET_STARTUP_HOOKS=<its path> to see the exception; give the assembly a "
     "name no assembly of the app has"},
    {0x80131522, "COR_E_TYPELOAD (TypeLoadException)",
     "the assembly has no type named StartupHook outside any namespace",
     "declare 'internal class StartupHook' with 'public static void Initialize()', in no "
     "namespace"},
    {0x80131513, "COR_E_MISSINGMETHOD (MissingMethodException)",
     "the StartupHook type has no Initialize method", "add 'public static void Initialize()'"},
    {0x80131604, "COR_E_TARGETINVOCATION (TargetInvocationException)",
     "StartupHook.Initialize threw an exception", "read the app's logs; fix the hook"},
    {0x80131515, "COR_E_NOTSUPPORTED", "this runtime cannot run startup hooks (NativeAOT, Mono)",
     "load the code another way: NativeAOT apps cannot load managed code"},
    {0x80131385, "CORDIAGIPC_E_UNKNOWN_COMMAND",
     "the runtime does not know ApplyStartupHook: it is older than .NET 8",
     "restart the app with DOTNET_STARTUP_HOOKS=<the assembly's path>"},
};

/* What one run holds; released by hook_free on every way out. */
struct hook {
    const struct startup_hook_opts *o;
    struct attach_result *res;
    struct target *t;
    struct profset_build build; /* the assembly, or its directory (build.dir) */
    struct attach_conn c;
    char nonce[DELIVER_NONCE_LEN + 1];
    struct place_opts po;
    struct placed p;
    bool delivered;
    char shown[256];             /* the operator's --assembly, rendered */
    struct assembly_identity id; /* the hook's name and references */
};

static void hook_free(struct hook *h)
{
    free(h->build.data);
    if (h->build.dir) {
        profdir_free(h->build.dir);
        free(h->build.dir);
    }
    if (h->c.sockfd >= 0)
        close(h->c.sockfd);
}

/* In a directory, the hook: --entry, else the only assembly there with a StartupHook type (the
 * others are what it needs). */
static int choose_entry(struct profdir *pd, const char *want, const char *shown,
                        struct cla_error *e)
{
    size_t found = 0, at = 0;
    for (size_t i = 0; i < pd->n; i++) {
        const struct profdir_file *f = &pd->files[i];
        if (f->is_dir)
            continue;
        const char *slash = strrchr(f->path, '/'), *base = slash ? slash + 1 : f->path;
        bool match = want ? strcmp(f->path, want) == 0 || strcmp(base, want) == 0
                          : assembly_check_startup_hook(f->data, f->len, f->path, NULL) == 0;
        if (match) {
            found++;
            at = i;
        }
    }
    if (found != 1) {
        if (want)
            err_set(e, -EINVAL, "--entry '%s' names %s file in %s", want,
                    found ? "more than one" : "no", shown);
        else
            err_set(e, -EINVAL, "%s holds %s assembly with a StartupHook type and its Initialize()",
                    shown, found ? "more than one" : "no");
        return err_hint(e, "name the hook's assembly with --entry (a path relative to %s)", shown);
    }
    pd->entry = at;
    return assembly_check_startup_hook(pd->files[at].data, pd->files[at].len, pd->files[at].path,
                                       e);
}

/* The operator's assembly, read and checked before the target is touched. */
static int load_assembly(struct hook *h)
{
    const struct startup_hook_opts *o = h->o;
    struct cla_error *e = &h->res->error;
    char *shown = h->shown;
    render_text(o->assembly, strlen(o->assembly), shown, sizeof(h->shown));
    _cleanup_close_ int dirfd = open(o->assembly, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r;
    if (dirfd >= 0) {
        if (!(h->build.dir = calloc(1, sizeof(*h->build.dir))))
            return err_set(e, -ENOMEM, "out of memory");
        if ((r = profdir_read_tree(dirfd, shown, h->build.dir, e)) < 0) {
            free(h->build.dir);
            h->build.dir = NULL;
            return r;
        }
        if ((r = choose_entry(h->build.dir, o->entry, shown, e)) < 0)
            return r;
        const struct profdir_file *f = &h->build.dir->files[h->build.dir->entry];
        return assembly_read_identity(f->data, f->len, shown, &h->id, e);
    }
    if (o->entry)
        return err_set(e, -EINVAL, "--entry names a file in a directory; %s is none", shown);
    char *buf;
    size_t len;
    if ((r = userfile_read(o->assembly, PROFILER_MAX_SIZE, "--assembly", &buf, &len, e)) < 0)
        return r;
    h->build.data = (uint8_t *)buf;
    h->build.len = len;
    const char *slash = strrchr(o->assembly, '/');
    snprintf(h->build.name, sizeof(h->build.name), "%s", slash ? slash + 1 : o->assembly);
    /* What the runtime would throw on, refused here: on .NET 10 an exception in a hook applied
     * to a running app is unhandled, on the runtime's diagnostics thread, and ends the app. */
    if ((r = assembly_check_startup_hook(h->build.data, len, shown, e)) < 0)
        return r;
    return assembly_read_identity(h->build.data, len, shown, &h->id, e);
}

/* Before anything is delivered: a hook for process start only is refused unless --force, and
 * every assembly it references must be delivered with it or where the app resolves it. The
 * app's entry assembly (ProcessInfo2) names its own directory. */
static int check_hook(struct hook *h)
{
    struct attach_result *res = h->res;
    struct cla_error *e = &res->error;
    const struct hook_start_only *so = hooks_find_start_only(h->id.name);
    int r;
    if (so && !h->o->force)
        return attach_fail(res, ATTACH_HOOK_START_ONLY, hooks_refuse_start_only(so, h->shown, e));
    struct ipc_process_info pi = {0};
    uint32_t hr = 0;
    r = ipc_conn_process_info(h->c.sockfd, &h->c.peer, util_now_ms() + h->o->timeout_ms, &pi, &hr,
                              e);
    if (r < 0)
        return attach_fail(res, attach_outcome_of_errno(r), r);
    r = target_hookdeps_check(h->t, &h->id, h->build.dir, pi.entrypoint_assembly, h->shown,
                              res->dependency_note, sizeof(res->dependency_note), e);
    ipc_process_info_free(&pi);
    if (r < 0)
        return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DEPENDENCY, r);
    return h->o->before_deliver ? h->o->before_deliver(h->o->ctx, h->t, res) : 0;
}

static int deliver(struct hook *h)
{
    struct attach_result *res = h->res;
    int r;
    if ((r = attempt_nonce(NULL, h->nonce, res)) < 0)
        return r;
    h->po = (struct place_opts){
        .build = &h->build, .user_dir = h->o->target_dir, .uid = res->uid, .nonce = h->nonce};
    if ((r = attempt_place(h->t, &h->po, h->o->stop, &h->p, res)) < 0)
        return r;
    h->delivered = true;
    return 0;
}

/* Before ApplyStartupHook goes out, a stop takes back what this run put in the target (what it
 * delivered, and any temporary of its nonce), and the run ends as interrupted. */
static int check_stop(struct hook *h)
{
    if (!h->o->stop || !h->o->stop->signal)
        return 0;
    struct attach_result *res = h->res;
    res->removed = h->delivered && place_undo(h->t, &h->p);
    (void)place_sweep(h->t, &h->po);
    err_set(&res->error, -EINTR, "stopped by signal %d before ApplyStartupHook was sent",
            (int)h->o->stop->signal);
    err_hint(&res->error, "%s; the runtime was not asked to load the hook",
             res->removed ? "what this run delivered was removed" : "nothing of this run is left");
    return attach_fail(res, ATTACH_INTERRUPTED, -EINTR);
}

/* A refusal takes back what this run delivered (--keep aside), before the reply stage forbids
 * unlink. */
static void undo(struct hook *h)
{
    if (h->delivered && !h->o->keep)
        h->res->removed = place_undo(h->t, &h->p);
}

static int stage(struct hook *h, enum attach_stage s, int r)
{
    return attempt_stage(h->o->on_stage, h->o->userdata, s, h->res, r);
}

/* After delivery: the file delivered (or found there, reused) already mapped in the app is a hook
 * the runtime has loaded; refused unless --again, its Initialize would run twice. */
static int check_loaded(struct hook *h)
{
    struct attach_result *res = h->res;
    if (h->o->again || target_maps_has(h->t, h->p.path + 1) != 1)
        return 0;
    undo(h);
    err_set(&res->error, -EALREADY,
            "the app has this hook loaded already (%s is mapped there): ApplyStartupHook would "
            "run its StartupHook.Initialize a second time",
            res->delivered_path);
    err_hint(&res->error, "nothing to do if it runs; --again applies it once more (everything "
                          "its Initialize sets up is then set up twice)");
    return stage(h, ATTACH_STAGE_REPLIED, attach_fail(res, ATTACH_ALREADY_ACTIVE, -EALREADY));
}

/*
 * --env, each with SetEnvironmentVariable on its own connection before ApplyStartupHook, as
 * attach sends them (attempt_send_env), {dir} the delivery directory and {entry} the hook as the
 * app sees them. Returns 0 when every one was taken; else the run's failure, what was delivered
 * taken back and the reply stage passed.
 */
static int send_env(struct hook *h)
{
    const struct startup_hook_opts *o = h->o;
    struct attach_result *res = h->res;
    if (!o->env_count)
        return 0;
    struct attach_opts ao = {.keep = o->keep,
                             .timeout_ms = o->timeout_ms,
                             .env = o->env,
                             .env_count = o->env_count,
                             .on_stage = o->on_stage,
                             .userdata = o->userdata};
    struct attempt a = {.o = &ao, .res = res, .t = h->t, .c = h->c, .p = h->p};
    int r = attempt_send_env(&a);
    if (a.env_refused) /* the outcome is set, the delivery taken back, the stage passed */
        return r < 0 ? r : -EINVAL;
    if (r == 0 && a.hr == 0)
        return 0;
    undo(h);
    if (r < 0)
        return stage(h, ATTACH_STAGE_REPLIED,
                     attach_fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r));
    attach_record_hresult(res, a.hr);
    err_hint(&res->error, "%s; ApplyStartupHook was not sent", hresult_lookup(a.hr)->next_step);
    return stage(h, ATTACH_STAGE_REPLIED,
                 attach_fail(res, attach_outcome_of_hresult(a.hr), -EREMOTEIO));
}

static int settle_answer(struct hook *h, uint32_t hr)
{
    struct attach_result *res = h->res;
    struct cla_error *e = &res->error;
    char hrs[16];
    hresult_format(hr, hrs, sizeof(hrs));
    attach_record_hresult(res, hr);
    if (hr == 0) {
        res->outcome = ATTACH_HOOK_APPLIED;
        return 0;
    }
    undo(h);
    for (size_t i = 0; i < ARRAY_SIZE(hook_answers); i++) {
        if (hook_answers[i].hr != hr)
            continue;
        err_set(e, -EREMOTEIO, "the runtime refused the startup hook: %s (%s): %s",
                hook_answers[i].name, hrs, hook_answers[i].cause);
        err_hint(e, "%s", hook_answers[i].next_step);
        return attach_fail(res, hr == 0x80131385 ? ATTACH_RUNTIME_TOO_OLD : ATTACH_LOAD_FAILED,
                           -EREMOTEIO);
    }
    const struct hresult_info *hi = hresult_lookup(hr);
    err_set(e, -EREMOTEIO, "the runtime refused the startup hook: %s (%s)", hi->name, hrs);
    err_hint(e, "%s", hi->next_step);
    return attach_fail(res, ATTACH_LOAD_FAILED, -EREMOTEIO);
}

/* In attach's order: the operator's input, the target reached as its user, the version, the
 * delivery, the pid re-checked, the request, the answer. */
static int run(struct hook *h, struct creds_saved *cs)
{
    const struct startup_hook_opts *o = h->o;
    struct attach_result *res = h->res;
    struct cla_error *e = &res->error;
    int r;
    if ((r = load_assembly(h)) < 0)
        return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_USAGE, r);
    if ((r = attach_reach(h->t, o->timeout_ms, cs, &h->c, res)) < 0)
        return r;
    if (o->min_major > HOOK_MIN_MAJOR)
        r = attach_require_runtime(res, o->min_major, o->needs_what, o->too_old_hint);
    else
        r = attach_require_runtime(res, HOOK_MIN_MAJOR, "ApplyStartupHook",
                                   "on older runtimes a startup hook runs only at startup: "
                                   "restart the app with DOTNET_STARTUP_HOOKS=<the assembly's "
                                   "path>");
    if (r < 0)
        return r;
    if ((r = check_hook(h)) < 0)
        return r;
    if ((r = deliver(h)) < 0 || (r = check_loaded(h)) < 0 || (r = check_stop(h)) < 0)
        return r;
    if (o->before_send && (r = o->before_send(o->ctx, h->t, &h->p, res)) < 0) {
        undo(h);
        return stage(h, ATTACH_STAGE_REPLIED, r);
    }
    size_t room = ipc_startup_hook_frame_room(h->p.path);
    _cleanup_free_ uint8_t *req = malloc(room);
    int n = req ? ipc_encode_apply_startup_hook(h->p.path, req, room, e)
                : err_set(e, -ENOMEM, "out of memory");
    if (n < 0) {
        undo(h);
        return stage(h, ATTACH_STAGE_REPLIED,
                     attach_fail(res, n == -ENOMEM ? ATTACH_INTERNAL : ATTACH_USAGE, n));
    }
    /* The last moment a stop is honoured: the next stage forbids unlink. */
    if ((r = check_stop(h)) < 0 || (r = stage(h, ATTACH_STAGE_DELIVERED, 0)) < 0)
        return r;
    /* The pid must still be the process we inspected: never hand its successor our code. */
    if ((r = target_check_alive(h->t, e)) < 0) {
        undo(h);
        return stage(h, ATTACH_STAGE_REPLIED, attach_fail(res, ATTACH_NOT_FOUND, r));
    }
    if ((r = send_env(h)) < 0)
        return r;
    uint32_t hr = 0;
    int64_t sent_at = util_now_ms();
    r = ipc_conn_status_command(h->c.sockfd, &h->c.peer, req, (size_t)n, sent_at + o->timeout_ms,
                                &hr, e);
    /* No answer: the hook may have ended the app. An exception it throws (or the load of an
     * assembly whose name the app already uses differently) is unhandled on the runtime's
     * diagnostics thread in .NET 10, which ends the process instead of answering. */
    if (attempt_died_unanswered(h->t, r, 1000, sent_at, res)) {
        err_set(e, -ESRCH,
                "the app died while the runtime ran the startup hook (%lld ms after "
                "ApplyStartupHook): an exception in a hook applied to a running app "
                "ends it",
                (long long)res->died_after_ms);
        err_hint(e, "read the app's last log lines for the exception; try the hook in a test "
                    "app with DOTNET_STARTUP_HOOKS=<its path> first");
        undo(h);
        return stage(h, ATTACH_STAGE_REPLIED, attach_fail(res, ATTACH_TARGET_DIED, -ESRCH));
    }
    if (r < 0) {
        if (r == -ETIMEDOUT)
            err_hint(e,
                     "the runtime did not answer within %lld ms: the hook's Initialize may "
                     "still be running (raise --timeout); what was delivered stays",
                     (long long)o->timeout_ms);
        return stage(h, ATTACH_STAGE_REPLIED,
                     attach_fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r));
    }
    r = settle_answer(h, hr);
    if (r == 0 && o->after_answer)
        r = o->after_answer(o->ctx, h->t, res);
    return stage(h, ATTACH_STAGE_REPLIED, r);
}

int startup_hook_run(const struct startup_hook_opts *o, struct target *t, struct attach_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->pid = t->pid;
    ret->kind = ATTACH_KIND_STARTUP_HOOK;
    ret->perfmap_size = -1;
    struct creds_saved cs = {0};
    int64_t start = util_now_ms();
    _cleanup_(hook_free) struct hook h = {.o = o, .res = ret, .t = t, .c.sockfd = -1};
    int r = run(&h, &cs);
    if (o->stop)
        o->stop->defer = 0;
    creds_restore(&cs);
    ret->duration_ms = util_now_ms() - start;
    if (r >= 0)
        err_clear(&ret->error);
    return r;
}
