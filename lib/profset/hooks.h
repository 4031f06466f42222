/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of startup hooks known to be for process start only: applied to a running app they
 * do harm (run the app again, end it). Looked up by the hook's assembly name; the refusal's
 * wording. Pure: no I/O.
 */
#ifndef CLRATTACH_HOOKS_H
#define CLRATTACH_HOOKS_H

#include <stddef.h>

#include "base/err.h"

struct hook_start_only {
    const char *vendor;
    const char *assembly; /* the hook's simple assembly name (compared ignoring case, as the
                             runtime compares assembly names) */
    const char *running;  /* what it does when applied to a running app */
    const char *source;   /* "owner/repo path@commit" where that was read */
};

extern const struct hook_start_only hooks_start_only[];
extern const size_t hooks_start_only_count;

/* The row for an assembly named `name`, or NULL. */
const struct hook_start_only *hooks_find_start_only(const char *name);

/* The refusal of `h`'s hook (`shown` names the file): e says why, the hint how to load it and
 * that --force sends it anyway. Returns -EPERM. */
int hooks_refuse_start_only(const struct hook_start_only *h, const char *shown,
                            struct cla_error *e);

#endif
