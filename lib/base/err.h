/* SPDX-License-Identifier: Apache-2.0 */
/* The one error type of clrattach and its setters: a negative errno-style code, a message that
 * gathers context on the way up, and a next step for a person. */
#ifndef CLRATTACH_ERR_H
#define CLRATTACH_ERR_H

#include <stdarg.h>

#include "base/bounds.h"

/*
 * The one error type of clrattach, carried on the caller's stack. A failing function returns a
 * negative errno-style code and fills the message; callers add context on the way up with
 * err_prefix(). `hint` holds the next step for a person, when the failing layer knows it.
 */
struct cla_error {
    int code;                    /* negative errno-style code, 0 when unset */
    char msg[CLA_ERR_MSG_MAX];   /* "deliver: openat2 'tmp/x.so': ELOOP" */
    char hint[CLA_ERR_HINT_MAX]; /* "run as uid 1000 or give CAP_SYS_PTRACE" */
};

/* Sets code and message (replacing any earlier ones) and clears the hint.
 * Returns `code`, which must be negative, so that `return err_set(e, -EPROTO, ...)` works.
 * `e` may be NULL. */
int err_set(struct cla_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like err_set() with the description of `-code` appended as ": <strerror>". */
int err_setsys(struct cla_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "<context>: " to the message; keeps code and hint. Returns e->code (with e NULL: the
 * code of the last err_set/err_setsys(NULL, ...) on this thread). */
int err_prefix(struct cla_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the next step for a person, replacing an earlier one. Returns e->code (with e NULL: as
 * err_prefix()). */
int err_hint(struct cla_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resets to "no error". */
void err_clear(struct cla_error *e);

/* Short symbolic name of an errno value ("ELOOP"), or NULL when unknown. */
const char *err_errno_name(int errnum);

#endif
