/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp policy, tested black-box: each probe runs in a fresh child that enters the
 * sandbox and makes one call; the parent checks that the child died of SIGSYS, or exited with
 * the status the policy promises. A filter cannot be removed, so nothing is ever loaded in the
 * test process itself.
 *
 * Under an emulator without seccomp() (qemu-user, tests/arm64/run.sh) a check leaves out exactly
 * the part that loads a filter, says so (tests/unit/emulation.h) and proves instead that kill
 * mode refuses to start there (ENOSYS), never runs unfiltered; everything else runs as natively.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emulation.h"
#include "root.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_bpf.h"
#include "sandbox/sandbox_compile.h"
#include "base/util.h"

/* Exit codes of a child: 0 all fine; SETUP the sandbox itself failed; anything else names
 * the step that went wrong (the step number). */
#define SETUP 100

static char tmpdir[] = "/tmp/test_sandbox.XXXXXX";

/* Runs fn(arg) in a child and returns its wait status. */
static int run_child(void (*fn)(long), long arg)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void enter_or_die(enum sandbox_mode mode)
{
    struct cla_error e = {0};
    if (sandbox_enter(mode, &e) < 0)
        _exit(SETUP);
}

static void tighten_or_die(enum sandbox_stage stage)
{
    struct cla_error e = {0};
    if (sandbox_tighten(stage, &e) < 0)
        _exit(SETUP);
}

static void enter_at(enum sandbox_stage stage)
{
    enter_or_die(SANDBOX_MODE_KILL);
    if (stage != SANDBOX_STAGE_FULL)
        tighten_or_die(stage);
}

#define assert_sigsys(st, what)                                                                    \
    do {                                                                                           \
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)                                            \
            fail_msg("%s: expected death by SIGSYS, got %s %d", (what),                            \
                     WIFSIGNALED(st) ? "signal" : "exit",                                          \
                     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));                            \
    } while (0)

#define assert_exit0(st, what)                                                                     \
    do {                                                                                           \
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)                                                \
            fail_msg("%s: expected exit 0, got %s %d", (what),                                     \
                     WIFSIGNALED(st) ? "signal" : "exit",                                          \
                     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));                            \
    } while (0)

/* In a child: kill mode, where seccomp() is ENOSYS, must fail to start rather than run bare. */
static void probe_enter_refused(long unused)
{
    (void)unused;
    struct cla_error e = {0};
    _exit(sandbox_enter(SANDBOX_MODE_KILL, &e) == -ENOSYS ? 0 : 1);
}

/* True (and "n/a: CHECK: ..." printed) when `check` cannot load a filter: an emulator without
 * seccomp(). The caller leaves that part out; the refusal is checked in its place. */
static bool no_filter_here(const char *check)
{
    if (!emulation_lacks(SYS_seccomp, "seccomp", check))
        return false;
    assert_exit0(run_child(probe_enter_refused, 0), "kill mode without seccomp()");
    return true;
}

/* ---- forbidden at every stage ---------------------------------------------------------- */

/* Arguments are harmless (or invalid): if the filter let the call through, it would return
 * and the child would exit 0, which fails the test. */
static const struct forbidden {
    const char *name;
    long nr;
    long a[6];
} forbidden[] = {
    {"execve", SYS_execve, {0}},
    {"execveat", SYS_execveat, {-1, 0, 0, 0, 0, 0}},
    {"ptrace", SYS_ptrace, {0 /* PTRACE_TRACEME */, 0, 0, 0, 0, 0}},
    {"mount", SYS_mount, {0}},
    {"umount2", SYS_umount2, {0}},
    {"setns", SYS_setns, {-1, 0, 0, 0, 0, 0}},
    {"unshare", SYS_unshare, {0}},
    {"bpf", SYS_bpf, {-1, 0, 0, 0, 0, 0}},
    {"kexec_load", SYS_kexec_load, {0}},
    {"init_module", SYS_init_module, {0}},
    {"finit_module", SYS_finit_module, {-1, 0, 0, 0, 0, 0}},
    {"delete_module", SYS_delete_module, {0}},
    {"process_vm_readv", SYS_process_vm_readv, {0}},
    {"process_vm_writev", SYS_process_vm_writev, {0}},
    {"keyctl", SYS_keyctl, {-1, 0, 0, 0, 0, 0}},
    {"add_key", SYS_add_key, {0}},
    {"request_key", SYS_request_key, {0}},
    {"pivot_root", SYS_pivot_root, {0}},
    {"chroot", SYS_chroot, {0}},
    {"perf_event_open", SYS_perf_event_open, {0}},
    {"userfaultfd", SYS_userfaultfd, {0}},
    {"personality", SYS_personality, {0xffffffff, 0, 0, 0, 0, 0}},
    {"io_uring_setup", SYS_io_uring_setup, {0}},
    {"kill", SYS_kill, {1, 0, 0, 0, 0, 0}},
    /* A process in new namespaces, or one sharing our memory without being a thread: if it
     * ran, parent and child would both exit 0. (A plain fork is for watch: see below.) */
    {"clone(fork, new user namespace)", SYS_clone, {SIGCHLD | CLONE_NEWUSER, 0, 0, 0, 0, 0}},
    {"clone(fork, new pid namespace)", SYS_clone, {SIGCHLD | CLONE_NEWPID, 0, 0, 0, 0, 0}},
    {"clone(shared memory, no thread)", SYS_clone, {SIGCHLD | CLONE_VM, 0, 0, 0, 0, 0}},
    {"clone(exit signal not SIGCHLD)", SYS_clone, {SIGUSR1, 0, 0, 0, 0, 0}},
#ifdef SYS_vfork /* x86_64; aarch64 has no vfork syscall, only clone(CLONE_VM|CLONE_VFORK) */
    {"vfork", SYS_vfork, {0}},
#endif
    {"clone(vfork)", SYS_clone, {CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0, 0}},
    /* pidfd_send_signal is for SIGKILL to watch's children only */
    {"pidfd_send_signal(SIGTERM)", SYS_pidfd_send_signal, {-1, SIGTERM, 0, 0, 0, 0}},
/* legacy path calls would bypass the *at flag checks (open(2) is allowed for musl, with
 * the same O_CREAT cut as openat: see the delivery probes) */
#ifdef SYS_rename /* x86_64; aarch64 has only the *at calls, checked by stage below */
    {"rename", SYS_rename, {0}},
#endif
#ifdef SYS_unlink
    {"unlink", SYS_unlink, {0}},
#endif
#ifdef SYS_mkdir
    {"mkdir", SYS_mkdir, {0}},
#endif
    /* signal another process: tgkill only reaches ourselves */
    {"tgkill(other)", SYS_tgkill, {1, 1, 0, 0, 0, 0}},
};

