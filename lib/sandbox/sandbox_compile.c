/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table compiled with libseccomp into one stage's program, for the build-time
 * generator and the tests; never linked into clrattach itself. */
#include "sandbox/sandbox_compile.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static uint64_t dyn_datum(enum sandbox_arg_dyn dyn, uint64_t fixed,
                          const struct sandbox_bpf_values *v)
{
    switch (dyn) {
    case SANDBOX_DYN_NONE: return fixed;
    case SANDBOX_DYN_EUID: return v->euid;
    case SANDBOX_DYN_EGID: return v->egid;
    case SANDBOX_DYN_PID: return v->pid;
    }
    return fixed;
}

static void release_ctx(scmp_filter_ctx *ctx)
{
    if (*ctx)
        seccomp_release(*ctx);
}

/* libseccomp 2.5 exports to an fd only (seccomp_export_bpf_mem is 2.6). */
static int export_bpf(scmp_filter_ctx ctx, struct sock_filter **ret_insns, size_t *ret_len,
                      struct cla_error *e)
{
    _cleanup_close_ int fd = memfd_create("sandbox_bpf", MFD_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, -errno, "memfd_create");
    int r = seccomp_export_bpf(ctx, fd);
    if (r < 0)
        return err_setsys(e, r, "seccomp_export_bpf");
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "fstat");
    size_t size = (size_t)st.st_size;
    if (size == 0 || size % sizeof(struct sock_filter) ||
        size / sizeof(struct sock_filter) > BPF_MAXINSNS)
        return err_set(e, -EPROTO, "libseccomp exported %zu bytes", size);
    struct sock_filter *insns = malloc(size);
    if (!insns)
        return err_set(e, -ENOMEM, "out of memory");
    if (pread(fd, insns, size, 0) != (ssize_t)size) {
        free(insns);
        return err_set(e, -EIO, "reading the exported program back");
    }
    *ret_insns = insns;
    *ret_len = size / sizeof(struct sock_filter);
    return 0;
}

int sandbox_compile_stage(enum sandbox_stage stage, enum sandbox_mode mode, uint32_t arch,
                          const struct sandbox_bpf_values *v, struct sock_filter **ret_insns,
                          size_t *ret_len, struct cla_error *e)
{
    const uint32_t kill = SCMP_ACT_KILL_PROCESS;
    _cleanup_(release_ctx) scmp_filter_ctx ctx =
        seccomp_init(mode == SANDBOX_MODE_LOG ? SCMP_ACT_LOG : kill);
    /* libseccomp gives no reason; besides memory, the usual one is a default action that the
     * API level (probed from the running kernel) does not offer. */
    if (!ctx)
        return err_set(e, -EINVAL,
                       "seccomp_init refused the %s default action (libseccomp API level %u)",
                       mode == SANDBOX_MODE_LOG ? "LOG" : "KILL_PROCESS", seccomp_api_get());
    /* A 32-bit (int 0x80) or x32 call from a 64-bit process has its own numbering and would
     * slip past a list of native numbers: never legitimate here, killed even in log mode. */
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, kill);
    /* The program is only exported; sandbox.c sets no_new_privs itself. */
    if (r >= 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    /* A binary tree over the syscall numbers (libseccomp 2.5+): the kernel evaluates the
     * first filter for every syscall number when it is loaded (its action cache), and a
     * linear list of ~80 syscalls made that load take about twice as long. */
    if (r >= 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r < 0)
        return err_setsys(e, r, "seccomp attributes");
    /* A cross build: the program judges the target architecture's numbers only. Names are
     * still resolved natively below; libseccomp translates them per architecture, and pseudo
     * numbers stand for names the native table lacks. */
    if (arch && arch != seccomp_arch_native()) {
        r = seccomp_arch_add(ctx, arch);
        if (r >= 0)
            r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
        if (r < 0)
            return err_setsys(e, r, "seccomp architecture 0x%08x", arch);
    }

    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    unsigned bit = sandbox_stage_bit(stage);
    for (size_t i = 0; i < n; i++) {
        const struct sandbox_rule *rule = &rules[i];
        if (!(rule->stages & bit))
            continue;
        int nr = seccomp_syscall_resolve_name(rule->name);
        /* Unknown to this libseccomp: nothing to allow. Names that exist on other
         * architectures only (poll on arm64) resolve to pseudo numbers libseccomp skips. */
        if (nr == __NR_SCMP_ERROR)
            continue;
        uint32_t action =
            rule->errno_ret ? SCMP_ACT_ERRNO((uint32_t)rule->errno_ret) : SCMP_ACT_ALLOW;
        struct scmp_arg_cmp cmp = {.arg = rule->arg};
        unsigned ncmp = 0;
        uint64_t datum = dyn_datum(rule->dyn, rule->datum, v);
        if (rule->op == SANDBOX_ARG_EQ) {
            cmp.op = SCMP_CMP_EQ;
            cmp.datum_a = datum;
            ncmp = 1;
        } else if (rule->op == SANDBOX_ARG_MASKED_EQ) {
            cmp.op = SCMP_CMP_MASKED_EQ;
            cmp.datum_a = rule->mask;
            cmp.datum_b = datum;
            ncmp = 1;
        }
        r = seccomp_rule_add_array(ctx, action, nr, ncmp, ncmp ? &cmp : NULL);
        if (r < 0)
            return err_setsys(e, r, "seccomp rule for %s", rule->name);
    }
    r = export_bpf(ctx, ret_insns, ret_len, e);
    if (r < 0)
        return err_prefix(e, "stage '%s'", sandbox_stage_name(stage));
    return 0;
}
