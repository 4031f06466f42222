/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Acting as the target's user: which capabilities survive (pure), what creds_check() refuses,
 * what creds_become() really switches (as root, in a child so the test process keeps its own
 * credentials), and that a creds_restore() the kernel refuses ends the process.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/creds.h"
#include "root.h"

#define C(c) CREDS_CAP(c)

static uint64_t effective_now(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2] = {{0}};
    if (syscall(SYS_capget, &hdr, d) < 0)
        return 0;
    return (uint64_t)d[1].effective << 32 | d[0].effective;
}

/* Empties this thread's capability sets (euid stays): "not privileged" for creds. */
static int drop_all_caps(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2] = {{0}};
    return (int)syscall(SYS_capset, &hdr, d);
}

static void test_effective_for(void **state)
{
    (void)state;
    uint64_t root = C(CAP_SETUID) | C(CAP_SETGID) | C(CAP_SYS_PTRACE) | C(CAP_DAC_OVERRIDE) |
                    C(CAP_DAC_READ_SEARCH) | C(CAP_CHOWN) | C(CAP_FOWNER);
    struct creds_target t = {.same_userns = true};

    /* A target without capabilities: every filesystem one goes, the others stay. */
    assert_true(creds_effective_for(root, &t) ==
                (C(CAP_SETUID) | C(CAP_SETGID) | C(CAP_SYS_PTRACE)));
    /* Exactly the target's own: DAC_OVERRIDE kept, FOWNER and the rest dropped. */
    t.cap_eff = C(CAP_DAC_OVERRIDE) | C(CAP_NET_BIND_SERVICE);
    assert_true(creds_effective_for(root, &t) ==
                (C(CAP_SETUID) | C(CAP_SETGID) | C(CAP_SYS_PTRACE) | C(CAP_DAC_OVERRIDE)));
    /* Never more than ours, whatever the target holds. */
    t.cap_eff = ~0ULL;
    assert_true(creds_effective_for(C(CAP_DAC_READ_SEARCH), &t) == C(CAP_DAC_READ_SEARCH));
    assert_true(creds_effective_for(root, &t) == root);
    /* Capabilities of another user namespace are not ours to use. */
    t.same_userns = false;
    assert_true(creds_effective_for(root, &t) ==
                (C(CAP_SETUID) | C(CAP_SETGID) | C(CAP_SYS_PTRACE)));
    /* MAC_OVERRIDE sits in the upper word. */
    t.same_userns = true;
    t.cap_eff = 0;
    assert_true(creds_effective_for(C(CAP_MAC_OVERRIDE) | C(CAP_SYS_ADMIN), &t) ==
                C(CAP_SYS_ADMIN));
}

static void self_target(struct creds_target *ret)
{
    struct proc_status st = {0};
    struct cla_error e = {0};
    char buf[16384];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    assert_true(n > 0);
    assert_int_equal(proc_parse_status(buf, (size_t)n, &st, &e), 0);
    int procfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(procfd >= 0);
    creds_target_of(procfd, &st, ret);
    close(procfd);
}

static void test_target_of_self(void **state)
{
    (void)state;
    struct creds_target t;
    self_target(&t);
    assert_int_equal(t.uid, geteuid());
    assert_int_equal(t.gid, getegid());
    assert_true(t.same_userns);
    assert_true(t.cap_eff == effective_now());
}