static void probe_forbidden(long i)
{
    const struct forbidden *f = &forbidden[i];
    enter_or_die(SANDBOX_MODE_KILL);
    if (f->nr == SYS_execve) {
        char *argv[] = {(char *)"/bin/true", NULL};
        syscall(SYS_execve, "/bin/true", argv, environ);
    } else {
        syscall(f->nr, f->a[0], f->a[1], f->a[2], f->a[3], f->a[4], f->a[5]);
    }
}

static void test_forbidden_calls_kill(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
        assert_sigsys(run_child(probe_forbidden, (long)i), forbidden[i].name);
}

/* ---- what the program needs still works ------------------------------------------------ */

static void *thread_main(void *arg)
{
    return arg;
}

/* Calls every part of the FULL stage a real run uses; exits with the failing step's number. */
static void probe_full_allowed(long unused)
{
    (void)unused;
    enter_or_die(SANDBOX_MODE_KILL);
    char buf[256];
    int fd = openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0 || close(fd) < 0)
        _exit(1);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || close(s) < 0)
        _exit(2);
    s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || close(s) < 0)
        _exit(3);
    pthread_t t;
    void *ret = NULL;
    if (pthread_create(&t, NULL, thread_main, (void *)buf) != 0 || pthread_join(t, &ret) != 0 ||
        ret != buf)
        _exit(4);
    if (getrandom(buf, 16, 0) != 16)
        _exit(5);
    struct timespec ts;
    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) < 0)
        _exit(6);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || write(sv[0], "x", 1) != 1)
        _exit(7);
    int pending = 0;
    if (ioctl(sv[1], FIONREAD, &pending) < 0 || pending != 1)
        _exit(8);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0 || eventfd(0, EFD_CLOEXEC) < 0)
        _exit(9);
    /* clone3 fails softly so glibc falls back to clone; netlink fails softly for getaddrinfo */
    if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
        _exit(10);
    if (socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0) != -1 || errno != EAFNOSUPPORT)
        _exit(11);
    /* delivery: create under a temporary name, own it, publish it, clean up */
    int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    fd = openat(dirfd, "full.tmp", O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (dirfd < 0 || fd < 0 || write(fd, "so", 2) != 2 || fsync(fd) < 0)
        _exit(12);
    if (fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0644) < 0)
        _exit(13);
    if (renameat(dirfd, "full.tmp", dirfd, "full.so") < 0 || unlinkat(dirfd, "full.so", 0) < 0)
        _exit(14);
    if (setfsuid((uid_t)-1) != (int)geteuid() || setfsgid((gid_t)-1) != (int)getegid())
        _exit(15);
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        _exit(16);
    if (syscall(SYS_pidfd_open, getpid(), 0) < 0)
        _exit(17);
    struct cla_error e = {0};
    if (sandbox_enter(SANDBOX_MODE_KILL, &e) != -EALREADY)
        _exit(18);
}

static void test_full_stage_allows_what_is_needed(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_full_allowed, 0), "FULL stage");
}

/* ---- watch: one child process per attach ------------------------------------------------ */

/* FULL allows what watch needs to run an attach in a child: fork (libc's, whichever syscall it
 * makes), a pidfd of the child, SIGKILL through it, wait4. FULL and PS allow the same for the
 * filesystem helper of watch and ps (lib/target/fsworker.c), which also names itself. */
static void probe_fork_for_watch(long stage)
{
    enter_at((enum sandbox_stage)stage);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        _exit(1);
    pid_t c = fork();
    if (c < 0)
        _exit(2);
    if (c == 0) {
        if (prctl(PR_SET_NAME, "clrattach-fs", 0, 0, 0) < 0)
            _exit(9);
        /* the child tightens its own stages: the parent keeps its rights */
        if (stage == SANDBOX_STAGE_FULL)
            tighten_or_die(SANDBOX_STAGE_REPORT);
        char b;
        if (read(p[0], &b, 1) < 0) /* blocks until killed */
            _exit(8);
        _exit(0);
    }
    int pfd = (int)syscall(SYS_pidfd_open, c, 0);
    if (pfd < 0)
        _exit(3);
    if (syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0)
        _exit(4);
    int st = 0;
    if (waitpid(c, &st, 0) != c || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
        _exit(5);
    /* and again after the child tightened: still ours to fork */
    c = fork();
    if (c == 0)
        _exit(7);
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
        _exit(6);
}

static void test_full_stage_forks_for_watch(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_fork_for_watch, SANDBOX_STAGE_FULL), "fork for watch");
}

static void test_ps_stage_forks_its_helper(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_fork_for_watch, SANDBOX_STAGE_PS), "fork at PS");
}

/* musl's fork() on x86_64 is the fork syscall; aarch64 has none and libc forks with clone. */
static void plain_fork(void)
{
#ifdef SYS_fork
    syscall(SYS_fork);
#else
    syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

/* An attach's child is past delivery: it can start no process of its own. */
static void probe_fork_after_delivery(long use_syscall)
{
    enter_at(SANDBOX_STAGE_DELIVERED);
    if (use_syscall)
        syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    else
        plain_fork();
}

static void test_no_fork_after_delivery(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_sigsys(run_child(probe_fork_after_delivery, 0), "fork after delivery");
    assert_sigsys(run_child(probe_fork_after_delivery, 1), "clone(SIGCHLD) after delivery");
}

/* ---- DELIVERED: no more creating, owning, renaming, switching users --------------------- */

enum delivered_probe {
    P_CREATE,
    P_TMPFILE,
    P_FCHOWN,
    P_FCHMOD,
    P_RENAME,
    P_UNLINK,
    P_LINK,
    P_MKDIR,
    P_SETFSUID_OTHER,
    P_SETFSGID_OTHER,
    P_SETGROUPS_SOME,
    P_OPEN_CREATE,
    P_COUNT,
};

static const char *const delivered_names[P_COUNT] = {
    "openat O_CREAT",
    "openat O_TMPFILE",
    "fchown",
    "fchmod",
    "renameat",
    "unlinkat",
    "linkat",
    "mkdirat",
    "setfsuid other",
    "setfsgid other",
    "setgroups with groups",
    "open O_CREAT (musl)",
};

/* Runs at stage `arg >> 8` the probe `arg & 0xff`. */
static void probe_after_delivery(long arg)
{
    int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = openat(dirfd, "existing", O_RDONLY | O_CLOEXEC);
    if (dirfd < 0 || fd < 0)
        _exit(SETUP + 1);
    enter_at((enum sandbox_stage)(arg >> 8));
    gid_t g = 4242;
    switch ((enum delivered_probe)(arg & 0xff)) {
    case P_CREATE: openat(dirfd, "new", O_CREAT | O_WRONLY | O_CLOEXEC, 0600); break;
    case P_TMPFILE: openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600); break;
    case P_FCHOWN: (void)!fchown(fd, geteuid(), getegid()); break;
    case P_FCHMOD: fchmod(fd, 0644); break;
    case P_RENAME: renameat(dirfd, "existing", dirfd, "renamed"); break;
    case P_UNLINK: unlinkat(dirfd, "nothing-here", 0); break;
    case P_LINK: (void)!linkat(dirfd, "existing", dirfd, "linked", 0); break;
    case P_MKDIR: mkdirat(dirfd, "dir", 0700); break;
    case P_SETFSUID_OTHER: setfsuid(4242); break;
    case P_SETFSGID_OTHER: setfsgid(4242); break;
    case P_SETGROUPS_SOME: setgroups(1, &g); break;
    case P_OPEN_CREATE:
#ifdef SYS_open
        syscall(SYS_open, "/tmp/clrattach-never-created", O_CREAT | O_WRONLY, 0600);
#else /* aarch64: no legacy open; the openat probe above is the one that counts there */
        syscall(SYS_openat, AT_FDCWD, "/tmp/clrattach-never-created", O_CREAT | O_WRONLY, 0600);
#endif
        break;
    case P_COUNT: break;
    }
}

