/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table, one line per rule with the stages it lives in, and the container profile
 * (`clrattach seccomp-profile`) written from it as JSON. */
#include "sandbox/sandbox_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "base/util.h"

/* One line per rule reads best; clang-format would spread each macro over four lines. */
/* clang-format off */
/* Stage sets, named for how long a rule lives. */
#define ALL SANDBOX_IN_ALL
#define WATCHER SANDBOX_IN_FULL                               /* watch's own process */
#define FORKS (WATCHER | SANDBOX_IN_PS)                       /* watch and ps start helpers */
#define DELIVERY (SANDBOX_IN_FULL | SANDBOX_IN_ATTACH | SANDBOX_IN_LISTEN) /* until placed */
#define DISCOVERY (DELIVERY | SANDBOX_IN_PS)                  /* ... and ps, all along */
#define ATTACH (DELIVERY | SANDBOX_IN_DELIVERED)              /* until the runtime answered */
#define QUERY SANDBOX_IN_QUERY                                /* perfmap: ask, create nothing */
#define LOOKUP (ATTACH | SANDBOX_IN_PS | QUERY)               /* ... and ps, perfmap, all along */
#define AS_USER (DISCOVERY | QUERY)                           /* acting as any target's user */
#define AFTER_DELIVERY (SANDBOX_IN_DELIVERED | SANDBOX_IN_REPORT)
#define READ_ONLY (AFTER_DELIVERY | SANDBOX_IN_PS | QUERY)    /* nothing created */
#define NETWORK (SANDBOX_IN_ALL & ~SANDBOX_IN_PS)             /* HTTPS: ps never reports */
#define STARTUP SANDBOX_IN_STARTUP
#define LISTENER SANDBOX_IN_LISTEN                            /* --listen: its socket */

#define ALLOW(n, st, w) {.name = (n), .stages = (st), .why = (w)}
#define ALLOW_EQ(n, st, a, v, w)                                                                \
    {.name = (n), .stages = (st), .op = SANDBOX_ARG_EQ, .arg = (a), .datum = (v), .why = (w)}
#define ALLOW_MASKED(n, st, a, m, v, w)                                                         \
    {.name = (n), .stages = (st), .op = SANDBOX_ARG_MASKED_EQ, .arg = (a), .mask = (m),         \
     .datum = (v), .why = (w)}
#define ALLOW_DYN(n, st, a, d, w)                                                               \
    {.name = (n), .stages = (st), .op = SANDBOX_ARG_MASKED_EQ, .arg = (a), .mask = 0xffffffffu, \
     .dyn = (d), .why = (w)}
#define FAIL(n, st, err, w) {.name = (n), .stages = (st), .errno_ret = (err), .why = (w)}
#define FAIL_EQ(n, st, err, a, v, w)                                                            \
    {.name = (n), .stages = (st), .errno_ret = (err), .op = SANDBOX_ARG_EQ, .arg = (a),          \
     .datum = (v), .why = (w)}
/* clang-format on */

/* The kernel's __O_TMPFILE bit (asm-generic/fcntl.h, also x86). glibc's O_TMPFILE macro adds
 * O_DIRECTORY to it, and O_DIRECTORY alone must stay allowed, so we test the bare bit. */
#define SB_O_TMPFILE_BIT 020000000u
/* A thread is CLONE_THREAD without any new namespace. The kernel already refuses most of these
 * with CLONE_THREAD; the mask makes the filter say it too, independent of kernel version. */
#define SB_CLONE_NS                                                                                \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |     \
     CLONE_NEWCGROUP)
/* A fork: no thread, no shared memory or vfork wait, no other parent, not traced, no new
 * namespace; with CSIGNAL in the mask, the exit signal must be SIGCHLD. */
#define SB_CLONE_FORK_MASK                                                                         \
    (CLONE_THREAD | CLONE_VM | CLONE_VFORK | CLONE_PARENT | CLONE_PTRACE | CLONE_SIGHAND |         \
     SB_CLONE_NS | CSIGNAL)
/* setfsuid(-1) changes nothing and answers the current value: creds.c uses it to check. */
#define SB_ID_QUERY 0xffffffffu

