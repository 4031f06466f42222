/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRPROBE_CLIENTDATA_H
#define CLRPROBE_CLIENTDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/base/bounds.h"

/*
 * The probe's client data: `key=value` pairs separated by ';', as sent in the AttachProfiler
 * request. Keys: out=<absolute path of the report>, detach_after=<decimal seconds, 0 = never>,
 * mask=<hex event mask, optional 0x prefix>. Unknown keys are ignored so that newer clients
 * can talk to older probes; anything malformed is rejected so a typo never goes unnoticed.
 */
struct clientdata {
    char out[CLRPROBE_OUT_PATH_MAX + 1]; /* "" when not given: the caller picks the default */
    uint32_t detach_after_s;             /* 0 = never detach on our own */
    bool has_mask;                       /* mask= was given */
    uint32_t mask;                       /* valid only when has_mask */
};

/* Parses `len` bytes of `buf` (not NUL-terminated; one trailing NUL is tolerated because C
 * clients often send strlen + 1). Fills *ret only on success. Returns 0, -E2BIG for input or a
 * path above its cap, -EINVAL for anything malformed (embedded NUL, missing '=', empty or
 * repeated key, bad number, relative path, control characters), -ERANGE for out-of-range
 * numbers. `buf` may be NULL when `len` is 0. */
int clientdata_parse(const void *buf, size_t len, struct clientdata *ret);

#endif