static void check_delivery_cuts(enum sandbox_stage stage)
{
    for (int p = 0; p < P_COUNT; p++) {
        /* fchmod and unlinkat last until the reply: a refused profiler is removed then. */
        bool until_reply = p == P_FCHMOD || p == P_UNLINK;
        if (stage == SANDBOX_STAGE_DELIVERED && until_reply)
            assert_int_equal(run_child(probe_after_delivery, ((long)stage << 8) | p), 0);
        else
            assert_sigsys(run_child(probe_after_delivery, ((long)stage << 8) | p),
                          delivered_names[p]);
    }
}

static void test_delivered_forbids_file_changes(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    check_delivery_cuts(SANDBOX_STAGE_DELIVERED);
}

static void test_report_keeps_delivery_cuts(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    /* Straight from FULL to REPORT: the skipped stage's cuts must hold too. */
    check_delivery_cuts(SANDBOX_STAGE_REPORT);
}

/* What DELIVERED still allows: reading, writing an existing file, restoring our ids. */
static void probe_delivered_allowed(long unused)
{
    (void)unused;
    int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        _exit(SETUP + 1);
    enter_at(SANDBOX_STAGE_DELIVERED);
    char buf[64];
    int fd = openat(dirfd, "existing", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf)) != 5)
        _exit(1);
    /* the termination log: an existing file, opened for writing without O_CREAT */
    fd = openat(dirfd, "existing", O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0 || write(fd, "hello", 5) != 5)
        _exit(2);
    /* O_DIRECTORY alone shares no bit with O_TMPFILE's test */
    if (openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) < 0)
        _exit(3);
    /* openat2 is refused with EPERM: rootfs.c then walks with openat */
    struct {
        uint64_t flags, mode, resolve;
    } how = {O_RDONLY | O_CLOEXEC, 0, 0};
    if (syscall(SYS_openat2, dirfd, "existing", &how, sizeof(how)) != -1 || errno != EPERM)
        _exit(4);
    if (setfsuid((uid_t)-1) != (int)geteuid() || setfsuid(geteuid()) != (int)geteuid())
        _exit(5);
    if (setfsgid((gid_t)-1) != (int)getegid() || setfsgid(getegid()) != (int)getegid())
        _exit(6);
    if (geteuid() == 0 && setgroups(0, NULL) < 0)
        _exit(7);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        _exit(8);
    if (syscall(SYS_getdents64, dirfd, buf, sizeof(buf)) == -1 && errno != EBADF)
        _exit(9);
    struct cla_error e = {0};
    if (sandbox_tighten(SANDBOX_STAGE_DELIVERED, &e) != 0)
        _exit(10);
    if (sandbox_tighten(SANDBOX_STAGE_FULL, &e) != -EINVAL)
        _exit(11);
}

static void test_delivered_keeps_reading(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_delivered_allowed, 0), "DELIVERED allowed");
}

/* ---- REPORT: HTTPS and output only --------------------------------------------------- */

static void probe_report_allowed(long unused)
{
    (void)unused;
    enter_at(SANDBOX_STAGE_DELIVERED);
    tighten_or_die(SANDBOX_STAGE_REPORT);
    int fd = openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        _exit(1);
    if (socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0 ||
        socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0)
        _exit(2);
    /* no new AF_UNIX connection, softly (glibc's nscd probe); socketpair is curl's */
    if (socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) != -1 || errno != EPERM)
        _exit(3);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        _exit(4);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
        _exit(5);
    if (write(STDOUT_FILENO, "", 0) < 0)
        _exit(6);
}

static void test_report_allows_reporting(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_report_allowed, 0), "REPORT allowed");
}

static void probe_report_forbidden(long which)
{
    int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    enter_at(SANDBOX_STAGE_REPORT);
    char buf[256];
    if (which == 0)
        syscall(SYS_pidfd_open, getpid(), 0);
    else if (which == 1)
        syscall(SYS_getdents64, dirfd, buf, sizeof(buf));
    else
        (void)!readlinkat(AT_FDCWD, "/proc/self/exe", buf, sizeof(buf));
}

static void test_report_forbids_discovery(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_sigsys(run_child(probe_report_forbidden, 0), "pidfd_open");
    assert_sigsys(run_child(probe_report_forbidden, 1), "getdents64");
    assert_sigsys(run_child(probe_report_forbidden, 2), "readlinkat");
}

/* ---- threads started earlier get the tighter filter too (TSYNC) ------------------------ */

static int go_pipe[2];

static void *late_creator(void *arg)
{
    (void)arg;
    char c;
    if (read(go_pipe[0], &c, 1) != 1)
        return NULL;
    int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    openat(dirfd, "from-thread", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    return NULL;
}

static void probe_thread_tightened(long unused)
{
    (void)unused;
    enter_or_die(SANDBOX_MODE_KILL);
    pthread_t t;
    if (pipe2(go_pipe, O_CLOEXEC) < 0 || pthread_create(&t, NULL, late_creator, NULL) != 0)
        _exit(SETUP + 1);
    tighten_or_die(SANDBOX_STAGE_DELIVERED);
    if (write(go_pipe[1], "g", 1) != 1)
        _exit(SETUP + 2);
    pthread_join(t, NULL);
}

static void test_tighten_reaches_running_threads(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_sigsys(run_child(probe_thread_tightened, 0), "openat O_CREAT from an older thread");
}

/* ---- modes ------------------------------------------------------------------------------ */

static void probe_log_mode(long unused)
{
    (void)unused;
    enter_or_die(SANDBOX_MODE_LOG);
    tighten_or_die(SANDBOX_STAGE_REPORT);
    /* outside the list: logged, and it runs */
    if (syscall(SYS_personality, 0xffffffff) < 0)
        _exit(1);
    /* the errno rules are policy, not violations: they hold in log mode too */
    if (socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0) != -1 || errno != EAFNOSUPPORT)
        _exit(2);
}