/*
 * Everything clrattach may do, and until when. The sources of each entry: strace -f of the
 * attach path and of libcurl 7.88 + OpenSSL 3.0 doing HTTPS (tests under the KILL filter keep
 * it honest). Not here, so killed at any stage: execve/execveat, ptrace, mount, umount2, setns,
 * unshare, bpf, kexec_*, *_module, process_vm_*, keyctl, add_key, request_key, pivot_root,
 * chroot, perf_event_open, userfaultfd, personality, io_uring_*, kill, fork after delivery (and
 * with a namespace flag at any stage), and every legacy path call (open, rename, unlink...) that
 * bypasses the *at checks below.
 */
static const struct sandbox_rule rules[] = {
    /* Memory and threads: malloc, thread stacks, dlopen()ed NSS modules. */
    ALLOW("brk", ALL, "malloc"),
    ALLOW("mmap", ALL, "malloc, thread stacks, dlopen"),
    ALLOW("munmap", ALL, "free"),
    ALLOW("mremap", ALL, "realloc of large buffers"),
    ALLOW("mprotect", ALL, "thread stack guard pages, dlopen"),
    ALLOW("madvise", ALL, "glibc frees a finished thread's stack"),
    ALLOW("futex", ALL, "locks, pthread_join"),
    ALLOW("set_robust_list", ALL, "every new glibc thread"),
    ALLOW("rseq", ALL, "every new glibc thread (glibc >= 2.35)"),
    ALLOW_MASKED("clone", ALL, 0, CLONE_THREAD | SB_CLONE_NS, CLONE_THREAD,
                 "threads only: libcurl's threaded resolver"),
    /* `watch` runs each attach in a child process (fork), and after one it killed, a sweeper of
     * that run's temporaries (watch_pool.h; it needs nothing this stage lacks): a copy, never
     * memory shared without CLONE_THREAD, no new namespace, SIGCHLD at its end. glibc's fork() adds
     * CHILD_SETTID and CHILD_CLEARTID, outside the mask. `watch` and `ps` also fork the helper that
     * makes their calls below other processes' roots (lib/target/fsworker.c): a filesystem that
     * stops answering holds a helper in a wait no signal ends, never them. The watcher's and ps's
     * stages only: an attach's child drops it at delivery, `attach` never has it. */
    ALLOW_MASKED(
        "clone", FORKS, 0, SB_CLONE_FORK_MASK, SIGCHLD,
        "watch: a child per attach or sweep; watch, ps: the filesystem helper (glibc fork)"),
    /* musl's fork() is the fork syscall where it exists (x86_64): a clone(SIGCHLD) with no
     * argument to check. Absent on arm64, where musl calls clone, checked above. */
    ALLOW("fork", FORKS,
          "watch: a child per attach or sweep; watch, ps: the filesystem helper (musl fork)"),
    ALLOW("wait4", FORKS, "reaping an attach's child, a sweeper or a filesystem helper"),
    /* The ready file is opened without O_TRUNC and emptied only once fstat has shown a regular
     * file (opfile.c): truncating at open would act on whatever was planted there. */
    ALLOW("ftruncate", WATCHER | LISTENER, "watch: emptying the ready file, a regular file"),
    /* Only SIGKILL, and only through a pidfd: kill(2) stays off the list. */
    ALLOW_EQ("pidfd_send_signal", FORKS, 1, SIGKILL,
             "ending an attach's child, a sweeper or a filesystem helper past its deadline"),
    /* glibc >= 2.34 tries clone3 first. Its flags sit in a struct in memory, which a filter
     * cannot read, so it must not run; ENOSYS makes glibc fall back to clone, checked above. */
    FAIL("clone3", ALL, ENOSYS, "pthread_create falls back to clone"),
    ALLOW("exit", ALL, "thread exit"),
    ALLOW("exit_group", ALL, "process exit"),
    /* abort() and raise() signal their own thread; a foreign tgid would be another process. */
    ALLOW_DYN("tgkill", ALL, 0, SANDBOX_DYN_PID, "abort(), to ourselves only"),

    /* Identity and environment queries: no effect on anything. */
    ALLOW("getpid", ALL, "OpenSSL fork detection"),
    ALLOW("gettid", ALL, "glibc abort, pthread"),
    ALLOW("getuid", ALL, "creds"),
    ALLOW("geteuid", ALL, "creds"),
    ALLOW("getgid", ALL, "creds"),
    ALLOW("getegid", ALL, "creds"),
    ALLOW("uname", ALL, "curl version string, OpenSSL"),
    ALLOW("sysinfo", ALL, "glibc qsort sizes its buffer by physical memory (OpenSSL)"),
    ALLOW("sched_getaffinity", ALL, "glibc get_nprocs"),
    ALLOW("sched_yield", ALL, "lock back-off"),
    ALLOW("getrandom", ALL, "OpenSSL DRBG, glibc malloc"),
    ALLOW("clock_gettime", ALL, "vDSO fallback (clock source without vDSO support)"),
    ALLOW("clock_getres", ALL, "vDSO fallback"),
    ALLOW("gettimeofday", ALL, "vDSO fallback"),
    ALLOW("clock_nanosleep", ALL, "retry back-off"),
    ALLOW("nanosleep", ALL, "retry back-off"),

    /* Signals. */
    ALLOW("rt_sigaction", ALL, "curl ignores SIGPIPE"),
    ALLOW("rt_sigprocmask", ALL, "pthread_create, abort"),
    ALLOW("rt_sigreturn", ALL, "return from any signal handler"),
    ALLOW("sigaltstack", ALL, "sanitizers, stack overflow handlers"),
    ALLOW("restart_syscall", ALL, "a sleep interrupted by SIGSTOP/SIGCONT"),

    /* Reading files, /proc and the target root; writing stdout, stderr, the termination log. */
    ALLOW("openat", DELIVERY, "/proc, the target root, creating the profiler (O_CREAT)"),
    /* After delivery nothing is created: O_CREAT and O_TMPFILE (an unnamed file that linkat
     * could later name) are refused. The termination log must exist or be opened earlier. */
    ALLOW_MASKED("openat", READ_ONLY, 2, O_CREAT | SB_O_TMPFILE_BIT, 0,
                 "reading files; writing existing ones (termination log)"),
    /* musl (the static build) calls the legacy open(2) where glibc calls openat(2): the same
     * rules, its flags being argument 1. Absent on arm64, where the name is simply skipped. */
    ALLOW("open", DELIVERY, "musl's open() in the static build"),
    ALLOW_MASKED("open", READ_ONLY, 1, O_CREAT | SB_O_TMPFILE_BIT, 0,
                 "musl's open(): reading files, writing existing ones"),
    /* ps keeps it too: a refusal would send every listing through the walk below, and the
     * openat2 it could misuse is no worse than the setfsuid it must keep. */
    ALLOW("openat2", DISCOVERY, "RESOLVE_IN_ROOT lookups in the target root"),
    /* openat2 takes its flags in a struct (struct open_how) the filter cannot read, so it
     * cannot be limited to read-only opens. EPERM, not kill: rootfs.c treats EPERM as "openat2
     * denied by a seccomp profile" and walks the path with openat, which IS checked. */
    FAIL("openat2", AFTER_DELIVERY | QUERY, EPERM, "rootfs.c falls back to a checked openat walk"),
    ALLOW("read", ALL, "files, sockets"),
    ALLOW("pread64", ALL, "dynamic loader, hashing"),
    ALLOW("write", ALL, "profiler copy, stdout, termination log, sockets"),
    ALLOW("writev", ALL, "glibc's fatal error messages"),
    ALLOW("close", ALL, "fds"),
    ALLOW("lseek", ALL, "re-reading a file from offset 0"),
    ALLOW("fcntl", ALL, "curl sets O_NONBLOCK"),
    ALLOW("dup", ALL, "rootfs walk starts from a copy of the root fd"),
    ALLOW("newfstatat", ALL, "stat of /proc entries, sockets, the delivered file"),
    ALLOW("fstat", ALL, "fstat"),
    ALLOW("statx", ALL, "fstatat on newer glibc"),
    /* musl's stat() and lstat() (OpenSSL's file loader in the static build) use the legacy
     * calls: newfstatat's power, no more. Absent on arm64, where the names are skipped. */
    ALLOW("stat", ALL, "musl's stat() in the static build"),
    ALLOW("lstat", ALL, "musl's lstat() in the static build"),
    ALLOW("fsync", ALL, "the delivered file, the termination log"),
    ALLOW("getdents64", LOOKUP, "listing /proc and the target's TMPDIR"),
    ALLOW("inotify_init1", WATCHER, "watch: events on the socket directories held"),
    ALLOW("inotify_add_watch", WATCHER, "watch: a socket directory opened, by its fd's link"),
    ALLOW("inotify_rm_watch", WATCHER, "watch: a socket directory let go"),
    ALLOW("readlinkat", LOOKUP, "/proc/<pid>/exe, fd checks"),
    ALLOW("readlink", LOOKUP, "glibc readlink() on x86_64"),
    /* Without openat2, rootfs.c's link-following walk refuses a link by its filesystem: procfs
     * holds the magic links that RESOLVE_NO_MAGICLINKS would refuse. */
    ALLOW("fstatfs", LOOKUP, "rootfs walk: is a link a magic one of /proc?; placement: noexec?"),

    /* Placing the profiler: temporary name, owner and mode, then rename into place. */
    ALLOW("fchown", DELIVERY, "the delivered file belongs to the target's user"),
    /* fchmod and unlinkat last until the runtime answered: a profiler it refused is removed
     * (a directory made writable again first) before the reply stage, --keep aside. */
    ALLOW("fchmod", ATTACH, "the delivered file's mode; undo after a failed load"),
    ALLOW("renameat", DELIVERY, "temporary name to final name"),
    ALLOW("renameat2", DELIVERY, "RENAME_NOREPLACE"),
    ALLOW("linkat", DELIVERY, "publishing the profiler by its fd (/proc/self/fd/N), no replace"),
    ALLOW("unlinkat", ATTACH, "our temporary file on failure; what a failed load left"),
    ALLOW("mkdirat", DELIVERY, "a profiler directory's tree"),

    /* Acting as the target's user (creds.c). Once the file is placed, only two calls remain:
     * asking for the current id and switching back to ourselves. Switching to a third user is
     * what an exploit of a later parser would want, so it is gone. */
    ALLOW("setfsuid", AS_USER, "act as the target's user"),
    ALLOW("setfsgid", AS_USER, "act as the target's group"),
    ALLOW_MASKED("setfsuid", AFTER_DELIVERY, 0, 0xffffffffu, SB_ID_QUERY, "query"),
    ALLOW_MASKED("setfsgid", AFTER_DELIVERY, 0, 0xffffffffu, SB_ID_QUERY, "query"),
    ALLOW_DYN("setfsuid", AFTER_DELIVERY, 0, SANDBOX_DYN_EUID, "restore our own fsuid"),
    ALLOW_DYN("setfsgid", AFTER_DELIVERY, 0, SANDBOX_DYN_EGID, "restore our own fsgid"),
    ALLOW("setgroups", AS_USER, "supplementary groups = the target's own"),
    ALLOW_EQ("setgroups", AFTER_DELIVERY, 0, 0, "clearing them on restore"),
    ALLOW("capget", ALL, "creds, sandbox_drop_caps"),
    ALLOW("capset", ALL, "sandbox_drop_caps; creds: effective set within permitted"),
    ALLOW_EQ("prctl", ALL, 0, PR_SET_NO_NEW_PRIVS, "before each seccomp filter"),
    ALLOW_EQ("prctl", ALL, 0, PR_GET_NO_NEW_PRIVS, "sandbox_drop_caps"),
    ALLOW_EQ("prctl", ALL, 0, PR_CAPBSET_READ, "sandbox_drop_caps"),
    ALLOW_EQ("prctl", ALL, 0, PR_CAPBSET_DROP, "sandbox_drop_caps"),
    ALLOW_EQ("prctl", ALL, 0, PR_CAP_AMBIENT, "sandbox_drop_caps"),
    ALLOW_EQ("prctl", FORKS, 0, PR_SET_NAME, "the filesystem helper names itself (fsworker.c)"),
    /* A further filter can only take rights away, so installing one stays allowed. */
    ALLOW_EQ("seccomp", ALL, 0, SECCOMP_SET_MODE_FILTER, "sandbox_tighten"),
    ALLOW_EQ("seccomp", ALL, 0, SECCOMP_GET_ACTION_AVAIL, "libseccomp API level probe"),
    ALLOW("pidfd_open", LOOKUP, "pinning the target"),

    /* Sockets: AF_UNIX to the runtime, AF_INET/6 to the API server. */
    ALLOW_EQ("socket", LOOKUP, 0, AF_UNIX, "the diagnostic IPC socket"),
    /* After the reply no new AF_UNIX socket is needed, and connect()'s address is in memory
     * where the filter cannot see it, so denying the socket is the only way to stop us from
     * talking to other local daemons (a container runtime's socket, another app's IPC).
     * EPERM, not kill: glibc's getaddrinfo probes nscd over AF_UNIX and moves on when it
     * fails. socketpair() makes no connection and stays allowed for curl's wake-up pair. */
    FAIL_EQ("socket", SANDBOX_IN_REPORT, EPERM, 0, AF_UNIX, "glibc nscd probe then moves on"),
    ALLOW_EQ("socket", NETWORK, 0, AF_INET, "HTTPS to the API server, DNS"),
    ALLOW_EQ("socket", NETWORK, 0, AF_INET6, "HTTPS to the API server, DNS"),
    /* glibc's getaddrinfo(AI_ADDRCONFIG) asks netlink which address families are configured
     * and copes with a failure; netlink itself (routes, audit, uevents) is no business of
     * ours. */
    FAIL_EQ("socket", ALL, EAFNOSUPPORT, 0, AF_NETLINK, "getaddrinfo copes"),
    ALLOW_EQ("socketpair", ALL, 0, AF_UNIX, "curl's wake-up pair"),
    ALLOW("connect", ALL, "IPC socket, API server"),
    /* Only the listening commands bind a socket, and only a Unix one (socket() above allows
     * no other family outside HTTPS): the runtime connects to it (DOTNET_DiagnosticPorts). */
    ALLOW("bind", LISTENER, "--listen: the socket in the shared directory"),
    ALLOW("listen", LISTENER, "--listen"),
    ALLOW("accept4", LISTENER, "--listen: runtimes connecting, non-blocking"),
    ALLOW("umask", LISTENER, "--listen: the socket created with exactly --socket-mode"),
    ALLOW("fchownat", LISTENER, "--listen --socket-owner: chown through an O_PATH fd"),
    ALLOW("getsockopt", ALL, "curl: SO_ERROR after a non-blocking connect"),
    ALLOW("setsockopt", ALL, "curl: TCP_NODELAY, keepalive"),
    ALLOW("getsockname", ALL, "curl"),
    ALLOW("getpeername", ALL, "curl"),
    ALLOW("sendto", ALL, "IPC, TLS, DNS"),
    ALLOW("recvfrom", ALL, "IPC, TLS, DNS"),
    ALLOW("sendmsg", ALL, "IPC"),
    ALLOW("recvmsg", ALL, "IPC"),
    ALLOW("sendmmsg", ALL, "glibc's resolver sends A and AAAA queries at once"),
    ALLOW("shutdown", ALL, "closing a connection's write side"),
    ALLOW("poll", ALL, "IPC deadlines, curl"),
    ALLOW("ppoll", ALL, "poll on arm64"),
    ALLOW("pipe2", ALL, "curl's wake-up pipe"),
    ALLOW("eventfd2", ALL, "curl's wake-up eventfd"),
    /* Terminal queries only: stdio asks whether stdout is a tty (glibc TCGETS, musl
     * TIOCGWINSZ); FIONREAD sizes pending socket data. No ioctl that changes anything. */
    ALLOW_EQ("ioctl", ALL, 1, TCGETS, "isatty() in stdio"),
    ALLOW_EQ("ioctl", ALL, 1, TIOCGWINSZ, "isatty() in musl stdio"),
    ALLOW_EQ("ioctl", ALL, 1, FIONREAD, "bytes pending on a socket"),

    /* Between the container runtime loading the exported profile and main(): the runtime's
     * execve of our binary (runc and crun load the profile just before it) and the dynamic
     * loader's start-up. main() installs the real filter, where these are gone. */
    ALLOW("execve", STARTUP, "the container runtime starts clrattach"),
    ALLOW("arch_prctl", STARTUP, "glibc TLS set-up on x86_64"),
    ALLOW("set_tid_address", STARTUP, "libc start-up"),
    ALLOW("access", STARTUP, "ld.so checks /etc/ld.so.preload"),
    ALLOW("faccessat", STARTUP, "ld.so on arm64"),
    ALLOW("prlimit64", STARTUP, "glibc reads the stack limit"),
    /* runc (1.1.12+, and Debian's 1.1.5 with the CVE-2024-21626 fix) checks that
     * /proc/self/fd is procfs, after loading the profile and before its execve. */
    ALLOW("fstatfs", STARTUP, "runc's /proc/self/fd check before it execs us"),
    /* libseccomp probes for seccomp(2) with the always-invalid seccomp(SECCOMP_SET_MODE_STRICT,
     * 1, NULL) and takes anything but EINVAL for "no seccomp". clrattach no longer calls
     * libseccomp (its filters are compiled at build time); the row keeps the published profile
     * unchanged, and entering strict mode could only take rights away. */
    ALLOW_EQ("seccomp", STARTUP, 0, SECCOMP_SET_MODE_STRICT, "libseccomp's seccomp(2) probe"),
};

