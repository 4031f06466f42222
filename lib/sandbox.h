/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_SANDBOX_H
#define CLRATTACH_SANDBOX_H

/*
 * clrattach confines itself: it runs with more privilege than the app it attaches to and reads
 * bytes that app controls. sandbox_enter() installs a seccomp filter before the first untrusted
 * byte is read; it stays until exit and sandbox_tighten() stacks stricter ones as the attach
 * goes on. The allow-list itself is sandbox_policy.c. A killed run shows in `dmesg` / the audit
 * log as "audit: type=1326 ... sig=31 ... syscall=<nr>"; `--seccomp=log` logs there instead.
 */

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sandbox_policy.h"

enum sandbox_mode {
    SANDBOX_MODE_KILL, /* a call outside the list kills the whole process (SIGSYS) */
    SANDBOX_MODE_LOG,  /* it runs and is logged: for finding what a new environment needs */
    SANDBOX_MODE_OFF,  /* no filter; the caller warns */
};

enum sandbox_stage {
    SANDBOX_STAGE_FULL,      /* discovery, delivery (file create, fchown, rename), IPC, HTTPS */
    SANDBOX_STAGE_DELIVERED, /* profiler placed: no more file creation, chown, chmod, rename,
                              * link, unlink, no fsuid switch except back to ourselves */
    SANDBOX_STAGE_REPORT,    /* attach reply read: only what reporting (HTTPS, stdout,
                              * termination log) needs; no new AF_UNIX socket, no pidfd */
};

/* "kill" | "log" | "off" -> mode. -EINVAL otherwise; *ret_mode untouched then. */
int sandbox_parse_mode(const char *s, enum sandbox_mode *ret_mode, struct cla_error *e);

/* Sets PR_SET_NO_NEW_PRIVS, then loads the FULL allow-list for every thread of the process.
 * MODE_OFF loads nothing and returns 0. -EALREADY when called twice; -EINVAL/-EFAULT/-ENOMEM
 * from libseccomp or the kernel (e.g. a kernel without seccomp filters). */
int sandbox_enter(enum sandbox_mode mode, struct cla_error *e);

/* Stacks a filter holding only what `stage` still needs (skipped stages' cuts included). The
 * same stage again, or MODE_OFF: no-op; an earlier stage or no sandbox_enter(): -EINVAL. From
 * DELIVERED on, O_CREAT kills: open the termination log without it, or earlier. */
int sandbox_tighten(enum sandbox_stage stage, struct cla_error *e);

/* Drops every capability outside `keep` (1ULL << CAP_x bits) from all sets, bounding set (needs
 * CAP_SETPCAP; moot under no_new_privs, set first) included; clears ambient. Per-thread: call
 * before any thread starts. Returns 0 or a negative errno. */
int sandbox_drop_caps(uint64_t keep, struct cla_error *e);

#endif
