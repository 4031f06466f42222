/* SPDX-License-Identifier: Apache-2.0 */
/* The seccomp program for the step between two stages, emitted by hand from the rule table:
 * each syscall whose rules differ, its conditions and its action. */
#include "sandbox/sandbox_delta.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <string.h>

#include "base/util.h"

/* seccomp_data.args[] holds 64-bit values; the two 32-bit loads below take the low word at the
 * lower address. Both architectures clrattach builds for are little-endian. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sandbox_delta: the argument word offsets assume a little-endian machine"
#endif
#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define ARG_HI(i) (ARG_LO(i) + 4)

#define LD_ABS  (BPF_LD | BPF_W | BPF_ABS)
#define JEQ_K   (BPF_JMP | BPF_JEQ | BPF_K)
#define AND_K   (BPF_ALU | BPF_AND | BPF_K)
#define RET_K   (BPF_RET | BPF_K)
#define MAX_NRS 64 /* changed syscalls in one step; the table has about a dozen per step */

struct emit {
    struct sock_filter *out;
    size_t cap, n;
    int err;
};

static size_t put(struct emit *em, uint16_t code, uint32_t k)
{
    if (em->n >= em->cap) {
        em->err = -E2BIG;
        return em->n;
    }
    em->out[em->n] = (struct sock_filter){.code = code, .k = k};
    return em->n++;
}

/* Points the false branch of the jump at `at` to the next instruction to be emitted. BPF jump
 * offsets are 8 bits: a step never comes near, but a longer one is refused, not wrapped. */
static void land_false(struct emit *em, size_t at)
{
    if (em->err || at >= em->n)
        return;
    size_t off = em->n - at - 1;
    if (off > 255)
        em->err = -E2BIG;
    else
        em->out[at].jf = (uint8_t)off;
}

bool sandbox_delta_exists(enum sandbox_stage from, enum sandbox_stage to)
{
    return from < to && to <= SANDBOX_STAGE_REPORT;
}

static uint32_t rule_action(const struct sandbox_rule *r)
{
    return r->errno_ret ? SECCOMP_RET_ERRNO | ((uint32_t)r->errno_ret & SECCOMP_RET_DATA)
                        : SECCOMP_RET_ALLOW;
}

static uint64_t rule_datum(const struct sandbox_rule *r, const struct sandbox_bpf_values *v)
{
    switch (r->dyn) {
    case SANDBOX_DYN_EUID: return v->euid;
    case SANDBOX_DYN_EGID: return v->egid;
    case SANDBOX_DYN_PID: return v->pid;
    case SANDBOX_DYN_NONE: break;
    }
    return r->datum;
}

/* One 32-bit word of an argument against `datum` under `mask` ((word & mask) == datum, as
 * libseccomp's SCMP_CMP_MASKED_EQ and, with a full mask, SCMP_CMP_EQ). Appends the jump to take
 * when it does not match to `fails`. Returns false when the word can never match. */
static bool test_word(struct emit *em, uint32_t off, uint32_t mask, uint32_t datum, size_t *fails,
                      size_t *n_fails)
{
    if ((datum & ~mask) != 0)
        return false;
    if (mask == 0)
        return true; /* (word & 0) == 0: always */
    put(em, LD_ABS, off);
    if (mask != 0xffffffffu)
        put(em, AND_K, mask);
    fails[(*n_fails)++] = put(em, JEQ_K, datum);
    return true;
}

/* A rule's condition, then its action; a condition that fails falls through to what follows. */
static void emit_rule(struct emit *em, const struct sandbox_rule *r,
                      const struct sandbox_bpf_values *v)
{
    size_t fails[2], n_fails = 0;
    uint64_t mask = r->op == SANDBOX_ARG_MASKED_EQ ? r->mask : UINT64_MAX;
    uint64_t datum = rule_datum(r, v);
    if (r->op != SANDBOX_ARG_NONE) {
        size_t start = em->n;
        if (!test_word(em, ARG_HI(r->arg), (uint32_t)(mask >> 32), (uint32_t)(datum >> 32), fails,
                       &n_fails) ||
            !test_word(em, ARG_LO(r->arg), (uint32_t)mask, (uint32_t)datum, fails, &n_fails)) {
            em->n = start; /* never matches: the rule adds nothing */
            return;
        }
    }
    put(em, RET_K, rule_action(r));
    for (size_t i = 0; i < n_fails; i++)
        land_false(em, fails[i]);
}

#define MAX_RULES 16 /* rules of one syscall in one stage; prctl has the most, five */

/* The rules of syscall `name` in the stage with bit `bit`, by index into `idx`. Returns how
 * many, or -1 when there are more than MAX_RULES. */
static int rules_of(const struct sandbox_rule *rules, size_t n, const char *name, unsigned bit,
                    size_t idx[MAX_RULES])
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(rules[i].stages & bit) || strcmp(rules[i].name, name) != 0)
            continue;
        if (k == MAX_RULES)
            return -1;
        idx[k++] = i;
    }
    return k;
}

/* Rules of one syscall with different actions are safe in any order only when no call can
 * match two of them: the same argument compared under the same mask with different data. */