unsigned sandbox_stage_bit(enum sandbox_stage stage)
{
    switch (stage) {
    case SANDBOX_STAGE_FULL: return SANDBOX_IN_FULL;
    case SANDBOX_STAGE_ATTACH: return SANDBOX_IN_ATTACH;
    case SANDBOX_STAGE_DELIVERED: return SANDBOX_IN_DELIVERED;
    case SANDBOX_STAGE_REPORT: return SANDBOX_IN_REPORT;
    case SANDBOX_STAGE_PS: return SANDBOX_IN_PS;
    case SANDBOX_STAGE_QUERY: return SANDBOX_IN_QUERY;
    case SANDBOX_STAGE_LISTEN: return SANDBOX_IN_LISTEN;
    case SANDBOX_STAGE_COUNT: break;
    }
    return 0;
}

const char *sandbox_stage_name(enum sandbox_stage stage)
{
    switch (stage) {
    case SANDBOX_STAGE_FULL: return "full";
    case SANDBOX_STAGE_ATTACH: return "attach";
    case SANDBOX_STAGE_DELIVERED: return "delivered";
    case SANDBOX_STAGE_REPORT: return "report";
    case SANDBOX_STAGE_PS: return "ps";
    case SANDBOX_STAGE_QUERY: return "query";
    case SANDBOX_STAGE_LISTEN: return "listen";
    case SANDBOX_STAGE_COUNT: break;
    }
    return "?";
}

