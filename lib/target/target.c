/* SPDX-License-Identifier: Apache-2.0 */
/* Pinning a target (pidfd, then /proc/<pid>) and everything read through the pin: stat,
 * status, command line, environment, maps, the executable, its root; the liveness checks. */
#include "target/target.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "base/syscalls.h"
#include "target/proc_environ.h"
#include "target/proc_maps.h"

int target_open_proc(const char *path, struct cla_error *e)
{
    int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, -errno, "open '%s'", path);
    return fd;
}

/* Reads one /proc file through the pinned dirfd, bounded by `cap`. */
static int read_procfile(int procfd, const char *name, size_t cap, char **ret_buf, size_t *ret_len)
{
    _cleanup_close_ int fd = openat(procfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    return util_read_all(fd, cap, ret_buf, ret_len);
}

/* Reads one small /proc file into `buf` (size - 1 bytes at most, then NUL-terminated): for the
 * files read on every attach, a buffer on the stack instead of a heap block that the static
 * build's allocator maps and unmaps for each read. -E2BIG when the file does not fit. */
static int read_procfile_buf(int procfd, const char *name, char *buf, size_t size, size_t *ret_len)
{
    _cleanup_close_ int fd = openat(procfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    for (;;) {
        if (len == size - 1)
            return -E2BIG; /* full: one byte more would prove it is larger; refused anyway */
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *ret_len = len;
    return 0;
}

static int read_stat(int procfd, struct proc_stat *ret, struct cla_error *e)
{
    char buf[PROC_STAT_MAX + 1];
    size_t len;
    int r = read_procfile_buf(procfd, "stat", buf, sizeof(buf), &len);
    /* A process that exited leaves a /proc dir whose files give ESRCH on read. */
    if (r < 0)
        return err_setsys(e, r == -ENOENT ? -ESRCH : r, "read stat");
    return proc_parse_stat(buf, len, ret, e);
}

/* Pins `pid`: its pidfd, then its /proc directory. While the pidfd's process lives its pid
 * cannot be reused, so the /proc dir opened after it is its own. */
static int pin(int proc_dirfd, pid_t pid, struct target *t, struct cla_error *e)
{
    char name[16];
    int r;
    t->pidfd = sys_pidfd_open(pid, 0);
    if (t->pidfd < 0 && errno != ENOSYS && errno != EPERM) {
        r = -errno;
        if (r == -ESRCH)
            return err_set(e, r, "no process with pid %d", (int)pid);
        return err_setsys(e, r, "pidfd_open %d", (int)pid);
    }
    snprintf(name, sizeof(name), "%d", (int)pid);
    t->procfd = openat(proc_dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (t->procfd < 0) {
        r = errno == ENOENT ? -ESRCH : -errno;
        return err_setsys(e, r, "open /proc/%d", (int)pid);
    }
    return 0;
}

/* Does the pidfd's process have `t->pid` in the pid namespace of the procfs at `proc_dirfd`?
 * The pidfd is opened in our own namespace, while --proc may name another's procfs; the pidfd's
 * fdinfo read through that procfs shows its pid there ("Pid:", Linux 5.3). Together with the pin
 * order (pidfd first) and a later poll that finds its process running, a yes proves that the
 * /proc directory opened between them is that process's own; from then on the poll alone tells
 * whether it still runs, and stat need not be read again for the start time. Any doubt (no
 * "self" in that procfs, an older kernel, another pid) is a no: the start time is re-read. */
static bool pidfd_names_pid(int proc_dirfd, const struct target *t)
{
    char name[40], buf[1024];
    size_t len;
    snprintf(name, sizeof(name), "self/fdinfo/%d", t->pidfd);
    if (read_procfile_buf(proc_dirfd, name, buf, sizeof(buf), &len) < 0)
        return false;
    const char *p = strstr(buf, "\nPid:\t");
    if (!p)
        return false;
    p += 6;
    size_t n = strcspn(p, "\n");
    uint64_t v;
    return p[n] == '\n' && util_parse_u64(p, n, INT32_MAX, &v) == 0 && (pid_t)v == t->pid;
}

/* Who the process is: stat (its start time, the pin's second half) and status (its ids). */
static int read_identity(struct target *t, struct cla_error *e)
{
    char buf[PROC_STATUS_MAX + 1];
    size_t len;
    int r;
    if ((r = read_stat(t->procfd, &t->stat, e)) < 0)
        return r;
    r = read_procfile_buf(t->procfd, "status", buf, sizeof(buf), &len);
    if (r < 0)
        return err_setsys(e, r == -ENOENT ? -ESRCH : r, "read status");
    if ((r = proc_parse_status(buf, len, &t->status, e)) < 0)
        return r;
    if (!t->status.have_nspid) {
        /* Before Linux 4.1: no NSpid; then only same-namespace targets are supported. */
        t->status.nspid = t->pid;
        t->status.nspid_levels = 1;
    }
    render_text(t->stat.comm, strlen(t->stat.comm), t->comm, sizeof(t->comm));
    return 0;
}

/* The command line as shown; one that cannot be read is shown as "[comm]", like ps does. */
static void read_cmdline(struct target *t)
{
    /* Most command lines fit the stack buffer; a longer one is read whole. */
    char small[4096];
    _cleanup_free_ char *buf = NULL;
    size_t len;
    int r = read_procfile_buf(t->procfd, "cmdline", small, sizeof(small), &len);
    if (r == -E2BIG)
        r = read_procfile(t->procfd, "cmdline", PROC_CMDLINE_MAX, &buf, &len);
    if (r == 0)
        render_cmdline(buf ? buf : small, len, t->cmdline, sizeof(t->cmdline));
    else
        snprintf(t->cmdline, sizeof(t->cmdline), "[%s]", t->comm);
}

/* The environment, and the TMPDIR in it where the runtime puts its socket. */
static int read_environ(struct target *t, struct cla_error *e)
{
    /* environ needs ptrace-read access to the target. Without it t->environ stays NULL (attach
     * reports that as a permission problem) and TMPDIR is taken to be the default /tmp/, the
     * runtime's own choice when TMPDIR is unset, so that ps can still look there. */
    int r = read_procfile(t->procfd, "environ", PROC_ENVIRON_MAX, &t->environ, &t->environ_len);
    if (r < 0) {
        t->environ = NULL;
        t->environ_errno = -r;
        if (r == -E2BIG)
            return err_set(e, -EPROTO, "environment of pid %d exceeds %d bytes", (int)t->pid,
                           PROC_ENVIRON_MAX);
        snprintf(t->tmpdir, sizeof(t->tmpdir), "/tmp/");
        return 0;
    }
    if (proc_tmpdir_from_environ(t->environ, t->environ_len, t->tmpdir, sizeof(t->tmpdir), e) >= 0)
        return 0;
    /* The target's own environment is unusable: its data, not our usage, is at fault. The
     * runtime's socket lives in that TMPDIR, so no --target-dir can stand in for it. */
    if (e) {
        e->code = -EPROTO;
        err_prefix(e, "pid %d (%s)", (int)t->pid, t->comm);
        err_hint(e, "the app's environment sets TMPDIR to a value clrattach refuses (its "
                    "diagnostic socket is there); restart the app with a plain absolute TMPDIR "
                    "such as /tmp (valid UTF-8, no '.' or '..' component, no control, bidi or "
                    "invisible character)");
    }
    return -EPROTO;
}

int target_open(int proc_dirfd, pid_t pid, struct target *ret, struct cla_error *e)
{
    struct target t = {.pid = pid, .pidfd = -1, .procfd = -1, .rootfd = -1};
    struct stat st;
    int r;

    if (pid <= 0)
        return err_set(e, -EINVAL, "pid %d is not a process id", (int)pid);
    /* Pin before reading anything, and re-check the start time after the last read: what was
     * read then belongs to the pinned process, not to a successor that took its pid. */
    if ((r = pin(proc_dirfd, pid, &t, e)) < 0 || (r = read_identity(&t, e)) < 0)
        goto fail;
    read_cmdline(&t);
    if ((r = read_environ(&t, e)) < 0)
        goto fail;
    /* Processes that share a mount namespace share a filesystem view: caches of their socket
     * directories key on it (diag_socket, procindex). */
    if (fstatat(t.procfd, "ns/mnt", &st, 0) == 0)
        t.mntns = st.st_ino;
    t.pidfd_tied = t.pidfd >= 0 && pidfd_names_pid(proc_dirfd, &t);
    if ((r = target_check_alive(&t, e)) < 0)
        goto fail;
    *ret = t;
    return 0;
fail:
    target_close(&t);
    return r;
}

int target_open_root(struct target *t, struct cla_error *e)
{
    if (t->rootfd >= 0)
        return 0;
    /* "root" is a magic link of our own trusted procfs; following it is the point. What lies
     * below it is hostile and is only reached through rootfs_open(). */
    int fd = openat(t->procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, errno == ENOENT ? -ESRCH : -errno, "open /proc/%d/root", (int)t->pid);
    t->rootfd = fd;
    return 0;
}

int target_check_alive(const struct target *t, struct cla_error *e)
{
    if (t->pidfd >= 0) {
        /* A pidfd becomes readable when its process exits. */
        struct pollfd p = {.fd = t->pidfd, .events = POLLIN};
        int n = poll(&p, 1, 0);
        if (n < 0)
            return err_setsys(e, -errno, "poll pidfd of %d", (int)t->pid);
        if (n > 0)
            return err_set(e, -ESRCH, "process %d exited", (int)t->pid);
        if (t->pidfd_tied)
            return 0;
    }
    struct proc_stat st;
    if (read_stat(t->procfd, &st, NULL) < 0)
        return err_set(e, -ESRCH, "process %d exited", (int)t->pid);
    if (st.starttime != t->stat.starttime)
        return err_set(e, -ESRCH, "pid %d now belongs to another process", (int)t->pid);
    return 0;
}

int target_settle(const struct target *t, int64_t ms, int64_t *ret_after_ms)
{
    int64_t start = util_now_ms(), now = start;
    while (now - start < ms) {
        int64_t left = ms - (now - start);
        if (t->pidfd >= 0) {
            /* A pidfd becomes readable when its process exits: one wait, no polling. */
            struct pollfd p = {.fd = t->pidfd, .events = POLLIN};
            int n = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
            if (n < 0 && errno != EINTR)
                return -errno;
        } else {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (left > 20 ? 20 : left) * 1000000L};
            nanosleep(&ts, NULL);
        }
        now = util_now_ms();
        if (target_check_alive(t, NULL) < 0) {
            *ret_after_ms = now - start;
            return 1;
        }
    }
    return 0;
}

int target_getenv(const struct target *t, const char *name, const char **ret_value, size_t *ret_len)
{
    if (!t->environ)
        return 0;
    return proc_environ_get(t->environ, t->environ_len, name, ret_value, ret_len);
}

int target_read_file(const struct target *t, const char *name, size_t cap, char **ret_buf,
                     size_t *ret_len, struct cla_error *e)
{
    int r = read_procfile(t->procfd, name, cap, ret_buf, ret_len);
    if (r == -E2BIG)
        return err_set(e, r, "/proc/%d/%s exceeds %zu bytes", (int)t->pid, name, cap);
    if (r < 0)
        return err_setsys(e, r, "read /proc/%d/%s", (int)t->pid, name);
    return 0;
}

bool target_cgroup_contains(const struct target *t, const char *want)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    if (target_read_file(t, "cgroup", PROC_CGROUP_MAX, &buf, &len, NULL) < 0)
        return false;
    return memmem(buf, len, want, strlen(want)) != NULL;
}

int target_maps_has(const struct target *t, const char *name)
{
    _cleanup_close_ int fd = openat(t->procfd, "maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct proc_maps_scan scan = {.have = 0};
    size_t total = 0;
    for (;;) {
        ssize_t n = read(fd, scan.buf + scan.have, sizeof(scan.buf) - scan.have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        total += (size_t)n;
        if (total > PROC_MAPS_MAX)
            return -E2BIG;
        int r = proc_maps_scan_feed(&scan, (size_t)n, name);
        if (r != 0 || n == 0)
            return r;
    }
}

const char *target_maps(struct target *t, size_t *ret_len)
{
    if (!t->maps.tried) {
        t->maps.tried = true;
        if (target_read_file(t, "maps", PROC_MAPS_MAX, &t->maps.buf, &t->maps.len, NULL) < 0)
            t->maps.buf = NULL;
    }
    *ret_len = t->maps.buf ? t->maps.len : 0;
    return t->maps.buf;
}

void target_maps_drop(struct target *t)
{
    free(t->maps.buf);
    t->maps.buf = NULL;
    t->maps.tried = false;
}

int target_read_exe(const struct target *t, size_t cap, char **ret_buf, size_t *ret_len,
                    struct cla_error *e)
{
    _cleanup_close_ int fd = openat(t->procfd, "exe", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return err_setsys(e, -errno, "open /proc/%d/exe", (int)t->pid);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat /proc/%d/exe", (int)t->pid);
    if (!S_ISREG(st.st_mode))
        return err_set(e, -EINVAL, "/proc/%d/exe is not a regular file", (int)t->pid);
    int r = util_read_all(fd, cap, ret_buf, ret_len);
    if (r == -E2BIG)
        return err_set(e, r, "/proc/%d/exe exceeds %zu bytes", (int)t->pid, cap);
    if (r < 0)
        return err_setsys(e, r, "read /proc/%d/exe", (int)t->pid);
    return 0;
}

void target_close(struct target *t)
{
    util_closep(&t->pidfd);
    util_closep(&t->procfd);
    util_closep(&t->rootfd);
    free(t->environ);
    t->environ = NULL;
    target_maps_drop(t);
}

void target_closep(struct target **tp)
{
    if (*tp) {
        int saved = errno;
        target_close(*tp);
        errno = saved;
        *tp = NULL;
    }
}