static bool actions_disjoint(const struct sandbox_rule *rules, const size_t *idx, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        for (size_t j = i + 1; j < k; j++) {
            const struct sandbox_rule *a = &rules[idx[i]], *b = &rules[idx[j]];
            if (rule_action(a) == rule_action(b))
                continue;
            uint64_t ma = a->op == SANDBOX_ARG_MASKED_EQ ? a->mask : UINT64_MAX;
            uint64_t mb = b->op == SANDBOX_ARG_MASKED_EQ ? b->mask : UINT64_MAX;
            if (a->op == SANDBOX_ARG_NONE || b->op == SANDBOX_ARG_NONE || a->arg != b->arg ||
                ma != mb || a->dyn != SANDBOX_DYN_NONE || b->dyn != SANDBOX_DYN_NONE ||
                (a->datum & ma) == (b->datum & mb))
                return false;
        }
    }
    return true;
}

static bool has_dyn(const struct sandbox_rule *rules, const size_t *idx, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (rules[idx[i]].dyn != SANDBOX_DYN_NONE)
            return true;
    return false;
}

/* Whether rule `i` is the first of its name among the rules of either stage. */
static bool first_of_name(const struct sandbox_rule *rules, size_t i, unsigned bits)
{
    if (!(rules[i].stages & bits))
        return false;
    for (size_t j = 0; j < i; j++)
        if ((rules[j].stages & bits) && strcmp(rules[j].name, rules[i].name) == 0)
            return false;
    return true;
}

int sandbox_delta_build(enum sandbox_stage from, enum sandbox_stage to, enum sandbox_mode mode,
                        uint32_t audit_arch, sandbox_nr_of_fn nr_of, void *nr_arg,
                        const struct sandbox_bpf_values *v, struct sock_filter *out, size_t cap,
                        struct cla_error *e)
{
    if (!sandbox_delta_exists(from, to) || mode == SANDBOX_MODE_OFF)
        return err_set(e, -EINVAL, "seccomp: no step from stage '%s' to '%s'",
                       sandbox_stage_name(from), sandbox_stage_name(to));
    const uint32_t kill = SECCOMP_RET_KILL_PROCESS;
    const uint32_t other = mode == SANDBOX_MODE_LOG ? SECCOMP_RET_LOG : kill;
    unsigned fbit = sandbox_stage_bit(from), tbit = sandbox_stage_bit(to);
    struct emit em = {.out = out, .cap = cap};
    /* libseccomp's opening, which sandbox_bpf_check_arch looks for: a call of another
     * architecture is killed here as by the full programs (which already did). */
    put(&em, LD_ABS, (uint32_t)offsetof(struct seccomp_data, arch));
    size_t arch_jump = put(&em, JEQ_K, audit_arch);
    if (!em.err)
        em.out[arch_jump].jt = 1;
    put(&em, RET_K, kill);
    put(&em, LD_ABS, (uint32_t)offsetof(struct seccomp_data, nr));

    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    int seen[MAX_NRS];
    size_t n_seen = 0;
    for (size_t i = 0; i < n && !em.err; i++) {
        if (!first_of_name(rules, i, fbit | tbit))
            continue;
        size_t was[MAX_RULES], now[MAX_RULES];
        int kw = rules_of(rules, n, rules[i].name, fbit, was);
        int kn = rules_of(rules, n, rules[i].name, tbit, now);
        if (kw < 0 || kn < 0)
            return err_set(e, -E2BIG, "seccomp step: over %d rules for %s", MAX_RULES,
                           rules[i].name);
        /* The same rules: the earlier filter answers as this stage would. Not so for a rule
         * with run-time data: the earlier filter holds the values of its own load, and a forked
         * watch child's stages must name the child's pid (sandbox.c), so such a rule is always
         * part of the step, with the values of this load. */
        if (kw == kn && memcmp(was, now, (size_t)kn * sizeof(*now)) == 0 &&
            !has_dyn(rules, now, (size_t)kn))
            continue;
        int nr = nr_of(rules[i].name, nr_arg);
        if (nr < 0)
            continue;
        for (size_t s = 0; s < n_seen; s++)
            if (seen[s] == nr)
                return err_set(e, -EINVAL, "seccomp step: two names for syscall %d", nr);
        if (n_seen == ARRAY_SIZE(seen))
            return err_set(e, -E2BIG, "seccomp step: over %zu changed syscalls", n_seen);
        seen[n_seen++] = nr;
        if (!actions_disjoint(rules, now, (size_t)kn))
            return err_set(e, -EINVAL,
                           "seccomp step to '%s': the rules of %s mix actions on conditions that "
                           "may overlap",
                           sandbox_stage_name(to), rules[i].name);
        /* This syscall's block answers exactly as the later stage's rules do, its default
         * where none matches; every other syscall jumps over it. */
        size_t block = put(&em, JEQ_K, (uint32_t)nr);
        for (int r = 0; r < kn; r++)
            emit_rule(&em, &rules[now[r]], v);
        put(&em, RET_K, other);
        land_false(&em, block);
    }
    put(&em, RET_K, SECCOMP_RET_ALLOW);
    if (em.err)
        return err_set(e, em.err, "seccomp step from '%s' to '%s' does not fit %zu instructions",
                       sandbox_stage_name(from), sandbox_stage_name(to), cap);
    return (int)em.n;
}