const struct sandbox_rule *sandbox_policy_rules(size_t *ret_count)
{
    *ret_count = ARRAY_SIZE(rules);
    return rules;
}

/* True when rule `i` is the first rule of its name among those matching `stages` and `allow`.
 * The table is small (about 120 rules), so a quadratic scan costs nothing. */
static bool first_of_name(size_t i, unsigned stages, bool allow_only)
{
    for (size_t j = 0; j < i; j++) {
        if (!(rules[j].stages & stages) || (allow_only && rules[j].errno_ret))
            continue;
        if (strcmp(rules[j].name, rules[i].name) == 0)
            return false;
    }
    return true;
}

size_t sandbox_allowed_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
        if ((rules[i].stages & SANDBOX_IN_FULL) && !rules[i].errno_ret &&
            first_of_name(i, SANDBOX_IN_FULL, true))
            n++;
    return n;
}

/* {"index":..,"value":..,"valueTwo":..,"op":..} as runc, crun and containerd read it. For
 * SCMP_CMP_MASKED_EQ, "value" is the mask and "valueTwo" the datum (libseccomp's order). */
static json_t *profile_arg(const struct sandbox_rule *r)
{
    bool masked = r->op == SANDBOX_ARG_MASKED_EQ;
    return json_pack("{s:I, s:I, s:I, s:s}", "index", (json_int_t)r->arg, "value",
                     (json_int_t)(masked ? r->mask : r->datum), "valueTwo",
                     (json_int_t)(masked ? r->datum : 0), "op",
                     masked ? "SCMP_CMP_MASKED_EQ" : "SCMP_CMP_EQ");
}

