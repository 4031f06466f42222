/* SPDX-License-Identifier: Apache-2.0 */
/* The --env variables of one attempt sent to its runtime (SetEnvironmentVariable), {dir} and
 * {entry} expanded to what was delivered: for attach --startup, attach --force and startup-hook. */
#include "flow/attempt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/render.h"
#include "deliver/placeholders.h"
#include "runtime/hresult.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"

/* One "NAME=VALUE" of --env as the result shows it: the name, or with --show-env the whole. */
static void show_env(struct attach_result *res, const char *name, const char *value, bool values)
{
    char raw[2 * ENV_VAR_BYTES_MAX + 2];
    if (res->env_count >= ENV_VARS_MAX)
        return;
    snprintf(raw, sizeof(raw), "%s%s%s", name, values ? "=" : "", values ? value : "");
    render_text(raw, strlen(raw), res->env[res->env_count], ENV_SHOWN_MAX);
    res->env_count++;
}

/*
 * Sends each --env variable with SetEnvironmentVariable, each on its own connection, {dir} and
 * {entry} expanded to where the profiler went. Returns 0 with a->hr: 0 when every one was taken,
 * else the refusal of the first that was not (the rest are not sent). A variable too long once
 * expanded is the operator's: refused here (a->env_refused, outcome usage_error).
 */
int attempt_send_env(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    a->hr = 0;
    for (size_t i = 0; i < o->env_count && !a->env_done; i++) {
        size_t nl;
        int r = ipc_env_check(o->env[i], &nl, e);
        char name[ENV_VAR_BYTES_MAX + 1], value[ENV_VAR_BYTES_MAX + 1];
        const char *v = o->env[i] + nl + 1;
        size_t vn = 0;
        if (r == 0) {
            memcpy(name, o->env[i], nl);
            name[nl] = '\0';
            /* The name and '=' leave this much room for the value. */
            r = placeholders_expand((const uint8_t *)v, strlen(v), a->p.dir, a->p.path,
                                    (uint8_t *)value, ENV_VAR_BYTES_MAX - nl - 1, &vn, e);
        }
        if (r < 0) {
            if (r == -E2BIG)
                err_set(e, r, "--env %s: over %d bytes once {dir} and {entry} are expanded",
                        nl ? name : "?", ENV_VAR_BYTES_MAX);
            err_hint(e, "shorten the variable; nothing more was sent, the runtime was resumed "
                        "without the profiler");
            a->env_refused = true;
            attempt_undo_delivery(a);
            attempt_tighten_replied(a, r);
            return attach_fail(res, ATTACH_USAGE, r);
        }
        value[vn] = '\0';
        show_env(res, name, value, o->show_env);
        uint8_t req[IPC_HEADER_SIZE + 8 + 4 * (ENV_VAR_BYTES_MAX + 2)];
        int n = ipc_encode_setenv(name, value, req, sizeof(req), e);
        if (n < 0)
            return n;
        if ((r = ipc_conn_status_command(a->c.sockfd, &a->c.peer, req, (size_t)n,
                                         attempt_exchange_deadline(a), &a->hr, e)) < 0)
            return r;
        if (a->hr != 0) {
            char hr[16];
            hresult_format(a->hr, hr, sizeof(hr));
            err_set(e, -EREMOTEIO, "the runtime refused SetEnvironmentVariable for %s: %s (%s)",
                    name, hresult_lookup(a->hr)->name, hr);
            a->env_rejected = true;
            return 0;
        }
        res->env_sent++;
    }
    a->env_done = true;
    return 0;
}
