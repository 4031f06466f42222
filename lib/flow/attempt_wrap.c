/* SPDX-License-Identifier: Apache-2.0 */
/* What an attempt delivers when settings must reach the profiler's getenv(): a known vendor's
 * startup settings added to --env, the directory of our own with the env loader, and the paths
 * the runtime and the operator are given once it is placed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/render.h"
#include "base/util.h"
#include "deliver/placeholders.h"
#include "flow/attempt.h"

int attempt_vendor_env(struct attempt *a)
{
    struct attach_result *res = a->res;
    if (!a->inert || !a->inert->startup_env || a->o == &a->eo)
        return 0;
    size_t nv = 0;
    while (a->inert->startup_env[nv])
        nv++;
    int n = vendors_startup_env(a->inert, a->o->env, a->o->env_count, a->env_all,
                                ARRAY_SIZE(a->env_all), res->vendor_env, sizeof(res->vendor_env));
    if (n < 0) {
        err_set(&res->error, -E2BIG,
                "--env: %zu variables and the %zu %s needs at startup are over %d", a->o->env_count,
                nv, a->inert->vendor, ENV_VARS_MAX);
        err_hint(&res->error, "pass fewer --env variables");
        return attach_fail(res, ATTACH_USAGE, -E2BIG);
    }
    a->eo = *a->o;
    a->eo.env = a->env_all;
    a->eo.env_count = (size_t)n;
    a->o = &a->eo;
    return 0;
}

int attempt_wrap(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    bool loader = o->env_count > 0 && !o->perfmap;
    bool dir = placeholders_has(o->client_data, o->client_data_len, "dir");
    for (size_t i = 0; i < o->env_count && !dir; i++)
        dir = placeholders_has((const uint8_t *)o->env[i], strlen(o->env[i]), "dir");
    if (!loader && (!dir || a->build->dir))
        return 0;
    int r =
        envwrap_build(a->build, &a->rid, loader, o->env, o->env_count, &a->wrap, &a->res->error);
    if (r < 0)
        return attach_fail(a->res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_USAGE, r);
    a->wrapped = true;
    a->build = &a->wrap.build;
    return 0;
}

int attempt_wrapped_placed(struct attempt *a)
{
    struct attach_result *res = a->res;
    if (!a->wrapped)
        return 0;
    if (a->wrap.loader) {
        snprintf(a->load_path, sizeof(a->load_path), "%s", a->p.path);
        render_text(a->load_path, strlen(a->load_path), res->loader_path, sizeof(res->loader_path));
    }
    int w = snprintf(a->p.path, sizeof(a->p.path), "%s/%s", a->p.dir, a->wrap.real);
    if (w < 0 || (size_t)w >= sizeof(a->p.path)) {
        attempt_undo_delivery(a);
        err_set(&res->error, -ENAMETOOLONG, "the profiler's path in the target is too long");
        return attach_fail(res, ATTACH_DELIVERY, -ENAMETOOLONG);
    }
    render_text(a->p.path, strlen(a->p.path), res->delivered_path, sizeof(res->delivered_path));
    return 0;
}

const char *attempt_load_path(const struct attempt *a)
{
    return a->load_path[0] ? a->load_path : a->p.path;
}
