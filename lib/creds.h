/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_CREDS_H
#define CLRATTACH_CREDS_H

/*
 * Acting as the target's user. Run as root, clrattach switches its filesystem uid/gid (and
 * supplementary groups) to the target's effective ids for every access to the target's files and
 * socket: permission checks are then the target's own, files we create belong to it, and the
 * kernel drops the fs capabilities (DAC override, chown, fowner) while the switch lasts. Run as
 * another non-root uid, clrattach cannot reach the 0600 socket and says which uid to use.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

struct creds_saved {
    uid_t fsuid;
    gid_t fsgid;
    bool switched;
    bool groups_changed;
};

/* Checks that we can act for a process whose effective ids are uid/gid: we are root (or hold
 * CAP_SETUID+CAP_SETGID) or already run as `uid`. Returns 0, or -EPERM with a hint naming the
 * uid to run as or the capability that is missing. */
int creds_check(uid_t uid, gid_t gid, struct cla_error *e);

/* Switches fsuid/fsgid (and, when privileged, the supplementary groups to just `gid`) to the
 * target's. A no-op when we already are that user. Returns 0 or -EPERM. */
int creds_become(uid_t uid, gid_t gid, struct creds_saved *ret_saved, struct cla_error *e);

/* Undoes creds_become(). Returns 0 or -EPERM. */
int creds_restore(struct creds_saved *saved, struct cla_error *e);

#endif
