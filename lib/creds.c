/* SPDX-License-Identifier: Apache-2.0 */
#include "creds.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool have_cap(int cap)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capget, &hdr, data) < 0)
        return false;
    return (data[cap / 32].effective >> (cap % 32)) & 1;
}

int creds_check(uid_t uid, gid_t gid, struct cla_error *e)
{
    (void)gid;
    if (geteuid() == uid)
        return 0;
    if (have_cap(CAP_SETUID) && have_cap(CAP_SETGID))
        return 0;
    err_set(e, -EPERM, "the target runs as uid %u and clrattach as uid %u", (unsigned)uid,
            (unsigned)geteuid());
    return err_hint(e,
                    "run clrattach as uid %u (securityContext.runAsUser: %u, the same user as "
                    "the app), or as root with CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE",
                    (unsigned)uid, (unsigned)uid);
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

int creds_become(uid_t uid, gid_t gid, struct creds_saved *ret_saved, struct cla_error *e)
{
    struct creds_saved s = {.fsuid = current_fsuid(), .fsgid = current_fsgid()};
    if (s.fsuid == uid && s.fsgid == gid) {
        *ret_saved = s;
        return 0;
    }
    if (geteuid() == 0 || have_cap(CAP_SETGID)) {
        /* Root's own supplementary groups must not grant access the target lacks. */
        if (setgroups(1, &gid) < 0)
            return err_setsys(e, -errno, "setgroups to gid %u", (unsigned)gid);
        s.groups_changed = true;
    }
    setfsgid(gid);
    setfsuid(uid);
    if (current_fsgid() != gid || current_fsuid() != uid) {
        setfsuid(s.fsuid);
        setfsgid(s.fsgid);
        err_set(e, -EPERM, "cannot switch filesystem ids to %u:%u", (unsigned)uid, (unsigned)gid);
        return err_hint(e, "run clrattach as uid %u, or as root", (unsigned)uid);
    }
    s.switched = true;
    *ret_saved = s;
    return 0;
}

int creds_restore(struct creds_saved *saved, struct cla_error *e)
{
    if (!saved->switched)
        return 0;
    setfsuid(saved->fsuid);
    setfsgid(saved->fsgid);
    if (saved->groups_changed)
        (void)setgroups(0, NULL);
    saved->switched = false;
    if (current_fsuid() != saved->fsuid || current_fsgid() != saved->fsgid)
        return err_set(e, -EPERM, "cannot restore filesystem ids %u:%u", (unsigned)saved->fsuid,
                       (unsigned)saved->fsgid);
    return 0;
}
