/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rule table (sandbox_policy.c) compiled to a seccomp program by libseccomp. Used where a
 * compiler may run: the build-time generator (tools/sandbox_gen.c) and the tests that prove the
 * built-in programs are what the table says. clrattach itself never calls it.
 */
#ifndef CLRATTACH_SANDBOX_COMPILE_H
#define CLRATTACH_SANDBOX_COMPILE_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sandbox/sandbox_policy.h"
#include "sandbox/sandbox_bpf.h"

/* Compiles `stage` in `mode` (KILL or LOG) for `arch` (an SCMP_ARCH_* token; 0: native), with
 * the dynamic data taken from `v` and kills as SECCOMP_RET_KILL_PROCESS (v->kill_process is
 * ignored). Gives a malloc'd program the caller frees. Returns 0, or a negative errno from
 * libseccomp. */
int sandbox_compile_stage(enum sandbox_stage stage, enum sandbox_mode mode, uint32_t arch,
                          const struct sandbox_bpf_values *v, struct sock_filter **ret_insns,
                          size_t *ret_len, struct cla_error *e);

#endif
