/* SPDX-License-Identifier: Apache-2.0 */
/* The run-time side of the built-in seccomp programs: the native audit architecture, the check
 * that a program is for it, and a copy with its sentinels patched. */
#include "sandbox/sandbox_bpf.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>

#include "base/util.h"

uint32_t sandbox_bpf_native_arch(void)
{
#if defined(__x86_64__)
    return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    return AUDIT_ARCH_AARCH64;
#else
    return 0;
#endif
}

/* libseccomp opens every program with "ld [arch]; jeq #AUDIT_ARCH_x": a program whose first
 * test names another architecture would judge our native numbers by a foreign table. */
static bool starts_with_arch(const struct sandbox_bpf *p, uint32_t audit_arch)
{
    return p->insns && p->len >= 2 && p->insns[0].code == (BPF_LD | BPF_W | BPF_ABS) &&
           p->insns[0].k == offsetof(struct seccomp_data, arch) &&
           p->insns[1].code == (BPF_JMP | BPF_JEQ | BPF_K) && p->insns[1].k == audit_arch;
}

int sandbox_bpf_check_arch(const struct sandbox_bpf_set *set, uint32_t audit_arch,
                           struct cla_error *e)
{
    if (audit_arch == 0 || set->audit_arch != audit_arch)
        return err_set(e, -ENOEXEC, "filters built for %s (0x%08x), this binary runs as 0x%08x",
                       set->arch_name, set->audit_arch, audit_arch);
    for (size_t s = 0; s < ARRAY_SIZE(set->prog); s++)
        for (size_t m = 0; m < ARRAY_SIZE(set->prog[s]); m++)
            if (!starts_with_arch(&set->prog[s][m], audit_arch))
                return err_set(e, -ENOEXEC, "filter %zu/%zu does not test for 0x%08x", s, m,
                               audit_arch);
    for (size_t f = 0; f < ARRAY_SIZE(set->delta); f++)
        for (size_t t = 0; t < ARRAY_SIZE(set->delta[f]); t++)
            for (size_t m = 0; m < ARRAY_SIZE(set->delta[f][t]); m++)
                if (set->delta[f][t][m].insns &&
                    !starts_with_arch(&set->delta[f][t][m], audit_arch))
                    return err_set(e, -ENOEXEC, "step %zu->%zu/%zu does not test for 0x%08x", f, t,
                                   m, audit_arch);
    return 0;
}

int sandbox_bpf_patch(const struct sandbox_bpf *prog, const struct sandbox_bpf_values *v,
                      struct sock_filter *out, size_t cap, size_t *ret_sites, struct cla_error *e)
{
    if (!prog->insns || prog->len == 0 || prog->len > BPF_MAXINSNS)
        return err_set(e, -EPROTO, "seccomp program of %u instructions", (unsigned)prog->len);
    if (prog->len > cap)
        return err_set(e, -E2BIG, "seccomp program of %u instructions, room for %zu",
                       (unsigned)prog->len, cap);
    size_t sites = 0;
    for (size_t i = 0; i < prog->len; i++) {
        struct sock_filter f = prog->insns[i];
        if (f.code == (BPF_JMP | BPF_JEQ | BPF_K)) {
            switch (f.k) {
            case SANDBOX_SENTINEL_EUID:
                f.k = v->euid;
                sites++;
                break;
            case SANDBOX_SENTINEL_EGID:
                f.k = v->egid;
                sites++;
                break;
            case SANDBOX_SENTINEL_PID:
                f.k = v->pid;
                sites++;
                break;
            }
        } else if (f.code == (BPF_RET | BPF_K) && f.k == SECCOMP_RET_KILL_PROCESS &&
                   !v->kill_process) {
            /* COMPAT(kernel < 4.14): no KILL_PROCESS; only the offending thread dies. */
            f.k = SECCOMP_RET_KILL_THREAD;
        }
        out[i] = f;
    }
    if (ret_sites)
        *ret_sites = sites;
    return prog->len;
}
