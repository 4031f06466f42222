/* SPDX-License-Identifier: Apache-2.0 */
#include "sandbox.h"

#include <errno.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Process-wide: a seccomp filter is a property of the process, not of a caller's object. */
static struct {
    bool entered;
    enum sandbox_mode mode;
    enum sandbox_stage stage;
} state;

int sandbox_parse_mode(const char *s, enum sandbox_mode *ret_mode, struct cla_error *e)
{
    static const struct {
        const char *name;
        enum sandbox_mode mode;
    } names[] = {
        {"kill", SANDBOX_MODE_KILL},
        {"log", SANDBOX_MODE_LOG},
        {"off", SANDBOX_MODE_OFF},
    };
    for (size_t i = 0; s && i < ARRAY_SIZE(names); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *ret_mode = names[i].mode;
            return 0;
        }
    }
    err_set(e, -EINVAL, "unknown seccomp mode '%s'", s ? s : "(null)");
    return err_hint(e, "use --seccomp=kill (default), --seccomp=log or --seccomp=off");
}

static unsigned stage_bit(enum sandbox_stage stage)
{
    switch (stage) {
    case SANDBOX_STAGE_FULL: return SANDBOX_IN_FULL;
    case SANDBOX_STAGE_DELIVERED: return SANDBOX_IN_DELIVERED;
    case SANDBOX_STAGE_REPORT: return SANDBOX_IN_REPORT;
    }
    return 0;
}

static const char *stage_name(enum sandbox_stage stage)
{
    switch (stage) {
    case SANDBOX_STAGE_FULL: return "full";
    case SANDBOX_STAGE_DELIVERED: return "delivered";
    case SANDBOX_STAGE_REPORT: return "report";
    }
    return "?";
}

static uint32_t default_action(enum sandbox_mode mode)
{
    if (mode == SANDBOX_MODE_LOG)
        return SCMP_ACT_LOG;
    /* COMPAT(kernel < 4.14): without SECCOMP_RET_KILL_PROCESS only the offending thread
     * dies and the others run on; libseccomp reports API level 3+ when the kernel has it. */
    return seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
}

static uint64_t dyn_datum(enum sandbox_arg_dyn dyn, uint64_t fixed)
{
    switch (dyn) {
    case SANDBOX_DYN_NONE: return fixed;
    case SANDBOX_DYN_EUID: return (uint32_t)geteuid();
    case SANDBOX_DYN_EGID: return (uint32_t)getegid();
    case SANDBOX_DYN_PID: return (uint32_t)getpid();
    }
    return fixed;
}

static void release_ctx(scmp_filter_ctx *ctx)
{
    if (*ctx)
        seccomp_release(*ctx);
}

/* Builds and loads the complete allow-list of one stage. Errors from libseccomp are negative
 * errno values already. */
static int load_stage(enum sandbox_stage stage, enum sandbox_mode mode, struct cla_error *e)
{
    __attribute__((cleanup(release_ctx))) scmp_filter_ctx ctx = seccomp_init(default_action(mode));
    if (!ctx)
        return err_set(e, -ENOMEM, "seccomp_init failed");
    /* A 32-bit (int 0x80) or x32 call from a 64-bit process has its own numbering and would
     * slip past a list of native numbers: never legitimate here, killed even in log mode. */
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, default_action(SANDBOX_MODE_KILL));
    /* TSYNC: libcurl's resolver threads may already run when a stage is tightened; a filter on
     * the calling thread alone would leave them the old rights. */
    if (r >= 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    if (r < 0)
        return err_setsys(e, r, "seccomp attributes");

    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    unsigned bit = stage_bit(stage);
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
        uint64_t datum = dyn_datum(rule->dyn, rule->datum);
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
    r = seccomp_load(ctx);
    if (r < 0)
        return err_setsys(e, r, "loading the seccomp filter of stage '%s'", stage_name(stage));
    return 0;
}

int sandbox_enter(enum sandbox_mode mode, struct cla_error *e)
{
    if (state.entered)
        return err_set(e, -EALREADY, "seccomp sandbox already entered");
    if (mode == SANDBOX_MODE_OFF) {
        state = (typeof(state)){.entered = true, .mode = mode, .stage = SANDBOX_STAGE_FULL};
        return 0;
    }
    /* Without no_new_privs an unprivileged process may not load a filter, and with it no
     * execve could ever raise our privileges again (the filter forbids execve anyway). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return err_setsys(e, -errno, "prctl(PR_SET_NO_NEW_PRIVS)");
    int r = load_stage(SANDBOX_STAGE_FULL, mode, e);
    if (r < 0) {
        err_prefix(e, "seccomp");
        return err_hint(e, "run with --seccomp=off on a kernel without seccomp filters");
    }
    state = (typeof(state)){.entered = true, .mode = mode, .stage = SANDBOX_STAGE_FULL};
    return 0;
}

int sandbox_tighten(enum sandbox_stage stage, struct cla_error *e)
{
    if (!state.entered)
        return err_set(e, -EINVAL, "seccomp: tighten before the sandbox was entered");
    if (stage < state.stage)
        return err_set(e, -EINVAL, "seccomp: stage '%s' after '%s': stages only go forward",
                       stage_name(stage), stage_name(state.stage));
    if (stage == state.stage || state.mode == SANDBOX_MODE_OFF) {
        state.stage = stage;
        return 0;
    }
    /* Each stage's rule set is a subset of the earlier ones', so loading just the target
     * stage also applies the cuts of a stage that was skipped. */
    int r = load_stage(stage, state.mode, e);
    if (r < 0)
        return err_prefix(e, "seccomp");
    state.stage = stage;
    return 0;
}

int sandbox_drop_caps(uint64_t keep, struct cla_error *e)
{
    /* First, so that the bounding-set test below holds whatever happens later. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return err_setsys(e, -errno, "prctl(PR_SET_NO_NEW_PRIVS)");

    /* The bounding set only limits what an execve could grant. Shrinking it takes
     * CAP_SETPCAP; a process without it (run as the target's own user) keeps a full bounding
     * set, which is harmless under no_new_privs: file capabilities are ignored and nothing
     * can be gained back. PR_CAPBSET_READ says EINVAL past the kernel's last capability. */
    for (int cap = 0; cap < 64; cap++) {
        if (keep & (1ULL << cap))
            continue;
        int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (in < 0)
            break;
        if (in == 0)
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM)
            return err_setsys(e, -errno, "dropping capability %d from the bounding set", cap);
    }
    /* COMPAT(kernel < 4.3): no ambient set, so nothing to clear. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return err_setsys(e, -errno, "clearing the ambient capabilities");

    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capget, &hdr, data) < 0)
        return err_setsys(e, -errno, "capget");
    for (int i = 0; i < 2; i++) {
        uint32_t k = (uint32_t)(keep >> (32 * i));
        data[i].effective &= k;
        data[i].permitted &= k;
        data[i].inheritable &= k;
    }
    hdr.pid = 0;
    if (syscall(SYS_capset, &hdr, data) < 0) {
        err_setsys(e, -errno, "capset");
        return err_hint(e, "capabilities can only be lowered; this is a kernel refusal");
    }
    return 0;
}
