/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The step from one stage of the rule table to a later one, as a small seccomp program of its
 * own. Filters stack and the kernel takes the strictest answer of all of them, so once the
 * program of stage `from` is loaded, the later stage needs to answer only for the syscalls whose
 * rules differ between the two (the calls a stage takes away, the argument checks it narrows),
 * exactly as that stage's full program would, and allow everything else: the earlier filter
 * still judges the rest, with the same rules. A rule with run-time data (our pid, our uid) is
 * always part of the step, with the values of its load, as in the full program. A full stage
 * program (about 170 instructions) costs the kernel about 40 µs to check, convert and JIT-compile
 * at each tightening; a step, a few dozen instructions, a quarter of that.
 *
 * Built at build time by tools/sandbox_gen.c (and again by the tests, which prove the stack of
 * step programs answers every call as the stack of full programs does). Pure: no syscalls.
 */
#ifndef CLRATTACH_SANDBOX_DELTA_H
#define CLRATTACH_SANDBOX_DELTA_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sandbox/sandbox_bpf.h"
#include "sandbox/sandbox_policy.h"

/* The syscall number of `name` on the architecture the step is built for, or a negative value
 * when that architecture has no such call (its rules are skipped, as libseccomp skips them). */
typedef int (*sandbox_nr_of_fn)(const char *name, void *arg);

/* Writes into `out` (room for `cap` instructions) the step program from `from` to `to` in
 * `mode` (KILL or LOG) for `audit_arch`, run-time data from `v` (the generator passes the
 * sentinels). It opens with libseccomp's architecture test, so sandbox_bpf_check_arch accepts
 * it. Returns the instruction count; -EINVAL when `to` does not follow `from` (sandbox.c's
 * may_follow) or a changed syscall mixes actions on conditions that could overlap (the step
 * could then answer otherwise than libseccomp's full program); -E2BIG when `out` or a jump is
 * too short. */
int sandbox_delta_build(enum sandbox_stage from, enum sandbox_stage to, enum sandbox_mode mode,
                        uint32_t audit_arch, sandbox_nr_of_fn nr_of, void *nr_arg,
                        const struct sandbox_bpf_values *v, struct sock_filter *out, size_t cap,
                        struct cla_error *e);

/* Whether stage `to` may be entered from `from` by a step: both of the attach path (FULL,
 * ATTACH, DELIVERED, REPORT) and `to` later. PS is entered from the start only. */
bool sandbox_delta_exists(enum sandbox_stage from, enum sandbox_stage to);

#endif