static void probe_off_mode(long unused)
{
    (void)unused;
    enter_or_die(SANDBOX_MODE_OFF);
    tighten_or_die(SANDBOX_STAGE_REPORT);
    if (syscall(SYS_personality, 0xffffffff) < 0 || unshare(0) < 0)
        _exit(1);
    if (socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0)
        _exit(2);
}

static void test_log_and_off_modes_do_not_kill(void **state)
{
    (void)state;
    if (!no_filter_here("test_log_and_off_modes_do_not_kill: log mode"))
        assert_exit0(run_child(probe_log_mode, 0), "log mode");
    assert_exit0(run_child(probe_off_mode, 0), "off mode");
}

static void test_parse_mode(void **state)
{
    (void)state;
    struct cla_error e = {0};
    enum sandbox_mode m = SANDBOX_MODE_OFF;
    assert_int_equal(sandbox_parse_mode("kill", &m, &e), 0);
    assert_int_equal(m, SANDBOX_MODE_KILL);
    assert_int_equal(sandbox_parse_mode("log", &m, &e), 0);
    assert_int_equal(m, SANDBOX_MODE_LOG);
    assert_int_equal(sandbox_parse_mode("off", &m, &e), 0);
    assert_int_equal(m, SANDBOX_MODE_OFF);
    m = SANDBOX_MODE_LOG;
    assert_int_equal(sandbox_parse_mode("KILL", &m, &e), -EINVAL);
    assert_int_equal(sandbox_parse_mode("", &m, &e), -EINVAL);
    assert_int_equal(sandbox_parse_mode(NULL, &m, &e), -EINVAL);
    assert_int_equal(m, SANDBOX_MODE_LOG); /* untouched on failure */
    assert_non_null(strstr(e.hint, "--seccomp=kill"));
}

static void test_tighten_before_enter(void **state)
{
    (void)state;
    struct cla_error e = {0};
    assert_int_equal(sandbox_tighten(SANDBOX_STAGE_DELIVERED, &e), -EINVAL);
}

/* ---- capabilities ----------------------------------------------------------------------- */

/* Drops all but three capabilities, under the kill filter if `arg & 1`, the bounding set too if
 * `arg & 2`. */
static void probe_drop_caps(long arg)
{
    bool root = geteuid() == 0, filtered = arg & 1, bounding = arg & 2;
    const uint64_t keep = (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID) | (1ULL << CAP_SYS_PTRACE);
    if (filtered)
        enter_or_die(SANDBOX_MODE_KILL); /* the filter must allow the dropping itself */
    uint64_t before = 0;                 /* the bounding set as it was */
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
            before |= 1ULL << cap;
    struct cla_error e = {0};
    if (sandbox_drop_caps(keep, bounding, &e) < 0)
        _exit(1);
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2] = {{0}};
    if (syscall(SYS_capget, &hdr, d) < 0)
        _exit(2);
    uint64_t eff = d[0].effective | (uint64_t)d[1].effective << 32;
    uint64_t perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
    uint64_t inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
    if ((eff | perm | inh) & ~keep)
        _exit(3);
    if (root && eff != keep)
        _exit(4);
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
        /* root: the bounding set is `keep` when asked for, untouched when not */
        int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (root && in != (int)(((bounding ? keep & before : before) >> cap) & 1))
            _exit(5);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) > 0)
            _exit(6);
    }
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        _exit(7);
}

static void test_drop_caps(void **state)
{
    (void)state;
    bool filtered = !no_filter_here("test_drop_caps: dropping under the kill filter");
    assert_exit0(run_child(probe_drop_caps, filtered), "drop caps");
    assert_exit0(run_child(probe_drop_caps, filtered | 2), "drop caps, bounding set too");
}

/* ---- ATTACH and PS: the stages a single attach and `ps` enter at ------------------------- */

/* Runs at stage `arg >> 1` a plain fork (arg & 1: clone(SIGCHLD), else libc's syscall). */
static void probe_fork_at(long arg)
{
    enter_at((enum sandbox_stage)(arg >> 1));
    if (arg & 1)
        syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    else
        plain_fork();
    _exit(0); /* the parent and, had it run, the child */
}

/* Runs at PS a clone that is more than a plain fork: a new user namespace (arg 0) or shared
 * memory without a thread (arg 1). */
static void probe_ps_clone_beyond_fork(long arg)
{
    enter_at(SANDBOX_STAGE_PS);
    syscall(SYS_clone, SIGCHLD | (arg ? CLONE_VM : CLONE_NEWUSER), 0, 0, 0, 0);
    _exit(0);
}

/* A single attach starts no process; ps starts its filesystem helper (a plain fork: see
 * test_ps_stage_forks_its_helper) and nothing more. */
static void test_attach_and_ps_start_no_process(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_sigsys(run_child(probe_fork_at, (long)SANDBOX_STAGE_ATTACH << 1), "fork");
    assert_sigsys(run_child(probe_fork_at, ((long)SANDBOX_STAGE_ATTACH << 1) | 1),
                  "clone(SIGCHLD)");
    assert_sigsys(run_child(probe_ps_clone_beyond_fork, 0), "clone(new user namespace) at PS");
    assert_sigsys(run_child(probe_ps_clone_beyond_fork, 1), "clone(CLONE_VM) at PS");
}

/* ATTACH keeps every right of delivery: the FULL probes' delivery steps pass. */
static void probe_attach_delivers(long unused)
{
    (void)unused;
    struct cla_error e = {0};
    if (sandbox_enter_at(SANDBOX_MODE_KILL, SANDBOX_STAGE_ATTACH, &e) < 0)
        _exit(SETUP);
    int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd =
        openat(dirfd, "attach.tmp", O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (dirfd < 0 || fd < 0 || write(fd, "so", 2) != 2)
        _exit(1);
    if (fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0644) < 0)
        _exit(2);
    if (renameat(dirfd, "attach.tmp", dirfd, "attach.so") < 0 ||
        unlinkat(dirfd, "attach.so", 0) < 0)
        _exit(3);
    if (setfsuid(4242) != (int)geteuid() || setfsuid(geteuid()) != 4242)
        _exit(4);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0)
        _exit(5);
    if (syscall(SYS_pidfd_open, getpid(), 0) < 0)
        _exit(6);
    /* forward only; FULL (watch's) is behind, PS is another branch */
    if (sandbox_tighten(SANDBOX_STAGE_FULL, &e) != -EINVAL ||
        sandbox_tighten(SANDBOX_STAGE_PS, &e) != -EINVAL)
        _exit(7);
    if (sandbox_tighten(SANDBOX_STAGE_DELIVERED, &e) != 0)
        _exit(8);
}

