/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Acting as the target's user. clrattach makes every access to a target's files and socket as
 * that target would: filesystem uid and gid = its effective ids, supplementary groups = its own
 * (when we may set them), and of our filesystem capabilities (DAC override and read-search,
 * fowner, chown, fsetid, ...) only those the target itself holds in our user namespace. The
 * kernel's permission checks then answer as they would answer the app, files we create belong
 * to it, and a target cannot steer us to anything it could not reach itself, e.g. with a bind
 * mount of a root-only socket over its diagnostic socket name. Run as another non-root uid,
 * clrattach cannot act for the target and says which uid to use.
 *
 * Credentials belong to each thread: become and restore on the thread that does the I/O.
 */
#ifndef CLRATTACH_CREDS_H
#define CLRATTACH_CREDS_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "target/proc_parse.h"

/* The capabilities the kernel counts as filesystem ones (its CAP_FS_SET): cleared from the
 * effective set when fsuid leaves 0, raised again when it returns. Bit n = CAP number n. */
#define CREDS_CAP(c) (1ULL << (c))
#define CREDS_FS_CAPS                                                                              \
    (CREDS_CAP(CAP_CHOWN) | CREDS_CAP(CAP_DAC_OVERRIDE) | CREDS_CAP(CAP_DAC_READ_SEARCH) |         \
     CREDS_CAP(CAP_FOWNER) | CREDS_CAP(CAP_FSETID) | CREDS_CAP(CAP_LINUX_IMMUTABLE) |              \
     CREDS_CAP(CAP_MAC_OVERRIDE))

/* The exit code of a process that could not take back its own identity: internal error
 * (docs/exit-codes.md). */
#define CREDS_EXIT_FATAL 1

/* Who to act as: the target's effective ids, groups and capabilities. */
struct creds_target {
    uid_t uid;
    gid_t gid;
    gid_t groups[PROC_GROUPS_MAX];
    size_t ngroups;
    uint64_t cap_eff;
    /* Capabilities mean something only in their own user namespace: the target's count for us
     * only when it lives in ours. */
    bool same_userns;
};

struct creds_saved {
    uid_t fsuid;
    gid_t fsgid;
    uint64_t cap_eff; /* our effective set before the switch */
    bool switched;
    bool groups_changed;
};

/* Fills *ret from the target's parsed status and its /proc/<pid> directory fd (whose ns/user is
 * compared with ours). Never fails: a namespace we cannot read counts as another one, so none
 * of our filesystem capabilities is kept for it. */
void creds_target_of(int procfd, const struct proc_status *st, struct creds_target *ret);

/* The effective set to act with for `t`, starting from our own `ours`: every capability that
 * is not a filesystem one unchanged, the filesystem ones only where `t` holds them too. Pure. */
uint64_t creds_effective_for(uint64_t ours, const struct creds_target *t);

/* Checks that we can act for `t`: we hold CAP_SETUID and CAP_SETGID, or already run as its uid
 * with its gid among our real and effective gids. Returns 0, or -EPERM with a hint naming the
 * uid (and gid) to run as. */
int creds_check(const struct creds_target *t, struct cla_error *e);

/* Is the group the one thing that keeps us out of a process? The kernel's ptrace read check
 * (PTRACE_MODE_READ_FSCREDS, behind /proc/<pid>/environ, root, maps, mem) wants the caller's
 * fsuid equal to the process's real, effective and saved uid AND its fsgid equal to the three
 * gids, or CAP_SYS_PTRACE. Kubernetes takes only the uid from an image's numeric "USER u:g"
 * (the gid is 0 without a passwd entry), so an app and a sidecar given "the same user" can differ
 * in the gid alone. True when every uid of `st` (status, which anyone may read) is `our_uid`
 * and some gid is not `our_gid`; *ret_gid is then the process's effective gid. Pure. */
bool creds_gid_mismatch(const struct proc_status *st, uid_t our_uid, gid_t our_gid, gid_t *ret_gid);

/* Says so in `e` (-EACCES): "pid N runs as uid U gid G; this clrattach runs as gid H: ...", with
 * the runAsGroup to set as the hint. Our ids are geteuid()/getegid() (the fs ids follow them).
 * Returns true when it applied, false (e untouched) when the ids do not show a gid mismatch. */
bool creds_explain_gid_mismatch(pid_t pid, const struct proc_status *st, struct cla_error *e);

/* Switches this thread's fsuid/fsgid, supplementary groups (with CAP_SETGID) and effective
 * capabilities to act as `t`, saving ours in *ret_saved for creds_restore(). Returns 0, or
 * -EPERM when the kernel refused a step (then nothing is left switched; if even that fails, the
 * process ends as in creds_restore()). */
int creds_become(const struct creds_target *t, struct creds_saved *ret_saved, struct cla_error *e);

/* Undoes creds_become(): our fsuid/fsgid and effective set; supplementary groups are left
 * empty (the only setgroups the later seccomp stages allow; none of our own accesses needs
 * them). Going on with a target's ids would be worse than stopping: if the kernel refuses,
 * this prints why on stderr and ends the process with CREDS_EXIT_FATAL. */
void creds_restore(struct creds_saved *saved);

#endif
