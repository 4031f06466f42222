/* SPDX-License-Identifier: Apache-2.0 */
/* The attach flow's checks before anything is sent: the operator's inputs, the table of
 * profilers inert on attach, the client data expanded, the profiler's libraries in the target's
 * view. */
#include "flow/attach_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "deliver/placeholders.h"
#include "profset/depcheck.h"
#include "target/target.h"

/* The file name the runtime will be given for a build's entry library. */
static const char *entry_name(const struct profset_build *b)
{
    if (!b->dir)
        return b->name;
    const char *path = b->dir->files[b->dir->entry].path, *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The refusal of a profiler known to stay inert on attach (profset/vendors.h), `why` saying how
 * the app was found running. */
int attach_check_refuse_inert(struct attach_result *res, const struct vendor_noop *v,
                              const char *why)
{
    err_set(&res->error, -EOPNOTSUPP,
            "%s (%s %s) does nothing when attached to a running app%s: %s (%s); nothing was sent",
            v->vendor, v->entry, v->clsid, why, v->on_attach, v->source);
    if (why[0])
        /* watch --startup found the app running: it is this watcher's own mode that was used,
         * so the next step is the app's restart, paused (or the listening mode). */
        err_hint(&res->error,
                 "restart the app with DOTNET_DefaultDiagnosticPortSuspend=1 in its environment: "
                 "this watcher then loads it at startup; without a shared PID namespace, start "
                 "it with DOTNET_DiagnosticPorts=<socket> and run watch --listen (docs/sidecar.md)"
                 ", or set the vendor's variables in the app's environment (%s)",
                 v->startup);
    else
        err_hint(&res->error,
                 "load it at startup: start the app with DOTNET_DefaultDiagnosticPortSuspend=1 "
                 "and run attach --startup (or watch --startup), or set the vendor's variables "
                 "in the app's environment (%s); --force sends it anyway",
                 v->startup);
    return attach_fail(res, ATTACH_INERT, -EOPNOTSUPP);
}

/* A profiler whose InitializeForAttach is known to do nothing would be reported as attached and
 * never run: refused before the target is touched, unless --force, which the result then marks
 * (expected_inert). Every build of a set is looked at: they share the vendor's name. *ret is the
 * vendor's row, NULL for a profiler not in the table. */
static int check_inert(const struct attach_opts *o, const struct profset *ps,
                       struct attach_result *res, const struct vendor_noop **ret)
{
    char clsid[39];
    ipc_guid_format(&o->clsid, clsid);
    const struct vendor_noop *v = NULL;
    for (size_t i = 0; i < ps->n && !v; i++)
        v = vendors_find_noop(vendors_noop, vendors_noop_count, entry_name(&ps->builds[i]), clsid);
    *ret = v;
    if (!v)
        return 0;
    /* --startup on a runtime paused at startup loads it through Initialize, which works; on one
     * already running it attaches as any other and stays inert: send_request() tells. */
    if (o->force || o->startup) {
        res->expected_inert = true;
        return 0;
    }
    return attach_check_refuse_inert(res, v, "");
}

/* The operator's inputs and our own files, all checked before anything touches the target, and
 * read before we act as the target's user (who may not be able to read them). */
int attach_check_inputs(const struct attach_opts *o, struct profset *ps, struct attach_result *res,
                        const struct vendor_noop **ret_inert)
{
    struct cla_error *e = &res->error;
    int r;
    if (o->startup && o->client_data_len) {
        err_set(e, -EINVAL,
                "--startup cannot carry --client-data: a runtime paused at startup "
                "takes the profiler with StartupProfiler, a command with no room for "
                "client data, so it would be dropped silently");
        err_hint(e, "configure the profiler through the app's environment for a startup load, "
                    "or attach without --startup once the runtime has started");
        return attach_fail(res, ATTACH_USAGE, -EINVAL);
    }
    /* Variables set in a running app come after its profiler read its environment, if it ever
     * looks: only with --force (attach_cli checks this too, for the message). */
    if (o->env_count && !o->startup && !o->force) {
        err_set(e, -EINVAL,
                "--env without --startup would set variables in a running app, "
                "whose profiler read its environment as it started, if at all");
        err_hint(e, "load the profiler at startup (--startup on a runtime started with "
                    "DOTNET_DefaultDiagnosticPortSuspend=1), or --force to set them anyway");
        return attach_fail(res, ATTACH_USAGE, -EINVAL);
    }
    if (o->env_count > ENV_VARS_MAX) {
        err_set(e, -E2BIG, "%zu --env variables exceed the cap of %d", o->env_count, ENV_VARS_MAX);
        return attach_fail(res, ATTACH_USAGE, -E2BIG);
    }
    for (size_t i = 0; i < o->env_count; i++) {
        size_t nl, n;
        const char *v = o->env[i];
        if ((r = ipc_env_check(v, &nl, e)) < 0 ||
            (r = placeholders_expand((const uint8_t *)v + nl + 1, strlen(v + nl + 1), "/", "/",
                                     NULL, ENV_VAR_BYTES_MAX, &n, e)) == -EINVAL)
            return attach_fail(res, ATTACH_USAGE, r);
    }
    /* A typo in a placeholder is the operator's. */
    if (o->client_data_len) {
        size_t n;
        if ((r = placeholders_expand(o->client_data, o->client_data_len, "/", "/", NULL,
                                     IPC_MAX_CLIENT_DATA, &n, e)) == -EINVAL)
            return attach_fail(res, ATTACH_USAGE, r);
    }
    /* Checked to be shared objects. */
    if ((r = profset_load(o->profiler_path, o->entry, ps, e)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    return check_inert(o, ps, res, ret_inert);
}

/* The maps for depcheck, which asks only when the loader's directories lack a name: the
 * snapshot the RID guess may have read already (target_maps). */
static const char *maps_for_depcheck(void *t, size_t *ret_len)
{
    return target_maps(t, ret_len);
}

/* Can the target's loader find every library the profiler needs? (depcheck.h) */
int attach_check_dependencies(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct target *t = a->t;
    const struct placed *p = &a->p;
    struct attach_result *res = a->res;
    if (o->skip_dependency_check)
        return 0;
    const char *llp = NULL;
    size_t llp_len = 0;
    if (!target_getenv(t, "LD_LIBRARY_PATH", &llp, &llp_len))
        llp = NULL;
    struct depcheck_input in = {
        .rootfd = t->rootfd,
        .libc = a->rid.libc,
        .arch = a->rid.arch,
        .ld_library_path = llp,
        .ld_library_path_len = llp_len,
        .maps = maps_for_depcheck,
        .maps_arg = t,
        .procfd = t->procfd,
        .build = a->build,
        .delivered = p->is_dir ? p->top : p->path,
    };
    int r = depcheck_run(&in, res->dependency_note, sizeof(res->dependency_note), &res->error);
    if (r >= 0)
        return 0;
    attempt_undo_delivery(a);
    return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DEPENDENCY, r);
}

/* The client data with its placeholders filled in, in a block of its own size. Returns its
 * length with *ret set (NULL for none), -E2BIG past the protocol's cap or -EINVAL. */
int attach_check_client_data(const struct attach_opts *o, const struct placed *p, uint8_t **ret,
                             struct cla_error *e)
{
    size_t need = 0, n = 0;
    *ret = NULL;
    int r = placeholders_expand(o->client_data, o->client_data_len, p->dir, p->path, NULL,
                                IPC_MAX_CLIENT_DATA, &need, e);
    if (r < 0 || need == 0)
        return r;
    _cleanup_free_ uint8_t *cd = malloc(need);
    if (!cd)
        return -ENOMEM;
    r = placeholders_expand(o->client_data, o->client_data_len, p->dir, p->path, cd, need, &n, e);
    if (r < 0)
        return r;
    *ret = util_take_ptr(&cd);
    return (int)n;
}