static void test_attach_stage_delivers(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setfsuid() to another uid, fchown()");
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_attach_delivers, 0), "ATTACH stage");
}

/* PS: everything that changes a file is gone from the start; acting as a user is not. */
static void test_ps_forbids_file_changes(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    for (int p = 0; p < P_COUNT; p++) {
        long arg = ((long)SANDBOX_STAGE_PS << 8) | p;
        bool as_user = p == P_SETFSUID_OTHER || p == P_SETFSGID_OTHER || p == P_SETGROUPS_SOME;
        if (as_user)
            assert_exit0(run_child(probe_after_delivery, arg), delivered_names[p]);
        else
            assert_sigsys(run_child(probe_after_delivery, arg), delivered_names[p]);
    }
}

/* PS reads /proc and a target's files, connects to its socket as its user: nothing else. */
static void probe_ps_allowed(long unused)
{
    (void)unused;
    int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        _exit(SETUP + 1);
    struct cla_error e = {0};
    if (sandbox_enter_at(SANDBOX_MODE_KILL, SANDBOX_STAGE_PS, &e) < 0)
        _exit(SETUP);
    char buf[512];
    int fd = openat(AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0 || close(fd) < 0)
        _exit(1);
    if (syscall(SYS_getdents64, dirfd, buf, sizeof(buf)) < 0)
        _exit(2);
    if (readlinkat(AT_FDCWD, "/proc/self/exe", buf, sizeof(buf)) < 0)
        _exit(3);
    /* openat2 stays: RESOLVE_IN_ROOT lookups of each target's socket */
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
    int fd2 = (int)syscall(SYS_openat2, dirfd, "existing", &how, sizeof(how));
    if (fd2 < 0 && errno != ENOSYS)
        _exit(4);
    if (setfsuid(4242) != (int)geteuid() || setfsuid(geteuid()) != 4242)
        _exit(5);
    if (socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0)
        _exit(6);
    if (syscall(SYS_pidfd_open, getpid(), 0) < 0)
        _exit(7);
    if (sandbox_tighten(SANDBOX_STAGE_ATTACH, &e) != -EINVAL ||
        sandbox_tighten(SANDBOX_STAGE_PS, &e) != 0)
        _exit(8);
}

static void probe_ps_no_network(long unused)
{
    (void)unused;
    enter_at(SANDBOX_STAGE_PS);
    socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static void test_ps_stage(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setfsuid() to another uid, fchown()");
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_ps_allowed, 0), "PS stage");
    assert_sigsys(run_child(probe_ps_no_network, 0), "socket(AF_INET) in ps");
}

/* QUERY (perfmap): like PS, nothing that changes a file, acting as a user kept; and unlike PS,
 * openat2 fails (EPERM, the checked walk instead), HTTPS for the Event stays, no fork, and only
 * REPORT follows. */
static void probe_query_allowed(long unused)
{
    (void)unused;
    int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        _exit(SETUP + 1);
    struct cla_error e = {0};
    if (sandbox_enter_at(SANDBOX_MODE_KILL, SANDBOX_STAGE_QUERY, &e) < 0)
        _exit(SETUP);
    char buf[512];
    int fd = openat(AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0 || close(fd) < 0)
        _exit(1);
    if (syscall(SYS_getdents64, dirfd, buf, sizeof(buf)) < 0)
        _exit(2);
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
    if (syscall(SYS_openat2, dirfd, "existing", &how, sizeof(how)) >= 0 || errno != EPERM)
        _exit(3);
    if (setfsuid(4242) != (int)geteuid() || setfsuid(geteuid()) != 4242)
        _exit(4);
    int s1 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int s2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s1 < 0 || s2 < 0 || syscall(SYS_pidfd_open, getpid(), 0) < 0)
        _exit(5);
    if (sandbox_tighten(SANDBOX_STAGE_DELIVERED, &e) != -EINVAL ||
        sandbox_tighten(SANDBOX_STAGE_PS, &e) != -EINVAL ||
        sandbox_tighten(SANDBOX_STAGE_REPORT, &e) != 0)
        _exit(6);
    /* the reply stage's cut, as after an attach */
    if (socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) >= 0 || errno != EPERM)
        _exit(7);
}

static void probe_query_no_fork(long unused)
{
    (void)unused;
    enter_at(SANDBOX_STAGE_QUERY);
    pid_t c = fork();
    if (c == 0)
        _exit(0);
}

static void test_query_stage(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setfsuid() to another uid");
    if (no_filter_here(__func__))
        return;
    for (int p = 0; p < P_COUNT; p++) {
        long arg = ((long)SANDBOX_STAGE_QUERY << 8) | p;
        bool as_user = p == P_SETFSUID_OTHER || p == P_SETFSGID_OTHER || p == P_SETGROUPS_SOME;
        if (as_user)
            assert_exit0(run_child(probe_after_delivery, arg), delivered_names[p]);
        else
            assert_sigsys(run_child(probe_after_delivery, arg), delivered_names[p]);
    }
    assert_exit0(run_child(probe_query_allowed, 0), "QUERY stage");
    assert_sigsys(run_child(probe_query_no_fork, 0), "fork in query");
}

/* A watch child's own stages name ITS pid: signalling the watcher, allowed by the FULL filter it
 * inherited, is refused by the DELIVERED filter the child loaded. */
static void probe_child_gets_its_pid(long unused)
{
    (void)unused;
    enter_or_die(SANDBOX_MODE_KILL);
    pid_t watcher = getpid();
    pid_t c = fork();
    if (c < 0)
        _exit(1);
    if (c == 0) {
        tighten_or_die(SANDBOX_STAGE_DELIVERED);
        syscall(SYS_tgkill, watcher, watcher, 0);
        _exit(0);
    }
    /* and the watcher itself still signals itself (signal 0: a check only) */
    if (syscall(SYS_tgkill, watcher, (pid_t)syscall(SYS_gettid), 0) < 0)
        _exit(2);
    int st = 0;
    if (waitpid(c, &st, 0) != c)
        _exit(3);
    _exit(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS ? 0 : 4);
}

