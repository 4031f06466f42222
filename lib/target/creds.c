/* SPDX-License-Identifier: Apache-2.0 */
/* Becoming the target's user on this thread (fsuid, fsgid, groups, the filesystem capabilities
 * it holds) and back, with the checks that say when we cannot. */
#include "target/creds.h"
#include "base/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

static int caps_get(uint64_t *ret_eff, uint64_t *ret_prm, uint64_t *ret_inh)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2] = {{0}};
    if (sys_capget(&hdr, d) < 0)
        return -errno;
    *ret_eff = (uint64_t)d[1].effective << 32 | d[0].effective;
    *ret_prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
    *ret_inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
    return 0;
}

static int caps_get_eff(uint64_t *ret_eff)
{
    uint64_t prm, inh;
    return caps_get(ret_eff, &prm, &inh);
}

/* Sets this thread's effective set; permitted and inheritable are kept, so any bit taken out
 * of the effective set can be put back. */
static int caps_set_eff(uint64_t eff)
{
    uint64_t cur, prm, inh;
    int r = caps_get(&cur, &prm, &inh);
    if (r < 0)
        return r;
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2] = {
        {.effective = (uint32_t)eff, .permitted = (uint32_t)prm, .inheritable = (uint32_t)inh},
        {.effective = (uint32_t)(eff >> 32),
         .permitted = (uint32_t)(prm >> 32),
         .inheritable = (uint32_t)(inh >> 32)},
    };
    if (sys_capset(&hdr, d) < 0)
        return -errno;
    return 0;
}

static bool have_cap(int cap)
{
    uint64_t eff;
    return caps_get_eff(&eff) == 0 && (eff & CREDS_CAP(cap));
}

void creds_target_of(int procfd, const struct proc_status *st, struct creds_target *ret)
{
    struct creds_target t = {.uid = st->uid[1], .gid = st->gid[1], .ngroups = st->ngroups};
    memcpy(t.groups, st->groups, st->ngroups * sizeof(t.groups[0]));
    t.cap_eff = st->have_cap_eff ? st->cap_eff : 0;
    /* ns/user is a magic link of our own procfs to an nsfs inode: one inode per namespace. */
    struct stat mine, theirs;
    t.same_userns = stat("/proc/self/ns/user", &mine) == 0 &&
                    fstatat(procfd, "ns/user", &theirs, 0) == 0 && mine.st_dev == theirs.st_dev &&
                    mine.st_ino == theirs.st_ino;
    *ret = t;
}

uint64_t creds_effective_for(uint64_t ours, const struct creds_target *t)
{
    uint64_t theirs = t->same_userns ? t->cap_eff : 0;
    return (ours & ~CREDS_FS_CAPS) | (ours & CREDS_FS_CAPS & theirs);
}

int creds_check(const struct creds_target *t, struct cla_error *e)
{
    if (have_cap(CAP_SETUID) && have_cap(CAP_SETGID))
        return 0;
    if (geteuid() != t->uid) {
        err_set(e, -EPERM, "the target runs as uid %u and clrattach as uid %u", (unsigned)t->uid,
                (unsigned)geteuid());
        return err_hint(e,
                        "run clrattach as uid %u (securityContext.runAsUser: %u, the same user "
                        "as the app), or as root with CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE",
                        (unsigned)t->uid, (unsigned)t->uid);
    }
    /* Without CAP_SETGID the kernel lets setfsgid() take only our own real or effective gid
     * (or the saved one, which no call of the seccomp list reads). */
    if (getegid() != t->gid && getgid() != t->gid) {
        err_set(e, -EPERM, "the target runs as gid %u and clrattach as gid %u", (unsigned)t->gid,
                (unsigned)getegid());
        return err_hint(e,
                        "run clrattach with the app's gid too (securityContext.runAsGroup: %u), "
                        "or as root with CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE",
                        (unsigned)t->gid);
    }
    return 0;
}

bool creds_gid_mismatch(const struct proc_status *st, uid_t our_uid, gid_t our_gid, gid_t *ret_gid)
{
    bool gid_differs = false;
    for (size_t i = 0; i < 4; i++) {
        if (st->uid[i] != our_uid)
            return false;
        /* The check reads the real, effective and saved gids; the fs gid follows the effective. */
        gid_differs |= st->gid[i] != our_gid;
    }
    if (gid_differs)
        *ret_gid = st->gid[1];
    return gid_differs;
}

bool creds_explain_gid_mismatch(pid_t pid, const struct proc_status *st, struct cla_error *e)
{
    gid_t theirs, ours = getegid();
    if (!creds_gid_mismatch(st, geteuid(), ours, &theirs))
        return false;
    err_set(e, -EACCES,
            "pid %d runs as uid %u gid %u; this clrattach runs as gid %u: the kernel lets a "
            "process read another's memory-backed files only when all its ids match",
            (int)pid, (unsigned)st->uid[1], (unsigned)theirs, (unsigned)ours);
    err_hint(e, "set runAsGroup: %u on the sidecar (or run the app with runAsGroup: %u)",
             (unsigned)theirs, (unsigned)ours);
    return true;
}