static json_t *profile_rule(const struct sandbox_rule *r)
{
    json_t *o = json_pack("{s:[s], s:s}", "names", r->name, "action",
                          r->errno_ret ? "SCMP_ACT_ERRNO" : "SCMP_ACT_ALLOW");
    if (!o)
        return NULL;
    if (r->errno_ret && json_object_set_new(o, "errnoRet", json_integer(r->errno_ret)) < 0)
        goto fail;
    /* A run-time datum (our pid, our uid) cannot be written into a file read by every node,
     * so such a rule is exported without its condition; the in-process filter keeps it. */
    if (r->op != SANDBOX_ARG_NONE && r->dyn == SANDBOX_DYN_NONE) {
        json_t *arg = profile_arg(r);
        if (!arg || json_object_set_new(o, "args", json_pack("[o]", arg)) < 0)
            goto fail;
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static bool in_list(const json_t *list, const char *name)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(json_string_value(json_array_get(list, i)), name) == 0)
            return true;
    return false;
}

/* The profile's architectures, as runc, crun and containerd read "architectures": the native
 * one and its 32-bit companions (the runtime's filter must name them to judge their syscalls;
 * a call of an architecture left out gets the filter's bad-arch answer). Chosen when clrattach
 * is built: an arm64 build exports the arm64 profile. */