static void test_child_stage_has_its_pid(void **state)
{
    (void)state;
    if (no_filter_here(__func__))
        return;
    assert_exit0(run_child(probe_child_gets_its_pid, 0), "watch child's pid in its filter");
}

/* ---- the built-in programs: compiled at build time from the same table ------------------- */

static bool is_sentinel(uint32_t k)
{
    return k == SANDBOX_SENTINEL_EUID || k == SANDBOX_SENTINEL_EGID || k == SANDBOX_SENTINEL_PID;
}

/* Whether the table has a rule of `stage` whose datum is the run-time value `dyn`. */
static bool stage_has_dyn(enum sandbox_stage stage, enum sandbox_arg_dyn dyn)
{
    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    for (size_t i = 0; i < n; i++)
        if ((rules[i].stages & sandbox_stage_bit(stage)) && rules[i].dyn == dyn &&
            seccomp_syscall_resolve_name(rules[i].name) != __NR_SCMP_ERROR)
            return true;
    return false;
}

static size_t count_k(const struct sock_filter *f, size_t n, uint16_t code, uint32_t k)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += f[i].code == code && f[i].k == k;
    return c;
}

/* Compiles as the build did: tools/sandbox_gen.c ran on the build host, whose kernel has
 * SECCOMP_RET_KILL_PROCESS and SECCOMP_RET_LOG (the generator needs both: libseccomp API level
 * 3). libseccomp asks the running kernel which actions it accepts; under an emulator without
 * seccomp() it finds level 1 and refuses both (seccomp_init fails). The level decides only which
 * actions and flags libseccomp accepts, not the program it builds, so the emulator's answer is
 * replaced by the build host's. Natively the kernel's own answer stands. */
static void compile_as_the_build_did(void)
{
    if (emulator_lacks(SYS_seccomp))
        assert_int_equal(seccomp_api_set(3), 0);
}

/* The table stays the one source: what libseccomp compiles now, from the table this test was
 * built with, is what the build put into the binary, instruction for instruction. */
static void test_builtin_equals_table(void **state)
{
    (void)state;
    compile_as_the_build_did();
    const struct sandbox_bpf_values stand_in = {SANDBOX_SENTINEL_EUID, SANDBOX_SENTINEL_EGID,
                                                SANDBOX_SENTINEL_PID, true};
    assert_int_equal(sandbox_bpf_builtin.audit_arch, sandbox_bpf_native_arch());
    for (int s = 0; s < SANDBOX_STAGE_COUNT; s++) {
        for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
            const struct sandbox_bpf *b = &sandbox_bpf_builtin.prog[s][m];
            struct sock_filter *insns = NULL;
            size_t n = 0;
            struct cla_error e = {0};
            assert_int_equal(sandbox_compile_stage(s, m, 0, &stand_in, &insns, &n, &e), 0);
            if (n != b->len || memcmp(insns, b->insns, n * sizeof(*insns)) != 0)
                fail_msg("stage %s mode %d: the built-in program is not the table's (%zu vs %u "
                         "instructions): rebuild",
                         sandbox_stage_name(s), m, n, b->len);
            free(insns);
        }
    }
}

/* Every stand-in is where a rule needs it, and none survives the patch: the patched program is
 * exactly what libseccomp builds with the real values. */
static void test_sentinels_patched(void **state)
{
    (void)state;
    compile_as_the_build_did();
    static struct sock_filter out[BPF_MAXINSNS];
    const uint16_t jeq = BPF_JMP | BPF_JEQ | BPF_K, ret = BPF_RET | BPF_K;
    const struct sandbox_bpf_values real = {1001, 1002, 4242, true};
    for (int s = 0; s < SANDBOX_STAGE_COUNT; s++) {
        for (int m = SANDBOX_MODE_KILL; m <= SANDBOX_MODE_LOG; m++) {
            const struct sandbox_bpf *b = &sandbox_bpf_builtin.prog[s][m];
            size_t euid = count_k(b->insns, b->len, jeq, SANDBOX_SENTINEL_EUID);
            size_t egid = count_k(b->insns, b->len, jeq, SANDBOX_SENTINEL_EGID);
            size_t pid = count_k(b->insns, b->len, jeq, SANDBOX_SENTINEL_PID);
            assert_int_equal(euid > 0, stage_has_dyn(s, SANDBOX_DYN_EUID));
            assert_int_equal(egid > 0, stage_has_dyn(s, SANDBOX_DYN_EGID));
            assert_int_equal(pid > 0, stage_has_dyn(s, SANDBOX_DYN_PID));
            assert_true(pid > 0); /* tgkill to ourselves, in every stage */
            size_t sites = 0;
            struct cla_error e = {0};
            int n = sandbox_bpf_patch(b, &real, out, ARRAY_SIZE(out), &sites, &e);
            assert_int_equal(n, b->len);
            assert_int_equal(sites, euid + egid + pid);
            for (int i = 0; i < n; i++)
                if (out[i].code == jeq && is_sentinel(out[i].k))
                    fail_msg("stage %s: sentinel left at %d", sandbox_stage_name(s), i);
            assert_int_equal(count_k(out, (size_t)n, jeq, real.pid), pid);
            struct sock_filter *want = NULL;
            size_t wn = 0;
            assert_int_equal(sandbox_compile_stage(s, m, 0, &real, &want, &wn, &e), 0);
            assert_int_equal(wn, (size_t)n);
            assert_memory_equal(want, out, wn * sizeof(*want));
            free(want);
            /* a kernel before 4.14: every kill is a thread kill, the rest untouched */
            const struct sandbox_bpf_values old = {1001, 1002, 4242, false};
            size_t kills = count_k(b->insns, b->len, ret, SECCOMP_RET_KILL_PROCESS);
            assert_true(kills > 0); /* bad architecture, and the default in kill mode */
            size_t threads = count_k(b->insns, b->len, ret, SECCOMP_RET_KILL_THREAD);
            n = sandbox_bpf_patch(b, &old, out, ARRAY_SIZE(out), NULL, &e);
            assert_int_equal(n, b->len);
            assert_int_equal(count_k(out, (size_t)n, ret, SECCOMP_RET_KILL_PROCESS), 0);
            assert_int_equal(count_k(out, (size_t)n, ret, SECCOMP_RET_KILL_THREAD),
                             kills + threads);
        }
    }
}

static void test_patch_rejects(void **state)
{
    (void)state;
    struct sock_filter out[4];
    const struct sandbox_bpf_values v = {1, 2, 3, true};
    struct cla_error e = {0};
    const struct sandbox_bpf empty = {sandbox_bpf_builtin.prog[0][0].insns, 0};
    assert_int_equal(sandbox_bpf_patch(&empty, &v, out, ARRAY_SIZE(out), NULL, &e), -EPROTO);
    const struct sandbox_bpf none = {NULL, 3};
    assert_int_equal(sandbox_bpf_patch(&none, &v, out, ARRAY_SIZE(out), NULL, &e), -EPROTO);
    assert_int_equal(
        sandbox_bpf_patch(&sandbox_bpf_builtin.prog[0][0], &v, out, ARRAY_SIZE(out), NULL, &e),
        -E2BIG);
}