/* setfsuid() reports nothing: the only way to know is to ask for the current value. */
static uid_t current_fsuid(void)
{
    return (uid_t)setfsuid((uid_t)-1);
}

static gid_t current_fsgid(void)
{
    return (gid_t)setfsgid((gid_t)-1);
}

/* Puts back what creds_become() changed. Returns 0, or -EPERM naming what stayed wrong. */
static int undo(const struct creds_saved *s, const char **ret_what)
{
    setfsuid(s->fsuid);
    setfsgid(s->fsgid);
    /* fsuid back to 0 has raised the filesystem capabilities of our permitted set; the saved
     * effective set is the exact answer either way. */
    uint64_t eff;
    if (caps_get_eff(&eff) < 0 || (eff != s->cap_eff && caps_set_eff(s->cap_eff) < 0)) {
        *ret_what = "effective capabilities";
        return -EPERM;
    }
    if (s->groups_changed && setgroups(0, NULL) < 0) {
        *ret_what = "supplementary groups";
        return -EPERM;
    }
    if (current_fsuid() != s->fsuid || current_fsgid() != s->fsgid) {
        *ret_what = "filesystem ids";
        return -EPERM;
    }
    if (caps_get_eff(&eff) < 0 || eff != s->cap_eff) {
        *ret_what = "effective capabilities";
        return -EPERM;
    }
    return 0;
}

/* As bubblewrap does: a helper that cannot take its own identity back must not go on. lib/
 * prints nothing otherwise; here no caller could do anything safe with an error. */
__attribute__((noreturn)) static void die_restore(const struct creds_saved *s, const char *what)
{
    dprintf(STDERR_FILENO,
            "clrattach: internal error: cannot restore our %s (fsuid %u, fsgid %u) after acting "
            "as a target's user; stopping rather than going on with another user's rights\n",
            what, (unsigned)s->fsuid, (unsigned)s->fsgid);
    _exit(CREDS_EXIT_FATAL);
}

int creds_become(const struct creds_target *t, struct creds_saved *ret_saved, struct cla_error *e)
{
    struct creds_saved s = {.fsuid = current_fsuid(), .fsgid = current_fsgid()};
    const char *what = NULL;
    int r = caps_get_eff(&s.cap_eff);
    if (r < 0)
        return err_setsys(e, r, "capget");
    uint64_t want = creds_effective_for(s.cap_eff, t);
    s.switched = true;
    /* Root's own supplementary groups must not grant access the target lacks, and the target's
     * must count as they do for it (a directory of its group, mode 0775). Without CAP_SETGID
     * ours stay: then we run as the target's uid and gid (creds_check), normally with its
     * groups too (a pod's supplementalGroups and fsGroup apply to every container). */
    if (have_cap(CAP_SETGID)) {
        if (setgroups(t->ngroups, t->groups) < 0) {
            r = err_setsys(e, -errno, "setgroups to the %zu groups of uid %u", t->ngroups,
                           (unsigned)t->uid);
            goto fail;
        }
        s.groups_changed = true;
    }
    setfsgid(t->gid);
    setfsuid(t->uid);
    if (current_fsgid() != t->gid || current_fsuid() != t->uid) {
        err_set(e, -EPERM, "cannot switch filesystem ids to %u:%u", (unsigned)t->uid,
                (unsigned)t->gid);
        r = err_hint(e, "run clrattach as uid %u, or as root", (unsigned)t->uid);
        goto fail;
    }
    /* fsuid leaving 0 has cleared the filesystem capabilities; fsuid staying 0 (a root target)
     * has cleared nothing, and a root target without CAP_DAC_OVERRIDE must not be served with
     * ours. Either way the set is made exactly `want`. */
    uint64_t eff;
    if ((r = caps_get_eff(&eff)) < 0 || (eff != want && (r = caps_set_eff(want)) < 0) ||
        (r = caps_get_eff(&eff)) < 0 || eff != want) {
        err_set(e, -EPERM, "cannot set the effective capabilities to 0x%llx for uid %u",
                (unsigned long long)want, (unsigned)t->uid);
        r = -EPERM;
        goto fail;
    }
    *ret_saved = s;
    return 0;
fail:
    if (undo(&s, &what) < 0)
        die_restore(&s, what);
    return r;
}

void creds_restore(struct creds_saved *saved)
{
    const char *what = NULL;
    if (!saved->switched)
        return;
    if (undo(saved, &what) < 0)
        die_restore(saved, what);
    saved->switched = false;
}
