/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one seccomp allow-list of clrattach, as plain data. Both the filters the process installs
 * on itself (compiled at build time by tools/sandbox_gen.c, loaded by sandbox.c) and the
 * Kubernetes/OCI profile it exports (sandbox_profile_json) are generated from this table, so
 * the two can never drift. Pure: no syscalls in this module.
 */
#ifndef CLRATTACH_SANDBOX_POLICY_H
#define CLRATTACH_SANDBOX_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum sandbox_mode {
    SANDBOX_MODE_KILL, /* a call outside the list kills the whole process (SIGSYS) */
    SANDBOX_MODE_LOG,  /* it runs and is logged: for finding what a new environment needs */
    SANDBOX_MODE_OFF,  /* no filter; the caller warns */
};

/* A stage is a complete allow-list; the numbering is the order of the attach path. PS stands
 * apart: `ps` enters it from the start and goes nowhere after it. */
enum sandbox_stage {
    SANDBOX_STAGE_FULL,      /* `watch`: everything an attach needs, plus a child per attach */
    SANDBOX_STAGE_ATTACH,    /* one attach: discovery, delivery (file create, fchown, rename),
                              * IPC, HTTPS; no child processes */
    SANDBOX_STAGE_DELIVERED, /* profiler placed: no more file creation, chown, chmod, rename,
                              * link, unlink, no fsuid switch except back to ourselves */
    SANDBOX_STAGE_REPORT,    /* attach reply read: only what reporting (HTTPS, stdout,
                              * termination log) needs; no new AF_UNIX socket, no pidfd */
    SANDBOX_STAGE_PS,        /* `ps`: reading /proc and asking runtimes as their user; nothing
                              * created, changed or removed, no network, no child */
    SANDBOX_STAGE_QUERY,     /* `perfmap`: one target's runtime asked as its user, reported;
                              * nothing created, changed or removed in any view, openat2 refused,
                              * no child. Followed by REPORT only */
    SANDBOX_STAGE_LISTEN,    /* `attach --listen`, `watch --listen`: ATTACH's rights plus a
                              * listening socket (bind, listen, accept4, umask); entered from the
                              * start, nothing follows it */
    SANDBOX_STAGE_COUNT,
};

/* The stages a rule belongs to, as a bit set. Each stage's filter is a complete allow-list of
 * its own, stacked on the earlier ones; the kernel applies the strictest answer of all loaded
 * filters, so a rule left out of a later stage is gone for good. */
#define SANDBOX_IN_FULL      0x1u
#define SANDBOX_IN_DELIVERED 0x2u
#define SANDBOX_IN_REPORT    0x4u
/* Exported profile only: what runs between the container runtime loading the profile and our
 * main() installing the real filter (the runtime's execve of us, the dynamic loader). */
#define SANDBOX_IN_STARTUP 0x8u
#define SANDBOX_IN_ATTACH  0x10u /* FULL without watch's child processes */
#define SANDBOX_IN_PS      0x20u
#define SANDBOX_IN_QUERY   0x40u
#define SANDBOX_IN_LISTEN  0x80u /* ATTACH plus the listening socket */
#define SANDBOX_IN_ALL                                                                             \
    (SANDBOX_IN_FULL | SANDBOX_IN_ATTACH | SANDBOX_IN_DELIVERED | SANDBOX_IN_REPORT |              \
     SANDBOX_IN_PS | SANDBOX_IN_QUERY | SANDBOX_IN_LISTEN)

/* How an argument is compared. MASKED_EQ is (arg & mask) == datum. */
enum sandbox_arg_op {
    SANDBOX_ARG_NONE = 0,
    SANDBOX_ARG_EQ,
    SANDBOX_ARG_MASKED_EQ,
};

/* A datum only known at run time, filled in when the filter is built (never exported). */
enum sandbox_arg_dyn {
    SANDBOX_DYN_NONE = 0,
    SANDBOX_DYN_EUID, /* our own effective uid: "switch fsuid back to ourselves" */
    SANDBOX_DYN_EGID,
    SANDBOX_DYN_PID, /* our own process id: signals to ourselves only */
};

/* One rule: a syscall, the stages it holds in, its action and at most one argument check.
 * Rules for the same syscall are alternatives (OR); the kernel takes the first that matches. */
struct sandbox_rule {
    const char *name; /* libseccomp / profile name: "openat" */
    unsigned stages;  /* SANDBOX_IN_* bits */
    int errno_ret;    /* 0: allow; otherwise fail with this errno instead of running */
    enum sandbox_arg_op op;
    unsigned arg;  /* argument index for op != NONE */
    uint64_t mask; /* MASKED_EQ only */
    uint64_t datum;
    enum sandbox_arg_dyn dyn;
    const char *why; /* who needs it; shown in reviews and in the docs */
};

/* The SANDBOX_IN_* bit of a stage; 0 for SANDBOX_STAGE_COUNT. */
unsigned sandbox_stage_bit(enum sandbox_stage stage);

/* The stage's short name ("full", "delivered", ...); static storage. */
const char *sandbox_stage_name(enum sandbox_stage stage);

/* The rule table and its length. Static storage; never NULL. */
const struct sandbox_rule *sandbox_policy_rules(size_t *ret_count);

/* Number of distinct syscalls that at least one rule allows in the FULL stage (the in-process
 * filter of the first stage; startup-only and errno-only rules do not count). */
size_t sandbox_allowed_count(void);

/* The allow-list as an OCI / Kubernetes seccomp profile (JSON, for a localhostProfile): the
 * FULL stage plus the startup rules. Gives a malloc'd NUL-terminated string the caller frees.
 * Returns 0, or -ENOMEM. */
int sandbox_profile_json(char **ret_json, struct cla_error *e);

#endif
