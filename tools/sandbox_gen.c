/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_gen ARCH > sandbox_bpf_ARCH.c
 *
 * Build-time generator of clrattach's seccomp programs: compiles every stage of the rule table
 * (lib/sandbox/sandbox_policy.c) in kill and log mode with the build host's libseccomp, for ARCH
 * (x86_64 or aarch64, whatever the host is), and writes them as C arrays. The run-time side
 * (lib/sandbox/sandbox.c) only patches run-time data into a copy and calls seccomp(2), so no
 * compiler runs in clrattach after it has read a target's bytes.
 *
 * It also writes the step programs (lib/sandbox/sandbox_delta.h) that take a loaded stage to a
 * later one, with the syscall numbers libseccomp knows for ARCH.
 *
 * Each program is compiled twice, with two different sets of stand-ins for the run-time data;
 * the two must differ exactly at the BPF_JEQ constants that hold a stand-in, which proves that
 * the patch at load time finds every site and nothing else.
 */
#include <errno.h>
#include <inttypes.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox_bpf.h"
#include "sandbox/sandbox_compile.h"
#include "sandbox/sandbox_delta.h"
#include "base/util.h"

static const struct {
    const char *name;
    uint32_t token; /* SCMP_ARCH_* is the AUDIT_ARCH_* value */
} arches[] = {
    {"x86_64", SCMP_ARCH_X86_64},
    {"aarch64", SCMP_ARCH_AARCH64},
};

static const char *const mode_names[] = {[SANDBOX_MODE_KILL] = "kill", [SANDBOX_MODE_LOG] = "log"};

static const struct sandbox_bpf_values stand_in = {
    .euid = SANDBOX_SENTINEL_EUID,
    .egid = SANDBOX_SENTINEL_EGID,
    .pid = SANDBOX_SENTINEL_PID,
};
static const struct sandbox_bpf_values other = {
    .euid = 0x3a110001u, .egid = 0x3a110002u, .pid = 0x3a110003u};

static bool is_jeq_k(const struct sock_filter *f)
{
    return f->code == (BPF_JMP | BPF_JEQ | BPF_K);
}

/* 0 when `a` (stand-ins) and `b` (other values) differ exactly at the stand-in sites. */
static int check_sites(const struct sock_filter *a, const struct sock_filter *b, size_t n,
                       const char *what)
{
    for (size_t i = 0; i < n; i++) {
        bool site = is_jeq_k(&a[i]) &&
                    (a[i].k == stand_in.euid || a[i].k == stand_in.egid || a[i].k == stand_in.pid);
        bool expect_k = !site || (a[i].k == stand_in.euid && b[i].k == other.euid) ||
                        (a[i].k == stand_in.egid && b[i].k == other.egid) ||
                        (a[i].k == stand_in.pid && b[i].k == other.pid);
        bool same_rest = a[i].code == b[i].code && a[i].jt == b[i].jt && a[i].jf == b[i].jf;
        if (!same_rest || !expect_k || (!site && a[i].k != b[i].k)) {
            fprintf(stderr, "sandbox_gen: %s: instruction %zu is not a clean patch site\n", what,
                    i);
            return -1;
        }
    }
    return 0;
}

static void print_program(const char *what, const char *name, const struct sock_filter *a, size_t n)
{
    printf("\n/* %s: %zu instructions */\n"
           "static const struct sock_filter %s[] = {\n",
           what, n, name);
    for (size_t i = 0; i < n; i++)
        printf("    {0x%04x, %u, %u, 0x%08" PRIx32 "},\n", a[i].code, a[i].jt, a[i].jf, a[i].k);
    printf("};\n");
}

/* A syscall's number on the architecture being generated for; negative where it has none. */
static int nr_on_arch(const char *name, void *arg)
{
    return seccomp_syscall_resolve_name_arch(*(const uint32_t *)arg, name);
}