/* A binary whose programs were built for another architecture must not load them: they would
 * judge our syscall numbers by a foreign table (and the first test would kill every call). */
static void test_foreign_arch_refused(void **state)
{
    (void)state;
    compile_as_the_build_did();
    struct cla_error e = {0};
    uint32_t native = sandbox_bpf_native_arch();
    assert_int_equal(sandbox_bpf_check_arch(&sandbox_bpf_builtin, native, &e), 0);
    uint32_t foreign = native == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_AARCH64 : AUDIT_ARCH_X86_64;
    assert_int_equal(sandbox_bpf_check_arch(&sandbox_bpf_builtin, foreign, &e), -ENOEXEC);
    assert_int_equal(sandbox_bpf_check_arch(&sandbox_bpf_builtin, 0, &e), -ENOEXEC);
    /* a set that claims our arch but holds a program compiled for the other one */
    struct sandbox_bpf_set forged = sandbox_bpf_builtin;
    struct sock_filter *other = NULL;
    size_t n = 0;
    const struct sandbox_bpf_values v = {1, 2, 3, true};
    assert_int_equal(
        sandbox_compile_stage(SANDBOX_STAGE_REPORT, SANDBOX_MODE_KILL, foreign, &v, &other, &n, &e),
        0);
    forged.prog[SANDBOX_STAGE_REPORT][SANDBOX_MODE_KILL] = (struct sandbox_bpf){other, (uint16_t)n};
    assert_int_equal(sandbox_bpf_check_arch(&forged, native, &e), -ENOEXEC);
    assert_non_null(strstr(e.msg, "does not test"));
    free(other);
}

/* The bounding set is shrunk once; a later call lowers the other sets with capset alone. */
static void probe_drop_caps_twice(long unused)
{
    (void)unused;
    struct cla_error e = {0};
    const uint64_t first = (1ULL << CAP_SETUID) | (1ULL << CAP_DAC_OVERRIDE);
    if (sandbox_drop_caps(first, true, &e) < 0)
        _exit(1);
    if (sandbox_drop_caps(1ULL << CAP_DAC_OVERRIDE, true, &e) < 0)
        _exit(2);
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &hdr, d) < 0)
        _exit(3);
    uint32_t want = geteuid() == 0 ? 1u << CAP_DAC_OVERRIDE : 0;
    if (d[0].permitted != want || d[0].effective != want || d[1].permitted != 0)
        _exit(4);
    /* the bounding set holds what the first call kept (root) or everything (no CAP_SETPCAP) */
    if (prctl(PR_CAPBSET_READ, CAP_SETUID, 0, 0, 0) != 1 ||
        prctl(PR_CAPBSET_READ, CAP_DAC_OVERRIDE, 0, 0, 0) != 1)
        _exit(5);
    if (geteuid() == 0 && prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
        _exit(6);
}

static void test_drop_caps_twice(void **state)
{
    (void)state;
    assert_exit0(run_child(probe_drop_caps_twice, 0), "drop caps twice");
}

/* ---- the table and the exported profile ------------------------------------------------- */

static const char *const never_allowed[] = {
    "execveat",
    "ptrace",
    "mount",
    "umount2",
    "setns",
    "unshare",
    "bpf",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "pivot_root",
    "chroot",
    "perf_event_open",
    "userfaultfd",
    "personality",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "clone3",
    "vfork",
    "kill",
};

static bool rule_allows(const struct sandbox_rule *r, unsigned stages)
{
    return (r->stages & stages) && r->errno_ret == 0;
}

static bool table_allows(const char *name, unsigned stages)
{
    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    for (size_t i = 0; i < n; i++)
        if (rule_allows(&rules[i], stages) && strcmp(rules[i].name, name) == 0)
            return true;
    return false;
}

/* A listening socket only in the listening commands' stage: every other stage (watch's and
 * attach's own included) keeps them out, and LISTEN has all that ATTACH has. */
static void test_listen_stage(void **state)
{
    static const char *const listening[] = {"bind", "listen", "accept4", "umask"};
    const unsigned others = SANDBOX_IN_ALL & ~SANDBOX_IN_LISTEN;
    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    (void)state;

    for (size_t i = 0; i < sizeof(listening) / sizeof(listening[0]); i++) {
        assert_true(table_allows(listening[i], SANDBOX_IN_LISTEN));
        if (table_allows(listening[i], others))
            fail_msg("'%s' allowed outside the listen stage", listening[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (rule_allows(&rules[i], SANDBOX_IN_ATTACH) &&
            !table_allows(rules[i].name, SANDBOX_IN_LISTEN))
            fail_msg("'%s' is in ATTACH but not in LISTEN", rules[i].name);
    assert_int_equal(sandbox_stage_bit(SANDBOX_STAGE_LISTEN), SANDBOX_IN_LISTEN);
    assert_string_equal(sandbox_stage_name(SANDBOX_STAGE_LISTEN), "listen");
}

static void test_table_is_sound(void **state)
{
    (void)state;
    size_t n;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    size_t distinct_full = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sandbox_rule *r = &rules[i];
        /* a typo would silently allow nothing */
        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, r->name) == __NR_SCMP_ERROR)
            fail_msg("unknown syscall name '%s'", r->name);
        assert_true(r->stages != 0);
        assert_true(r->op == SANDBOX_ARG_NONE || r->arg < 6);
        /* a later stage never allows what an earlier one did not */
        if (rule_allows(r, SANDBOX_IN_REPORT) && !table_allows(r->name, SANDBOX_IN_DELIVERED))
            fail_msg("%s allowed in REPORT but not in DELIVERED", r->name);
        if (rule_allows(r, SANDBOX_IN_DELIVERED) && !table_allows(r->name, SANDBOX_IN_FULL))
            fail_msg("%s allowed in DELIVERED but not in FULL", r->name);
        bool first = true;
        for (size_t j = 0; j < i; j++)
            if (rule_allows(&rules[j], SANDBOX_IN_FULL) && strcmp(rules[j].name, r->name) == 0)
                first = false;
        if (rule_allows(r, SANDBOX_IN_FULL) && first)
            distinct_full++;
    }
    for (size_t i = 0; i < sizeof(never_allowed) / sizeof(never_allowed[0]); i++)
        if (table_allows(never_allowed[i], SANDBOX_IN_ALL | SANDBOX_IN_STARTUP))
            fail_msg("'%s' must never be allowed", never_allowed[i]);
    /* execve only for the runtime's start of our binary, never in-process */
    assert_false(table_allows("execve", SANDBOX_IN_ALL));
    assert_true(table_allows("execve", SANDBOX_IN_STARTUP));
    assert_int_equal(sandbox_allowed_count(), distinct_full);
    assert_in_range(sandbox_allowed_count(), 40, 150);
}

