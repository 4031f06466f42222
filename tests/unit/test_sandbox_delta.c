/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The step programs (lib/sandbox/sandbox_delta.c) against the full stage programs they stand in
 * for. Nothing is loaded here: a small interpreter of classic BPF runs the built-in programs as the
 * kernel does for a stack of filters (every filter judges the call, the strictest action wins,
 * and among equal actions the newest filter's), and every path of stages clrattach can take
 * must answer every call alike, one full program per stage or a step per tightening. The calls
 * are every syscall number up to 1023 (and of the other architectures' ranges), and for each
 * syscall the table names, each argument position set to every value a rule compares with and
 * its neighbours. tests/unit/test_sandbox.c checks the kernel's side, tightening for real.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox_bpf.h"
#include "sandbox/sandbox_delta.h"
#include "base/util.h"

/* One program as the kernel would run it, or 0 with a failed test for an instruction the
 * interpreter does not know (libseccomp's output must stay within what it checks). */
static uint32_t run_bpf(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
    uint32_t a = 0;
    const uint8_t *bytes = (const uint8_t *)d;
    for (size_t pc = 0; pc < n; pc++) {
        const struct sock_filter *i = &f[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (i->k % 4 || i->k > sizeof(*d) - 4)
                fail_msg("load at %u", i->k);
            memcpy(&a, bytes + i->k, 4);
            break;
        case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
        case BPF_JMP | BPF_JA: pc += i->k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
        case BPF_RET | BPF_K: return i->k;
        default: fail_msg("instruction 0x%04x at %zu", i->code, pc);
        }
    }
    fail_msg("program ran off its end");
    return 0;
}

/* A stack of loaded programs, oldest first, each patched with its own load's values. */
struct stack {
    struct sock_filter insns[8][BPF_MAXINSNS];
    size_t len[8];
    size_t n;
};

static void push(struct stack *s, const struct sandbox_bpf *p, const struct sandbox_bpf_values *v)
{
    assert_non_null(p->insns);
    assert_true(s->n < ARRAY_SIZE(s->len));
    struct cla_error e = {0};
    int n = sandbox_bpf_patch(p, v, s->insns[s->n], BPF_MAXINSNS, NULL, &e);
    assert_true(n > 0);
    s->len[s->n++] = (size_t)n;
}

/* The kernel's verdict over a stack (kernel/seccomp.c, seccomp_run_filters): newest first, a
 * filter's answer replaces the current one only when its action is strictly lower. */
static uint32_t run_stack(const struct stack *s, const struct seccomp_data *d)
{
    uint32_t ret = SECCOMP_RET_ALLOW;
    for (size_t i = s->n; i-- > 0;) {
        uint32_t cur = run_bpf(s->insns[i], s->len[i], d);
        if ((int32_t)(cur & SECCOMP_RET_ACTION_FULL) < (int32_t)(ret & SECCOMP_RET_ACTION_FULL))
            ret = cur;
    }
    return ret;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Argument values worth trying: each rule's datum under both value sets, its mask, and their
 * neighbours (one bit more, the high word set, everything set). */
static size_t interesting_values(const struct sandbox_bpf_values *v1,
                                 const struct sandbox_bpf_values *v2, uint64_t *out, size_t cap)
{
    size_t n = 0, nrules;
    const struct sandbox_rule *rules = sandbox_policy_rules(&nrules);
    const uint64_t fixed[] = {0, 1, 2, 0x7fffffff, 0xffffffff, 1ull << 32, UINT64_MAX};
    for (size_t i = 0; i < ARRAY_SIZE(fixed) && n < cap; i++)
        out[n++] = fixed[i];
    for (size_t i = 0; i < nrules; i++) {
        const struct sandbox_rule *r = &rules[i];
        uint64_t base[4] = {r->datum, r->mask, r->dyn ? 0 : r->datum, r->datum | r->mask};
        if (r->dyn == SANDBOX_DYN_EUID)
            base[2] = v1->euid, base[3] = v2->euid;
        if (r->dyn == SANDBOX_DYN_EGID)
            base[2] = v1->egid, base[3] = v2->egid;
        if (r->dyn == SANDBOX_DYN_PID)
            base[2] = v1->pid, base[3] = v2->pid;
        for (size_t b = 0; b < ARRAY_SIZE(base); b++) {
            const uint64_t x = base[b];
            const uint64_t vars[] = {x, x ^ 1, x | (1ull << 32), x | 0x40, ~x};
            for (size_t k = 0; k < ARRAY_SIZE(vars) && n < cap; k++)
                out[n++] = vars[k];
        }
    }
    /* many rules share a datum: each value once */
    qsort(out, n, sizeof(*out), cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

/* Whether some rule of the table names syscall `nr` (natively), for nr < 1024. */
static bool named(uint32_t nr)
{
    static bool is_named[1024], ready;
    if (!ready) {
        size_t n;
        const struct sandbox_rule *rules = sandbox_policy_rules(&n);
        for (size_t i = 0; i < n; i++) {
            int k = seccomp_syscall_resolve_name(rules[i].name);
            if (k >= 0 && k < 1024)
                is_named[k] = true;
        }
        ready = true;
    }
    return nr < 1024 && is_named[nr];
}

/* Both stacks answer every call in the grid alike. */
static void assert_same_answers(const struct stack *full, const struct stack *steps,
                                const struct sandbox_bpf_values *v1,
                                const struct sandbox_bpf_values *v2, const char *what)
{
    static uint64_t vals[4096];
    size_t nv = interesting_values(v1, v2, vals, ARRAY_SIZE(vals));
    const uint32_t arches[] = {sandbox_bpf_native_arch(), AUDIT_ARCH_I386, AUDIT_ARCH_ARM};
    size_t calls = 0;
    for (size_t ai = 0; ai < ARRAY_SIZE(arches); ai++) {
        for (uint32_t nr = 0; nr < 1024 + 8; nr++) {
            /* the last few: x32's numbers and the all-ones one libseccomp tests for */
            uint32_t num = nr < 1024 ? nr : (nr == 1024 ? 0xffffffffu : 0x40000000u + nr - 1025);
            struct seccomp_data d = {.nr = (int)num, .arch = arches[ai]};
            size_t positions = ai == 0 && named(num) ? 6 : 0;
            for (size_t p = 0; p <= positions; p++) {
                for (size_t k = 0; k < (p == 0 ? 1 : nv); k++) {
                    memset(d.args, 0, sizeof(d.args));
                    if (p > 0)
                        d.args[p - 1] = vals[k];
                    uint32_t a = run_stack(full, &d), b = run_stack(steps, &d);
                    calls++;
                    if (a != b)
                        fail_msg("%s: syscall %u arch 0x%08x arg%zu=0x%llx: full programs "
                                 "answer 0x%08x, steps 0x%08x",
                                 what, num, arches[ai], p ? p - 1 : 0,
                                 (unsigned long long)(p ? vals[k] : 0), a, b);
                }
            }
        }
    }
    assert_true(calls > 50000);
}

/*
 * Every path of stages: the first stage entered whole (FULL for watch, ATTACH for attach), then
 * any increasing choice of the later ones. The first program is loaded with one pid, the rest
 * with another, as in a forked watch child.
 */
static void test_steps_answer_as_full_programs(void **state)
{
    (void)state;
    const struct sandbox_bpf_values v1 = {1001, 1002, 4242, true};
    const struct sandbox_bpf_values v2 = {1001, 1002, 4343, true};
    static struct stack full, steps;
    size_t paths = 0;
    for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
        for (int first = SANDBOX_STAGE_FULL; first <= SANDBOX_STAGE_ATTACH; first++) {
            for (unsigned later = 0; later < 8; later++) {
                if (first == SANDBOX_STAGE_ATTACH && (later & 1))
                    continue; /* ATTACH is where this path starts */
                full.n = steps.n = 0;
                push(&full, &sandbox_bpf_builtin.prog[first][m], &v1);
                push(&steps, &sandbox_bpf_builtin.prog[first][m], &v1);
                int at = first;
                char what[96];
                int w = snprintf(what, sizeof(what), "%s %s", m ? "log" : "kill",
                                 sandbox_stage_name(first));
                for (int s = SANDBOX_STAGE_ATTACH; s <= SANDBOX_STAGE_REPORT; s++) {
                    if (!(later & (1u << (s - 1))) || s <= first)
                        continue;
                    push(&full, &sandbox_bpf_builtin.prog[s][m], &v2);
                    push(&steps, &sandbox_bpf_builtin.delta[at][s][m], &v2);
                    w +=
                        snprintf(what + w, sizeof(what) - (size_t)w, "->%s", sandbox_stage_name(s));
                    at = s;
                }
                if (at == first)
                    continue;
                assert_same_answers(&full, &steps, &v1, &v2, what);
                paths++;
            }
        }
    }
    assert_int_equal(paths, 2 * (7 + 3));
}

static int nr_native(const char *name, void *arg)
{
    (void)arg;
    return seccomp_syscall_resolve_name(name);
}

/* The built-in steps are what the table gives now, instruction for instruction, and each is
 * shorter than the stage it leads to (the point of having them). */
static void test_builtin_steps_equal_table(void **state)
{
    (void)state;
    const struct sandbox_bpf_values stand_in = {SANDBOX_SENTINEL_EUID, SANDBOX_SENTINEL_EGID,
                                                SANDBOX_SENTINEL_PID, true};
    static struct sock_filter out[BPF_MAXINSNS];
    size_t steps = 0;
    for (int f = 0; f < SANDBOX_STAGE_COUNT; f++) {
        for (int t = 0; t < SANDBOX_STAGE_COUNT; t++) {
            for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
                const struct sandbox_bpf *b = &sandbox_bpf_builtin.delta[f][t][m];
                struct cla_error e = {0};
                int n = sandbox_delta_build(f, t, m, sandbox_bpf_native_arch(), nr_native, NULL,
                                            &stand_in, out, ARRAY_SIZE(out), &e);
                if (!sandbox_delta_exists(f, t)) {
                    assert_null(b->insns);
                    assert_int_equal(n, -EINVAL);
                    continue;
                }
                assert_int_equal(n, b->len);
                assert_memory_equal(out, b->insns, (size_t)n * sizeof(*out));
                assert_true(b->len < sandbox_bpf_builtin.prog[t][m].len);
                steps++;
            }
        }
    }
    assert_int_equal(steps, 2 * 6);
}

static void test_build_rejects(void **state)
{
    (void)state;
    const struct sandbox_bpf_values v = {1, 2, 3, true};
    struct sock_filter out[8];
    struct cla_error e = {0};
    uint32_t arch = sandbox_bpf_native_arch();
    /* backwards, to itself, into or out of ps, in off mode */
    assert_int_equal(sandbox_delta_build(SANDBOX_STAGE_REPORT, SANDBOX_STAGE_ATTACH,
                                         SANDBOX_MODE_KILL, arch, nr_native, NULL, &v, out, 8, &e),
                     -EINVAL);
    assert_int_equal(sandbox_delta_build(SANDBOX_STAGE_ATTACH, SANDBOX_STAGE_ATTACH,
                                         SANDBOX_MODE_KILL, arch, nr_native, NULL, &v, out, 8, &e),
                     -EINVAL);
    assert_int_equal(sandbox_delta_build(SANDBOX_STAGE_FULL, SANDBOX_STAGE_PS, SANDBOX_MODE_KILL,
                                         arch, nr_native, NULL, &v, out, 8, &e),
                     -EINVAL);
    assert_int_equal(sandbox_delta_build(SANDBOX_STAGE_ATTACH, SANDBOX_STAGE_DELIVERED,
                                         SANDBOX_MODE_OFF, arch, nr_native, NULL, &v, out, 8, &e),
                     -EINVAL);
    /* no room: refused, nothing written past the end */
    struct sock_filter guard[9];
    memset(guard, 0xa5, sizeof(guard));
    assert_int_equal(sandbox_delta_build(SANDBOX_STAGE_ATTACH, SANDBOX_STAGE_DELIVERED,
                                         SANDBOX_MODE_KILL, arch, nr_native, NULL, &v, guard, 8,
                                         &e),
                     -E2BIG);
    const uint8_t *last = (const uint8_t *)&guard[8];
    for (size_t i = 0; i < sizeof(guard[8]); i++)
        assert_int_equal(last[i], 0xa5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_steps_equal_table),
        cmocka_unit_test(test_build_rejects),
        cmocka_unit_test(test_steps_answer_as_full_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