/* A child in a user namespace of its own: its capabilities are not counted as ours. */
static void test_target_of_other_userns(void **state)
{
    (void)state;
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    if (p == 0) {
        char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
        (void)!write(ready[1], &c, 1);
        (void)!read(go[0], &c, 1);
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    if (c == 'y') {
        char path[32];
        snprintf(path, sizeof(path), "/proc/%d", (int)p);
        int procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(procfd >= 0);
        struct proc_status st = {.have_cap_eff = true, .cap_eff = ~0ULL};
        struct creds_target t;
        creds_target_of(procfd, &st, &t);
        close(procfd);
        assert_false(t.same_userns);
    }
    (void)!write(go[1], "x", 1);
    waitpid(p, NULL, 0);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    if (c != 'y')
        skip(); /* user namespaces disabled here */
}

/* Runs fn in a child; returns its exit status (0 = every check held). */
static int in_child(int (*fn)(void))
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0)
        _exit(fn());
    int status = 0;
    assert_int_equal(waitpid(p, &status, 0), p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Unprivileged (every capability dropped): only our own uid, with one of our own gids. */
static int check_unprivileged(void)
{
    if (drop_all_caps() < 0)
        return 10;
    struct creds_target t = {.uid = geteuid(), .gid = getegid()};
    struct cla_error e = {0};
    if (creds_check(&t, &e) != 0)
        return 11;
    t.uid = geteuid() + 1;
    if (creds_check(&t, &e) != -EPERM || !strstr(e.msg, "uid"))
        return 12;
    /* The gid counts: the kernel would refuse setfsgid() to it. */
    t.uid = geteuid();
    t.gid = getegid() + 1;
    e = (struct cla_error){0};
    if (creds_check(&t, &e) != -EPERM || !strstr(e.msg, "gid") || !strstr(e.hint, "runAsGroup"))
        return 13;
    /* Acting as ourselves changes nothing and restores cleanly. */
    struct creds_saved s = {0};
    t.gid = getegid();
    if (creds_become(&t, &s, &e) != 0)
        return 14;
    if (setfsuid((uid_t)-1) != (int)geteuid() || effective_now() != 0)
        return 15;
    creds_restore(&s);
    return 0;
}

static void test_check_unprivileged(void **state)
{
    (void)state;
    assert_int_equal(in_child(check_unprivileged), 0);
}

/* The gid rule checked against the kernel itself: run as uid 1000 with real gid 1000 and
 * effective gid 2000 and no capability left (setresuid() from root clears them), creds_check()
 * accepts exactly the gids setfsgid() then takes (the real and the effective one) and refuses
 * any other, which setfsgid() would leave unchanged while the uid switch went through. */
static int check_gid_against_kernel(void)
{
    if (setgroups(0, NULL) < 0 || setresgid(1000, 2000, 2000) < 0 ||
        setresuid(1000, 1000, 1000) < 0)
        return 30;
    if (effective_now() != 0)
        return 31;
    static const struct {
        gid_t gid;
        bool ok;
    } cases[] = {{1000, true}, {2000, true}, {3000, false}, {0, false}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct creds_target t = {.uid = 1000, .gid = cases[i].gid};
        struct cla_error e = {0};
        int r = creds_check(&t, &e);
        if (r != (cases[i].ok ? 0 : -EPERM))
            return 32 + (int)i;
        if (!cases[i].ok && (!strstr(e.msg, "gid") || !strstr(e.hint, "runAsGroup")))
            return 40 + (int)i;
        /* What the kernel does with that gid: taken, or the old fsgid stays. */
        gid_t before = (gid_t)setfsgid((gid_t)-1);
        setfsgid(cases[i].gid);
        bool taken = (gid_t)setfsgid((gid_t)-1) == cases[i].gid;
        setfsgid(before);
        if (taken != cases[i].ok)
            return 50 + (int)i;
        /* An accepted target is then really acted as, and restored. */
        if (cases[i].ok) {
            struct creds_saved sv = {0};
            if (creds_become(&t, &sv, &e) != 0 || setfsgid((gid_t)-1) != (int)cases[i].gid)
                return 60 + (int)i;
            creds_restore(&sv);
            if (setfsgid((gid_t)-1) != (int)before)
                return 70 + (int)i;
        }
    }
    return 0;
}

static void test_check_gid_against_kernel(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setresuid() and setresgid() to other ids");
    assert_int_equal(in_child(check_gid_against_kernel), 0);
}

/* The detection over the ids alone: every uid ours and a gid not. */
static void test_gid_mismatch_pure(void **state)
{
    (void)state;
    struct proc_status st = {.uid = {1654, 1654, 1654, 1654}, .gid = {0, 0, 0, 0}};
    gid_t g = 77;
    assert_true(creds_gid_mismatch(&st, 1654, 1654, &g));
    assert_int_equal(g, 0);
    /* All ids match: not a mismatch, whatever keeps us out. */
    assert_false(creds_gid_mismatch(&st, 1654, 0, &g));
    /* Another uid (any of the four): the uid is the problem, not the gid. */
    for (int i = 0; i < 4; i++) {
        struct proc_status o = st;
        o.uid[i] = 1000;
        assert_false(creds_gid_mismatch(&o, 1654, 1654, &g));
    }
    /* Only the saved gid differs: still a mismatch; the effective gid is the one named. */
    struct proc_status saved = {.uid = {5, 5, 5, 5}, .gid = {9, 9, 3, 9}};
    assert_true(creds_gid_mismatch(&saved, 5, 9, &g));
    assert_int_equal(g, 9);
}

/* Against the kernel: a process of uid 1000 gid 0, read by uid 1000 gid 1000 without
 * capabilities, keeps its environ closed, and the detection says why and what to set; read with
 * gid 0 it opens, and the detection stays silent. */
static int read_environ_as(gid_t gid, pid_t target, struct cla_error *e, bool *ret_said)
{
    if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(1000, 1000, 1000) < 0)
        return -1;
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)target);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    if (fd >= 0)
        close(fd);
    struct proc_status st;
    if (n <= 0 || proc_parse_status(buf, (size_t)n, &st, e) < 0)
        return -2;
    *ret_said = creds_explain_gid_mismatch(target, &st, e);
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)target);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    return err;
}

static pid_t gid_target;

static int read_as_other_gid(void)
{
    struct cla_error e = {0};
    bool said = false;
    int r = read_environ_as(1000, gid_target, &e, &said);
    if (r != EACCES)
        return 10;
    if (!said || !strstr(e.msg, "runs as uid 1000 gid 0; this clrattach runs as gid 1000") ||
        !strstr(e.hint, "set runAsGroup: 0 on the sidecar (or run the app with runAsGroup: 1000)"))
        return 11;
    return 0;
}