static bool list_has(const json_t *names, const char *name)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0)
            return true;
    return false;
}

static void test_profile_json(void **state)
{
    (void)state;
    char *text = NULL;
    struct cla_error e = {0};
    assert_int_equal(sandbox_profile_json(&text, &e), 0);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        fail_msg("profile is not JSON: %s (line %d)", jerr.text, jerr.line);
    free(text);

    assert_string_equal(json_string_value(json_object_get(root, "defaultAction")),
                        "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(root, "defaultErrnoRet")), EPERM);
    /* "architectures" and the one-action-per-syscall shape: tests/unit/test_profile_load.c */
    assert_non_null(json_object_get(root, "architectures"));

    /* Collect the allowed names; check the shape of every entry on the way. */
    json_t *allowed = json_array();
    const json_t *entry;
    size_t i;
    bool clone_thread = false;
    const json_t *syscalls = json_object_get(root, "syscalls");
    assert_true(json_array_size(syscalls) > 1);
    for (i = 0; i < json_array_size(syscalls); i++) {
        entry = json_array_get(syscalls, i);
        const char *action = json_string_value(json_object_get(entry, "action"));
        const json_t *names = json_object_get(entry, "names");
        assert_non_null(action);
        assert_true(json_array_size(names) > 0);
        const json_t *args = json_object_get(entry, "args");
        assert_true(!args || json_array_size(args) == 1);
        const json_t *arg = json_array_get(args, 0);
        const char *name0 = json_string_value(json_array_get(names, 0));
        if (strcmp(action, "SCMP_ACT_ERRNO") == 0) {
            assert_true(json_integer_value(json_object_get(entry, "errnoRet")) > 0);
            /* socket() is allowed for some domains: the others fall to the default (one
             * action per syscall, or runc refuses the profile) */
            assert_string_not_equal(name0, "socket");
            continue;
        }
        assert_string_equal(action, "SCMP_ACT_ALLOW");
        if (strcmp(name0, "clone") == 0) {
            assert_string_equal(json_string_value(json_object_get(arg, "op")),
                                "SCMP_CMP_MASKED_EQ");
            clone_thread |= json_integer_value(json_object_get(arg, "valueTwo")) == CLONE_THREAD;
        }
        for (size_t k = 0; k < json_array_size(names); k++) {
            const char *name = json_string_value(json_array_get(names, k));
            if (!list_has(allowed, name))
                json_array_append_new(allowed, json_string(name));
        }
    }
    assert_true(clone_thread);

    /* Exactly the table's FULL, LISTEN and STARTUP allows: nothing more, nothing less. */
    size_t n, not_full = 0;
    const struct sandbox_rule *rules = sandbox_policy_rules(&n);
    json_t *extra = json_array();
    for (size_t r = 0; r < n; r++) {
        if (!rule_allows(&rules[r], SANDBOX_IN_FULL | SANDBOX_IN_LISTEN | SANDBOX_IN_STARTUP))
            continue;
        if (!list_has(allowed, rules[r].name))
            fail_msg("'%s' missing from the profile", rules[r].name);
        if (!table_allows(rules[r].name, SANDBOX_IN_FULL) && !list_has(extra, rules[r].name)) {
            json_array_append_new(extra, json_string(rules[r].name));
            not_full++;
        }
    }
    json_decref(extra);
    assert_int_equal(json_array_size(allowed), sandbox_allowed_count() + not_full);
    /* The listening socket is in the profile: the sidecar that listens runs under it. */
    assert_true(list_has(allowed, "bind") && list_has(allowed, "accept4"));
    for (size_t f = 0; f < sizeof(never_allowed) / sizeof(never_allowed[0]); f++)
        if (list_has(allowed, never_allowed[f]))
            fail_msg("'%s' allowed by the profile", never_allowed[f]);
    /* spot checks that do not depend on the table */
    assert_true(list_has(allowed, "openat"));
    assert_true(list_has(allowed, "read"));
    assert_true(list_has(allowed, "execve")); /* the runtime execs us under the profile */
    json_decref(allowed);
    json_decref(root);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir))
        return -1;
    char path[sizeof(tmpdir) + 16];
    snprintf(path, sizeof(path), "%s/existing", tmpdir);
    FILE *f = fopen(path, "w");
    if (!f || fputs("hello", f) < 0 || fclose(f) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char path[sizeof(tmpdir) + 16];
    static const char *const names[] = {"existing", "renamed", "linked",     "new",
                                        "full.tmp", "full.so", "from-thread"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/dir", tmpdir);
    rmdir(path);
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_mode),
        cmocka_unit_test(test_tighten_before_enter),
        cmocka_unit_test(test_table_is_sound),
        cmocka_unit_test(test_profile_json),
        cmocka_unit_test(test_listen_stage),
        cmocka_unit_test(test_forbidden_calls_kill),
        cmocka_unit_test(test_full_stage_allows_what_is_needed),
        cmocka_unit_test(test_full_stage_forks_for_watch),
        cmocka_unit_test(test_ps_stage_forks_its_helper),
        cmocka_unit_test(test_no_fork_after_delivery),
        cmocka_unit_test(test_delivered_forbids_file_changes),
        cmocka_unit_test(test_report_keeps_delivery_cuts),
        cmocka_unit_test(test_delivered_keeps_reading),
        cmocka_unit_test(test_report_allows_reporting),
        cmocka_unit_test(test_report_forbids_discovery),
        cmocka_unit_test(test_tighten_reaches_running_threads),
        cmocka_unit_test(test_log_and_off_modes_do_not_kill),
        cmocka_unit_test(test_drop_caps),
        cmocka_unit_test(test_drop_caps_twice),
        cmocka_unit_test(test_attach_and_ps_start_no_process),
        cmocka_unit_test(test_attach_stage_delivers),
        cmocka_unit_test(test_ps_forbids_file_changes),
        cmocka_unit_test(test_ps_stage),
        cmocka_unit_test(test_query_stage),
        cmocka_unit_test(test_child_stage_has_its_pid),
        cmocka_unit_test(test_builtin_equals_table),
        cmocka_unit_test(test_sentinels_patched),
        cmocka_unit_test(test_patch_rejects),
        cmocka_unit_test(test_foreign_arch_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
