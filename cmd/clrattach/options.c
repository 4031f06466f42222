/* SPDX-License-Identifier: Apache-2.0 */
/* The options every command takes, and the step every command ends its setup with. */
#include <string.h>

#include "cli.h"
#include "base/util.h"

int parse_common(int c, const char *arg, struct common *co, const char *cmd)
{
    switch (c) {
    case 'o':
        if (strcmp(arg, "json") == 0)
            co->json = true;
        else if (strcmp(arg, "text") == 0)
            co->json = false;
        else
            return usage_error(cmd, "--output takes 'text' or 'json', not '%s'", arg);
        return CLI_GO_ON;
    case 'S':
        if (sandbox_parse_mode(arg, &co->seccomp, NULL) < 0)
            return usage_error(cmd, "--seccomp takes kill, log or off, not '%s'", arg);
        return CLI_GO_ON;
    case 'P': co->proc = arg; return CLI_GO_ON;
    }
    return usage_error(cmd, "unknown option");
}

int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
    return util_parse_u64(s, strlen(s), max, ret);
}

/* 'off' only with a loud warning, since it exists for diagnosis. */
int enter_sandbox(const struct common *co, uint64_t keep, enum sandbox_stage stage)
{
    struct cla_error e = {0};
    /* The bounding set matters only where exec is possible: in log mode, not under the kill
     * filter installed right below (a failure to install it ends the process). */
    if (co->seccomp != SANDBOX_MODE_OFF &&
        sandbox_drop_caps(keep, co->seccomp == SANDBOX_MODE_LOG, &e) < 0)
        return fatal("capabilities", ATTACH_INTERNAL, &e);
    if (co->seccomp == SANDBOX_MODE_OFF)
        fputs("clrattach: WARNING: --seccomp=off: running WITHOUT the seccomp filter; use this "
              "only to diagnose a suspected filter problem\n",
              stderr);
    if (sandbox_enter_at(co->seccomp, stage, &e) < 0)
        return fatal("seccomp", ATTACH_INTERNAL, &e);
    return CLI_GO_ON;
}