static int read_as_same_gid(void)
{
    struct cla_error e = {0};
    bool said = true;
    int r = read_environ_as(0, gid_target, &e, &said);
    return r != 0 ? 20 : said ? 21 : 0;
}

static void test_gid_mismatch_against_kernel(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setresuid() and setresgid() to other ids");
    gid_target = fork();
    assert_true(gid_target >= 0);
    if (gid_target == 0) {
        /* Gone with the test; exec so that it is dumpable again after its change of ids. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(1000, 1000, 1000) < 0)
            _exit(1);
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(1);
    }
    /* Its ids are in place once its status says so. */
    for (int i = 0; i < 200; i++) {
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)gid_target);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[n > 0 ? n : 0] = '\0';
        if (strstr(buf, "\nUid:\t1000\t1000\t1000\t1000\n") && strstr(buf, "Name:\tsleep\n"))
            break;
        usleep(5000);
    }
    int a = in_child(read_as_other_gid), b = in_child(read_as_same_gid);
    kill(gid_target, SIGKILL);
    waitpid(gid_target, NULL, 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 0);
}

/* As root: a uid-0 target without capabilities is served without ours, and gets them back. */
static int become_capless_root(void)
{
    uint64_t before = effective_now();
    if (!(before & C(CAP_DAC_OVERRIDE)))
        return 20;
    char dir[] = "/tmp/clrattach-creds.XXXXXX";
    if (!mkdtemp(dir) || chown(dir, 2000, 2000) < 0 || chmod(dir, 0755) < 0)
        return 21;
    struct creds_target t = {.uid = 0, .gid = 0, .same_userns = true};
    struct creds_saved s = {0};
    struct cla_error e = {0};
    int rc = 0;
    if (creds_become(&t, &s, &e) != 0)
        rc = 22;
    else if (effective_now() & (CREDS_FS_CAPS))
        rc = 23;
    else if (!(effective_now() & C(CAP_SETUID)))
        rc = 24;
    else {
        char f[64];
        snprintf(f, sizeof(f), "%s/x", dir);
        int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EACCES)
            rc = 25;
        if (fd >= 0)
            close(fd);
    }
    creds_restore(&s);
    if (!rc && effective_now() != before)
        rc = 26;
    rmdir(dir);
    return rc;
}

/* As root: a uid-1000 target in group 3000 gets fsuid 1000 and exactly its groups; restoring
 * leaves us with our ids and no supplementary group. */
static int become_with_groups(void)
{
    uint64_t before = effective_now();
    struct creds_target t = {.uid = 1000, .gid = 1000, .ngroups = 2, .same_userns = true};
    t.groups[0] = 3000;
    t.groups[1] = 3001;
    struct creds_saved s = {0};
    struct cla_error e = {0};
    if (creds_become(&t, &s, &e) != 0)
        return 30;
    gid_t g[8];
    int n = getgroups(8, g);
    if (n != 2 || g[0] != 3000 || g[1] != 3001)
        return 31;
    if (setfsuid((uid_t)-1) != 1000 || setfsgid((gid_t)-1) != 1000)
        return 32;
    if (effective_now() & CREDS_FS_CAPS)
        return 33;
    creds_restore(&s);
    if (setfsuid((uid_t)-1) != 0 || setfsgid((gid_t)-1) != 0 || getgroups(0, NULL) != 0)
        return 34;
    if (effective_now() != before)
        return 35;
    return 0;
}

static void test_become_root(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("setfsuid() and setgroups() to a target's ids");
    assert_int_equal(in_child(become_capless_root), 0);
    assert_int_equal(in_child(become_with_groups), 0);
}

/* The kernel refuses the restore (no CAP_SETUID, and a foreign fsuid to go back to): the
 * process must end with the internal-error code and say why on stderr, not go on. */
static void test_restore_refused_exits(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        close(pfd[0]);
        if (dup2(pfd[1], STDERR_FILENO) < 0 || drop_all_caps() < 0)
            _exit(40);
        struct creds_saved s = {.fsuid = geteuid() + 4242, .fsgid = getegid(), .switched = true};
        creds_restore(&s);
        _exit(41); /* not reached */
    }
    close(pfd[1]);
    char msg[512] = {0};
    size_t n = 0;
    ssize_t k;
    while (n < sizeof(msg) - 1 && (k = read(pfd[0], msg + n, sizeof(msg) - 1 - n)) > 0)
        n += (size_t)k;
    close(pfd[0]);
    int status = 0;
    assert_int_equal(waitpid(p, &status, 0), p);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), CREDS_EXIT_FATAL);
    assert_non_null(strstr(msg, "cannot restore"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective_for),
        cmocka_unit_test(test_target_of_self),
        cmocka_unit_test(test_target_of_other_userns),
        cmocka_unit_test(test_check_unprivileged),
        cmocka_unit_test(test_gid_mismatch_pure),
        cmocka_unit_test(test_gid_mismatch_against_kernel),
        cmocka_unit_test(test_check_gid_against_kernel),
        cmocka_unit_test(test_become_root),
        cmocka_unit_test(test_restore_refused_exits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
