/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp programs of every stage and mode, compiled from the rule table when clrattach is
 * built (tools/sandbox_gen.c, run by the Makefile, writes them into $(BUILD)/gen). At run time
 * a program is copied, its sentinels patched and handed to seccomp(2): no compiler runs in the
 * process, least of all after a target's bytes were parsed. Pure: no syscalls in this module.
 */
#ifndef CLRATTACH_SANDBOX_BPF_H
#define CLRATTACH_SANDBOX_BPF_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "sandbox/sandbox_policy.h"

/* Stand-ins for the run-time data of SANDBOX_DYN_* rules, compiled as the rules' datum and
 * replaced in a copy at load time (a forked watch child gets its own pid). The generator proves
 * that they occur nowhere else: it compiles every program with a second set and checks that
 * the two differ exactly where these stand. */
#define SANDBOX_SENTINEL_EUID 0x5ecc0de1u
#define SANDBOX_SENTINEL_EGID 0x5ecc0de2u
#define SANDBOX_SENTINEL_PID  0x5ecc0de3u

struct sandbox_bpf {
    const struct sock_filter *insns;
    uint16_t len;
};

/* What the generator emits: the AUDIT_ARCH_* the programs check for, and one program per stage
 * and mode (SANDBOX_MODE_KILL, SANDBOX_MODE_LOG). The kill action in them is
 * SECCOMP_RET_KILL_PROCESS. */
struct sandbox_bpf_set {
    uint32_t audit_arch;
    const char *arch_name;
    struct sandbox_bpf prog[SANDBOX_STAGE_COUNT][2];
    /* [from][to][mode]: the step programs (sandbox_delta.h) for every pair where
     * sandbox_delta_exists(from, to); the others are {NULL, 0}. */
    struct sandbox_bpf delta[SANDBOX_STAGE_COUNT][SANDBOX_STAGE_COUNT][2];
};

/* The programs built with this binary ($(BUILD)/gen/sandbox_bpf_<arch>.c). */
extern const struct sandbox_bpf_set sandbox_bpf_builtin;

/* The values the sentinels become, and whether the kernel knows SECCOMP_RET_KILL_PROCESS
 * (4.14+); without it every KILL_PROCESS return becomes KILL_THREAD. */
struct sandbox_bpf_values {
    uint32_t euid, egid, pid;
    bool kill_process;
};

/* AUDIT_ARCH_* of the architecture this file is compiled for; 0 where clrattach has none. */
uint32_t sandbox_bpf_native_arch(void);

/* Checks that `set` was built for `audit_arch` and that each program (full or step) starts with
 * the arch test for it. 0, or -ENOEXEC. */
int sandbox_bpf_check_arch(const struct sandbox_bpf_set *set, uint32_t audit_arch,
                           struct cla_error *e);

/* Copies `prog` into `out` (room for `cap` instructions) with every sentinel (a BPF_JEQ|BPF_K
 * constant) replaced by its value and, without kill_process, KILL_PROCESS returns lowered.
 * Returns the instruction count, -E2BIG when `out` is too small, -EPROTO for an empty or
 * over-long program (BPF_MAXINSNS). `ret_sites` (may be NULL) gets how many sentinels were
 * replaced. */
int sandbox_bpf_patch(const struct sandbox_bpf *prog, const struct sandbox_bpf_values *v,
                      struct sock_filter *out, size_t cap, size_t *ret_sites, struct cla_error *e);

#endif