static json_t *profile_architectures(void)
{
#if defined(__x86_64__)
    return json_pack("[s,s,s]", "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32");
#elif defined(__aarch64__)
    return json_pack("[s,s]", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM");
#else
    return json_array(); /* empty: the runtime uses its native architecture only */
#endif
}

/* Whether rule `i` goes into the profile. A runtime builds its filter with libseccomp, which
 * refuses two different actions on one syscall wherever their conditions collapse into one
 * (on SCMP_ARCH_X86, socket() rules become socketcall(SYS_SOCKET) rules whose arguments sit in
 * memory: ALLOW for AF_INET and ERRNO for AF_NETLINK are then one rule with two actions, runc's
 * "error adding seccomp rule for syscall socket: file exists"). So a syscall has one action in
 * the profile: ALLOW when any rule allows it (the allowed patterns only; every other call of it
 * falls to the default errno), otherwise the errno of its rules when they all agree, are
 * unconditional and differ from the default (runc drops a rule whose action is the default).
 * The in-process filter keeps every rule, errno answers included. */
static bool profile_keeps(size_t i, unsigned stages, int default_errno)
{
    const struct sandbox_rule *r = &rules[i];
    if (!(r->stages & stages))
        return false;
    if (!r->errno_ret)
        return true;
    if (r->errno_ret == default_errno || (r->op != SANDBOX_ARG_NONE && r->dyn == SANDBOX_DYN_NONE))
        return false;
    for (size_t j = 0; j < ARRAY_SIZE(rules); j++) {
        if (j == i || !(rules[j].stages & stages) || strcmp(rules[j].name, r->name) != 0)
            continue;
        if (!rules[j].errno_ret || rules[j].errno_ret != r->errno_ret || j < i)
            return false; /* an allow wins; disagreeing errnos: the default; one entry each */
    }
    return true;
}

int sandbox_profile_json(char **ret_json, struct cla_error *e)
{
    /* The listening commands' stage too: one profile serves the sidecar either way. */
    const unsigned stages = SANDBOX_IN_FULL | SANDBOX_IN_LISTEN | SANDBOX_IN_STARTUP;
    /* Default ERRNO(EPERM), where the in-process filter kills: this profile is the outer
     * layer, it also covers the dynamic loader and libc start-up, whose exact calls vary with
     * the node's image, and a failing call there is a clean error where a kill would be a
     * crash-looping pod. EPERM, not ENOSYS: the call exists and is not permitted; libc must not
     * take it for a missing syscall to emulate. Everything after main() is judged by the
     * stricter in-process filter; filters stack and the strictest answer wins. */
    const int default_errno = EPERM;
    json_t *root =
        json_pack("{s:s, s:i, s:o, s:[]}", "defaultAction", "SCMP_ACT_ERRNO", "defaultErrnoRet",
                  default_errno, "architectures", profile_architectures(), "syscalls");
    json_t *plain = json_array();
    if (!root || !plain)
        goto oom;
    json_t *syscalls = json_object_get(root, "syscalls");
    /* All unconditional allows in one entry, the way hand-written profiles read; every other
     * rule has its own entry, so each entry carries at most one argument check and the entries
     * of one syscall are alternatives (OR), as the table's rules are. */
    for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
        const struct sandbox_rule *r = &rules[i];
        if (!profile_keeps(i, stages, default_errno))
            continue;
        bool unconditional = r->op == SANDBOX_ARG_NONE || r->dyn != SANDBOX_DYN_NONE;
        if (unconditional && !r->errno_ret) {
            if (!in_list(plain, r->name) && json_array_append_new(plain, json_string(r->name)) < 0)
                goto oom;
            continue;
        }
        if (json_array_append_new(syscalls, profile_rule(r)) < 0)
            goto oom;
    }
    json_t *entry = json_pack("{s:o, s:s}", "names", plain, "action", "SCMP_ACT_ALLOW");
    plain = NULL;
    if (!entry || json_array_insert_new(syscalls, 0, entry) < 0)
        goto oom;
    char *s = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    if (!s)
        return err_set(e, -ENOMEM, "seccomp profile: out of memory");
    *ret_json = s;
    return 0;
oom:
    json_decref(plain);
    json_decref(root);
    return err_set(e, -ENOMEM, "seccomp profile: out of memory");
}
