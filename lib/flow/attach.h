/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The whole attach, readable in one place: pin the target, act as its user, find its socket,
 * deliver the profiler into its filesystem view, send AttachProfiler, decode the answer. Every
 * outcome, success or not, ends in a filled `struct attach_result` that the CLI prints once and
 * reports; nothing here prints. The options, the pin and the result come from the attempt core
 * (attempt.h, which brings outcome.h), included here for every user of the attach.
 */
#ifndef CLRATTACH_ATTACH_H
#define CLRATTACH_ATTACH_H

#include "flow/attempt.h"

struct target;

/* Runs the attach on the pinned process `t` (attach_pin, or the one a watch scan selected).
 * Nothing is read from a pid that has changed hands since it was pinned, and nothing is sent to
 * it: a process that has exited, or a pid with another start time, is target_not_found. `t`
 * stays the caller's to close (its root fd may be opened here). Always fills *ret (the outcome
 * and, on failure, ret->error with message and next step). Returns 0 for ATTACH_OK, or the
 * negative error code. */
int attach_run(const struct attach_opts *o, struct target *t, struct attach_result *ret);

#endif
