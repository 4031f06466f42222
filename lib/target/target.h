/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pinned target process. The pid is pinned by a pidfd opened BEFORE /proc/<pid> (so the
 * directory fd provably belongs to the process the pidfd holds while that process lives), and
 * every later read goes through the /proc/<pid> dirfd, never through a rebuilt path. Liveness is
 * re-checked with the pidfd (and the start time) before anything is sent to the target.
 */
#ifndef CLRATTACH_TARGET_H
#define CLRATTACH_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "target/proc_parse.h"

struct target {
    pid_t pid;       /* in our pid namespace */
    int pidfd;       /* -1 where pidfd_open is missing (Linux < 5.3) */
    bool pidfd_tied; /* the pidfd's process is the one procfd was opened for: then a poll of the
                        pidfd is the whole liveness check (target_check_alive) */
    int procfd;      /* O_PATH of /proc/<pid> */
    int rootfd;      /* O_PATH of /proc/<pid>/root, opened by target_open_root() */
    struct proc_stat stat;
    struct proc_status status;
    char *environ; /* NULL when not readable (permission) */
    size_t environ_len;
    int environ_errno;            /* why environ is NULL */
    char tmpdir[TARGET_PATH_MAX]; /* as the target sees it, ending in '/'; checked by
                                     proc_tmpdir_from_environ, raw: render it to show it */
    char comm[64];                /* stat.comm rendered for people (stat.comm is raw) */
    char cmdline[512];            /* rendered for people (render_cmdline) */
    uint64_t mntns;               /* inode of its mount namespace, 0 when unknown */
    struct {
        char *buf; /* NULL: unreadable, or not read yet */
        size_t len;
        bool tried;
    } maps; /* target_maps(): read once, freed by target_maps_drop() or target_close() */
};

/* Pins `pid` under the /proc directory `proc_dirfd` and reads stat, status, environ, cmdline.
 * Returns 0; -ESRCH when there is no such process (or it exits meanwhile); -EACCES/-EPERM when
 * we may not inspect it; -EPROTO for unparsable /proc files and for a TMPDIR in its environment
 * that clrattach refuses (the message names the rule, the hint the way out). `ret` must be
 * released with
 * target_close() on success only. */
int target_open(int proc_dirfd, pid_t pid, struct target *ret, struct cla_error *e);

/* Opens the target's root directory (needs ptrace-read access, as the target's uid or with
 * CAP_SYS_PTRACE). Returns 0 or a negative errno. */
int target_open_root(struct target *t, struct cla_error *e);

/* Returns 0 while the pinned process runs and still has the start time read at open, -ESRCH
 * once it has exited or been replaced. */
int target_check_alive(const struct target *t, struct cla_error *e);

/* Watches the pinned process for up to `ms` milliseconds (a profiler that failed can leave a
 * thread behind that kills the app moments later). Returns 0 when it still runs with the same
 * start time at the end, or 1 with *ret_after_ms set to when it was seen gone; -errno when it
 * cannot be watched. Returns at once (0) for ms <= 0. */
int target_settle(const struct target *t, int64_t ms, int64_t *ret_after_ms);

/* Looks up `name` in the target's environment (see proc_environ_get). */
int target_getenv(const struct target *t, const char *name, const char **ret_value,
                  size_t *ret_len);

/* Does the target map a file named `name` (a basename: proc_maps_has())? Reads its maps only
 * up to the first such line (proc_maps_scan_feed), at most PROC_MAPS_MAX bytes. Returns 1 or 0;
 * -E2BIG past the cap, -EPROTO for a line longer than any path, or -errno. */
int target_maps_has(const struct target *t, const char *name);

/* The target's /proc/<pid>/maps as it was when first asked for: read at most once (bounded by
 * PROC_MAPS_MAX) and kept, so that the readers of one attach (the RID guess, the dependency
 * check) see one snapshot and pay for one read. Returns the buffer with *ret_len, or NULL (and
 * 0) when it could not be read. What must see the maps as they are now reads them afresh
 * (target_maps_has, target_read_file). */
const char *target_maps(struct target *t, size_t *ret_len);

/* Frees the snapshot target_maps() kept: after its last reader, as it may be large. The next
 * target_maps() reads again. */
void target_maps_drop(struct target *t);

/* Reads one of the target's /proc files ("mountinfo", "maps") through the pinned dirfd, bounded
 * by `cap`. Returns 0 with a malloc'd NUL-terminated buffer, -E2BIG past the cap, or -errno. */
int target_read_file(const struct target *t, const char *name, size_t cap, char **ret_buf,
                     size_t *ret_len, struct cla_error *e);

/* Does the target's /proc/<pid>/cgroup (read through the pinned dirfd, at most PROC_CGROUP_MAX
 * bytes) hold `want`: a container ID, or any part of its cgroup path? A file that cannot be read
 * holds nothing. */
bool target_cgroup_contains(const struct target *t, const char *want);

/* Reads the target's executable through /proc/<pid>/exe of the pinned dirfd, bounded by `cap`.
 * "exe" is a magic link of our own procfs: following it is the point (O_NOFOLLOW always fails
 * on it with ELOOP); the file is opened O_NONBLOCK|O_NOCTTY and must be regular. Its bytes are
 * the target's and are parsed as hostile input. Returns 0 with a malloc'd buffer, -E2BIG past
 * the cap, or -errno. */
int target_read_exe(const struct target *t, size_t cap, char **ret_buf, size_t *ret_len,
                    struct cla_error *e);

void target_close(struct target *t);

/* For `_cleanup_(target_closep) struct target *pinned = NULL;`: closes the target *tp points
 * at, if any, and leaves NULL. A pointer rather than the struct itself, because a struct target
 * that was never opened holds fd 0 and must not be closed; set it once target_open() (or
 * attach_pin()) has succeeded. */
void target_closep(struct target **tp);

/* Opens the /proc directory clrattach scans (our own view). Returns an fd or -errno. */
int target_open_proc(const char *path, struct cla_error *e);

#endif
