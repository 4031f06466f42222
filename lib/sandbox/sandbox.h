/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clrattach confines itself: it runs with more privilege than the app it attaches to and reads
 * bytes that app controls. sandbox_enter() installs a seccomp filter before the first untrusted
 * byte is read; it stays until exit and sandbox_tighten() stacks stricter ones as the attach
 * goes on. The allow-list itself is sandbox_policy.c. A killed run shows in `dmesg` / the audit
 * log as "audit: type=1326 ... sig=31 ... syscall=<nr>"; `--seccomp=log` logs there instead.
 */
#ifndef CLRATTACH_SANDBOX_H
#define CLRATTACH_SANDBOX_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "sandbox/sandbox_policy.h"

/* "kill" | "log" | "off" -> mode. -EINVAL otherwise; *ret_mode untouched then. */
int sandbox_parse_mode(const char *s, enum sandbox_mode *ret_mode, struct cla_error *e);

/* Sets PR_SET_NO_NEW_PRIVS, then loads the FULL allow-list for every thread of the process.
 * MODE_OFF loads nothing and returns 0. -EALREADY when called twice; -ENOEXEC when the built-in
 * programs are for another architecture; -EINVAL/-EFAULT/-ENOMEM/-ESRCH from the kernel (e.g. a
 * kernel without seccomp filters). The programs are built with clrattach, nothing is compiled
 * here. */
int sandbox_enter(enum sandbox_mode mode, struct cla_error *e);

/* sandbox_enter(), starting at `stage` rather than FULL: one filter for a command that never
 * needs the earlier stages' rights. Same errors. */
int sandbox_enter_at(enum sandbox_mode mode, enum sandbox_stage stage, struct cla_error *e);

/* Stacks a filter holding only what `stage` still needs (skipped stages' cuts included). The
 * same stage again, or MODE_OFF: no-op; an earlier stage, PS after anything but FULL, any stage
 * after PS, or no sandbox_enter(): -EINVAL. From DELIVERED on, O_CREAT kills: open the
 * termination log without it, or earlier. */
int sandbox_tighten(enum sandbox_stage stage, struct cla_error *e);

/* Drops every capability outside `keep` (1ULL << CAP_x bits) from the effective, permitted and
 * inheritable sets with one capset, and clears ambient. The first call of the process sets
 * no_new_privs and, with `bounding`, shrinks the bounding set too (needs CAP_SETPCAP), one prctl
 * per capability up to the kernel's last. The bounding set only limits what an exec could
 * grant: pass `bounding` where exec stays possible (--seccomp=log); under the kill filter, which
 * forbids exec in every stage, and no_new_privs it can never grant anything. Later calls only
 * lower with capset. Per-thread: call before any thread starts. Returns 0 or a negative errno. */
int sandbox_drop_caps(uint64_t keep, bool bounding, struct cla_error *e);

#endif
