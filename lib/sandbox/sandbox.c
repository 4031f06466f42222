/* SPDX-License-Identifier: Apache-2.0 */
/* Entering the sandbox: the build-time program of a stage patched and loaded, later stages
 * stacked as tighter filters, the mode parsed, and capabilities dropped. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/sandbox_bpf.h"
#include "base/util.h"
#include "base/syscalls.h"

/* Process-wide: a seccomp filter is a property of the process, not of a caller's object. */
static struct {
    bool entered;
    bool kill_process;     /* the kernel has SECCOMP_RET_KILL_PROCESS */
    bool bounding_dropped; /* sandbox_drop_caps made its first call's changes already */
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

/* Whether the kernel knows SECCOMP_RET_KILL_PROCESS (4.14+): the same question libseccomp's API
 * level 3 asks, without libseccomp. A kernel too old for GET_ACTION_AVAIL answers EINVAL. */
static bool kernel_has_kill_process(void)
{
    uint32_t action = SECCOMP_RET_KILL_PROCESS;
    return sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

/* Loads a built-in program (a stage's, or the step to it) for entering `stage`, its run-time
 * data patched in. The copy lives in static storage: no allocation on the way, and one program
 * is loaded at a time. */
static int load_program(const struct sandbox_bpf *p, enum sandbox_stage stage, struct cla_error *e)
{
    static struct sock_filter insns[BPF_MAXINSNS];
    /* COMPAT(kernel < 4.14): without SECCOMP_RET_KILL_PROCESS only the offending thread
     * dies and the others run on. */
    const struct sandbox_bpf_values v = {
        .euid = (uint32_t)geteuid(),
        .egid = (uint32_t)getegid(),
        .pid = (uint32_t)getpid(),
        .kill_process = state.kill_process,
    };
    int n = sandbox_bpf_patch(p, &v, insns, ARRAY_SIZE(insns), NULL, e);
    if (n < 0)
        return n;
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = insns};
    /* TSYNC: libcurl's resolver threads may already run when a stage is tightened; a filter on
     * the calling thread alone would leave them the old rights. */
    long r = sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (r < 0)
        return err_setsys(e, -errno, "loading the seccomp filter of stage '%s'",
                          sandbox_stage_name(stage));
    if (r > 0)
        return err_set(e, -ESRCH, "seccomp stage '%s': thread %ld could not be synchronised",
                       sandbox_stage_name(stage), r);
    return 0;
}

/* Stages only take rights away: ATTACH, DELIVERED and REPORT follow FULL in that order, PS
 * follows FULL only and nothing follows PS; QUERY follows FULL only and only REPORT follows it
 * (loaded whole there: REPORT's rules are a subset of QUERY's). */
static bool may_follow(enum sandbox_stage from, enum sandbox_stage to)
{
    /* LISTEN stands apart like PS, and is only ever entered from the start. */
    if (from == SANDBOX_STAGE_LISTEN || to == SANDBOX_STAGE_LISTEN)
        return from == to;
    if (from == SANDBOX_STAGE_PS || to == SANDBOX_STAGE_PS)
        return from == SANDBOX_STAGE_FULL || from == to;
    if (to == SANDBOX_STAGE_QUERY)
        return from == SANDBOX_STAGE_FULL || from == to;
    if (from == SANDBOX_STAGE_QUERY)
        return to == SANDBOX_STAGE_REPORT;
    return to >= from;
}

int sandbox_enter_at(enum sandbox_mode mode, enum sandbox_stage stage, struct cla_error *e)
{
    if (state.entered)
        return err_set(e, -EALREADY, "seccomp sandbox already entered");
    if ((unsigned)stage >= SANDBOX_STAGE_COUNT)
        return err_set(e, -EINVAL, "seccomp: no stage %d", (int)stage);
    if (mode == SANDBOX_MODE_OFF) {
        state.entered = true;
        state.mode = mode;
        state.stage = stage;
        return 0;
    }
    int r = sandbox_bpf_check_arch(&sandbox_bpf_builtin, sandbox_bpf_native_arch(), e);
    if (r < 0) {
        err_prefix(e, "seccomp");
        return err_hint(e, "build clrattach with SECCOMP_ARCH set to the architecture it runs on");
    }
    /* Without no_new_privs an unprivileged process may not load a filter, and with it no
     * execve could ever raise our privileges again (the filter forbids execve anyway). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return err_setsys(e, -errno, "prctl(PR_SET_NO_NEW_PRIVS)");
    state.kill_process = kernel_has_kill_process();
    r = load_program(&sandbox_bpf_builtin.prog[stage][mode], stage, e);
    if (r < 0) {
        err_prefix(e, "seccomp");
        return err_hint(e, "run with --seccomp=off on a kernel without seccomp filters");
    }
    state.entered = true;
    state.mode = mode;
    state.stage = stage;
    return 0;
}

int sandbox_enter(enum sandbox_mode mode, struct cla_error *e)
{
    return sandbox_enter_at(mode, SANDBOX_STAGE_FULL, e);
}

int sandbox_tighten(enum sandbox_stage stage, struct cla_error *e)
{
    if (!state.entered)
        return err_set(e, -EINVAL, "seccomp: tighten before the sandbox was entered");
    if ((unsigned)stage >= SANDBOX_STAGE_COUNT || !may_follow(state.stage, stage))
        return err_set(e, -EINVAL, "seccomp: stage '%s' after '%s': stages only go forward",
                       sandbox_stage_name(stage), sandbox_stage_name(state.stage));
    if (stage == state.stage || state.mode == SANDBOX_MODE_OFF) {
        state.stage = stage;
        return 0;
    }
    /* The step from the stage loaded last (sandbox_delta.h): it answers only for the calls
     * whose rules differ, the loaded filters judge the rest by the same rules. A step also
     * covers a stage skipped on the way (ATTACH to REPORT after a failed delivery). Without one,
     * the whole stage: each stage's rule set is a subset of the earlier ones'. */
    const struct sandbox_bpf *step = &sandbox_bpf_builtin.delta[state.stage][stage][state.mode];
    int r =
        load_program(step->insns ? step : &sandbox_bpf_builtin.prog[stage][state.mode], stage, e);
    if (r < 0)
        return err_prefix(e, "seccomp");
    state.stage = stage;
    return 0;
}

int sandbox_drop_caps(uint64_t keep, bool bounding, struct cla_error *e)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2] = {{0}};
    if (sys_capget(&hdr, data) < 0)
        return err_setsys(e, -errno, "capget");

    if (!state.bounding_dropped) {
        /* First, so that the bounding-set reasoning below holds whatever happens later. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            return err_setsys(e, -errno, "prctl(PR_SET_NO_NEW_PRIVS)");
        /* The bounding set only limits what an execve could grant. Shrinking it takes
         * CAP_SETPCAP; a process without it (run as the target's own user) keeps a full
         * bounding set, which is harmless under no_new_privs: file capabilities are ignored
         * and nothing can be gained back. Dropping a capability that is not in the set is a
         * no-op, and EINVAL past the kernel's last capability ends the loop: one call per
         * capability the kernel has (about 50 µs for 40), none without CAP_SETPCAP or where
         * the caller's filter forbids exec. */
        if (bounding && (data[0].effective & (1u << CAP_SETPCAP))) {
            for (int cap = 0; cap < 64; cap++) {
                if (keep & (1ULL << cap))
                    continue;
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
                    continue;
                if (errno == EINVAL)
                    break;
                return err_setsys(e, -errno, "dropping capability %d from the bounding set", cap);
            }
        }
        /* COMPAT(kernel < 4.3): no ambient set, so nothing to clear. Later calls need not:
         * capset below keeps ambient within permitted and inheritable. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
            return err_setsys(e, -errno, "clearing the ambient capabilities");
        state.bounding_dropped = true;
    }

    for (int i = 0; i < 2; i++) {
        uint32_t k = (uint32_t)(keep >> (32 * i));
        data[i].effective &= k;
        data[i].permitted &= k;
        data[i].inheritable &= k;
    }
    hdr.pid = 0;
    if (sys_capset(&hdr, data) < 0) {
        err_setsys(e, -errno, "capset");
        return err_hint(e, "capabilities can only be lowered; this is a kernel refusal");
    }
    return 0;
}
