/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The capped, strict JSON load the agent's decoders share (k8s_watch, agent_profiles).
 */
#include "report/json_bounded.h"

#include <errno.h>

int json_bounded_decode(const char *buf, size_t len, size_t cap, const char *what, int bad_code,
                        json_bounded_fn fn, void *ctx, struct cla_error *e)
{
    if (len > cap)
        return err_set(e, -E2BIG, "%s: %zu bytes, above the %zu-byte cap", what, len, cap);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(e, bad_code, "%s: not JSON (line %d: %s)", what, jerr.line, jerr.text);
    int r = fn(root, ctx, e);
    json_decref(root);
    return r;
}