/* Every step program, in both modes: 0, or -1 with a message. */
static int print_steps(uint32_t arch, const char *arch_name,
                       size_t lens[SANDBOX_STAGE_COUNT][SANDBOX_STAGE_COUNT][2])
{
    static struct sock_filter a[BPF_MAXINSNS], b[BPF_MAXINSNS];
    for (int f = 0; f < SANDBOX_STAGE_COUNT; f++) {
        for (int t = 0; t < SANDBOX_STAGE_COUNT; t++) {
            for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
                lens[f][t][m] = 0;
                if (!sandbox_delta_exists(f, t))
                    continue;
                struct cla_error e = {0};
                char what[96], name[64];
                snprintf(what, sizeof(what), "%s/%s->%s/%s", arch_name, sandbox_stage_name(f),
                         sandbox_stage_name(t), mode_names[m]);
                snprintf(name, sizeof(name), "step_%s_%s_%s", sandbox_stage_name(f),
                         sandbox_stage_name(t), mode_names[m]);
                int na = sandbox_delta_build(f, t, m, arch, nr_on_arch, &arch, &stand_in, a,
                                             ARRAY_SIZE(a), &e);
                int nb = na < 0 ? na
                                : sandbox_delta_build(f, t, m, arch, nr_on_arch, &arch, &other, b,
                                                      ARRAY_SIZE(b), &e);
                if (na < 0 || nb < 0) {
                    fprintf(stderr, "sandbox_gen: %s: %s\n", what, e.msg);
                    return -1;
                }
                if (na != nb || check_sites(a, b, (size_t)na, what) < 0) {
                    fprintf(stderr, "sandbox_gen: %s: the run-time data changes its shape\n", what);
                    return -1;
                }
                print_program(what, name, a, (size_t)na);
                lens[f][t][m] = (size_t)na;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t ai = ARRAY_SIZE(arches);
    for (size_t i = 0; argc == 2 && i < ARRAY_SIZE(arches); i++)
        if (strcmp(argv[1], arches[i].name) == 0)
            ai = i;
    if (ai == ARRAY_SIZE(arches)) {
        fprintf(stderr, "usage: sandbox_gen x86_64|aarch64 > sandbox_bpf_ARCH.c\n");
        return 2;
    }
    /* The programs are only written out, never loaded here: the actions they use (KILL_PROCESS,
     * LOG) must not depend on what the build machine's kernel offers. libseccomp otherwise asks
     * the kernel and, where seccomp() is missing (an emulated or sandboxed builder), refuses
     * those actions; API level 3 accepts both and changes nothing in the generated code. */
    if (seccomp_api_set(3) < 0) {
        fprintf(stderr, "sandbox_gen: libseccomp refused API level 3 (needs libseccomp 2.4+)\n");
        return 1;
    }
    printf("/* Generated by tools/sandbox_gen.c from lib/sandbox/sandbox_policy.c for %s: do not "
           "edit. */\n"
           "#include \"sandbox/sandbox_bpf.h\"\n\n"
           "_Static_assert(SANDBOX_STAGE_COUNT == %d, \"stages changed: regenerate\");\n",
           arches[ai].name, (int)SANDBOX_STAGE_COUNT);
    size_t lens[SANDBOX_STAGE_COUNT][2];
    for (int s = 0; s < SANDBOX_STAGE_COUNT; s++) {
        for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
            struct cla_error e = {0};
            struct sock_filter *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            char what[64];
            snprintf(what, sizeof(what), "%s/%s/%s", arches[ai].name, sandbox_stage_name(s),
                     mode_names[m]);
            if (sandbox_compile_stage(s, m, arches[ai].token, &stand_in, &a, &na, &e) < 0 ||
                sandbox_compile_stage(s, m, arches[ai].token, &other, &b, &nb, &e) < 0) {
                fprintf(stderr, "sandbox_gen: %s: %s\n", what, e.msg);
                return 1;
            }
            if (na != nb || check_sites(a, b, na, what) < 0) {
                fprintf(stderr, "sandbox_gen: %s: the run-time data changes the program's shape\n",
                        what);
                return 1;
            }
            char name[64];
            snprintf(name, sizeof(name), "%s_%s", sandbox_stage_name(s), mode_names[m]);
            print_program(what, name, a, na);
            lens[s][m] = na;
            free(a);
            free(b);
        }
    }
    static size_t steps[SANDBOX_STAGE_COUNT][SANDBOX_STAGE_COUNT][2];
    if (print_steps(arches[ai].token, arches[ai].name, steps) < 0)
        return 1;
    printf("\nconst struct sandbox_bpf_set sandbox_bpf_builtin = {\n"
           "    .audit_arch = 0x%08" PRIx32 "u,\n"
           "    .arch_name = \"%s\",\n"
           "    .prog = {\n",
           arches[ai].token, arches[ai].name);
    for (int s = 0; s < SANDBOX_STAGE_COUNT; s++) {
        printf("        [%d] = {\n", s);
        for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++)
            printf("            [%d] = {%s_%s, %zu},\n", m, sandbox_stage_name(s), mode_names[m],
                   lens[s][m]);
        printf("        },\n");
    }
    printf("    },\n    .delta = {\n");
    for (int f = 0; f < SANDBOX_STAGE_COUNT; f++) {
        for (int t = 0; t < SANDBOX_STAGE_COUNT; t++) {
            if (!steps[f][t][SANDBOX_MODE_KILL])
                continue;
            printf("        [%d][%d] = {\n", f, t);
            for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++)
                printf("            [%d] = {step_%s_%s_%s, %zu},\n", m, sandbox_stage_name(f),
                       sandbox_stage_name(t), mode_names[m], steps[f][t][m]);
            printf("        },\n");
        }
    }
    printf("    },\n};\n");
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
