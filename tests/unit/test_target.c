/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pinning a target across pid reuse. In a PID namespace of our own (as root) the next pid is
 * chosen through ns_last_pid, so a pinned process can really be replaced by another under the
 * same pid; target_check_alive() must notice, so that nothing is ever sent to the successor.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profset/elfinfo.h"
#include "root.h"
#include "target/target.h"

static pid_t spawn_sleeper(void)
{
    pid_t p = fork();
    if (p == 0) {
        pause();
        _exit(0);
    }
    return p;
}

/* Runs inside the new namespace as its pid 1; returns 0 when every check held. */
static int reuse_scenario(void)
{
    char dir[] = "/tmp/clrattach-proc.XXXXXX";
    if (!mkdtemp(dir) || mount("proc", dir, "proc", 0, NULL) < 0)
        return 10;
    int proc = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t victim = spawn_sleeper();
    struct target t;
    struct cla_error e = {0};
    int rc = 0;
    if (target_open(proc, victim, &t, &e) < 0) {
        rc = 11;
        goto out;
    }
    if (target_check_alive(&t, &e) != 0)
        rc = 12;
    /* The pidfd (opened in our namespace) and this procfs's dir name the same process. */
    if (!t.pidfd_tied)
        rc = rc ? rc : 16;
    /* The host's procfs, where the victim's number names another process (or none): the
     * pidfd must not be taken for that process's, or a poll would vouch for a stranger. */
    int host = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct target h;
    struct cla_error he = {0};
    if (host >= 0 && target_open(host, victim, &h, &he) == 0) {
        if (h.pidfd_tied)
            rc = rc ? rc : 17;
        target_close(&h);
    }
    if (host >= 0)
        close(host);
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    /* Make the next fork reuse the victim's pid. */
    int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
    char buf[16];
    int n = snprintf(buf, sizeof(buf), "%d", (int)victim - 1);
    if (fd < 0 || write(fd, buf, (size_t)n) != n)
        rc = rc ? rc : 13;
    if (fd >= 0)
        close(fd);
    /* A different start time needs at least one clock tick between the two processes. */
    usleep(20000);
    pid_t successor = spawn_sleeper();
    if (successor != victim)
        rc = rc ? rc : 14;
    else if (target_check_alive(&t, &e) != -ESRCH)
        rc = rc ? rc : 15;
    kill(successor, SIGKILL);
    waitpid(successor, NULL, 0);
    target_close(&t);
out:
    close(proc);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    return rc;
}

static void test_pid_reuse_detected(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("pid and mount namespaces of a child");
    assert_int_equal(geteuid(), 0); /* the suite runs as root; this test needs it */
    /* The namespaces are a child's: the test process itself stays where it was, so tools that
     * trace it at exit (LeakSanitizer under SAN=1) still see it. */
    pid_t helper = fork();
    if (helper == 0) {
        if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0 ||
            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            _exit(20);
        pid_t init = fork();
        if (init == 0)
            _exit(reuse_scenario());
        int st;
        if (init < 0 || waitpid(init, &st, 0) != init || !WIFEXITED(st))
            _exit(21);
        _exit(WEXITSTATUS(st));
    }
    int status;
    assert_int_equal(waitpid(helper, &status, 0), helper);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_exit_detected(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t p = spawn_sleeper();
    struct target t;
    struct cla_error e = {0};
    assert_int_equal(target_open(proc, p, &t, &e), 0);
    assert_int_equal(t.pid, p);
    assert_true(t.stat.starttime > 0);
    assert_int_equal(target_check_alive(&t, &e), 0);
    assert_true(t.pidfd_tied); /* our own procfs: the poll alone watches it */
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    assert_int_equal(target_check_alive(&t, &e), -ESRCH);
    target_close(&t);
    assert_int_equal(target_open(proc, p, &t, &e), -ESRCH);
    assert_int_equal(target_open(proc, 0, &t, &e), -EINVAL);
    close(proc);
}

/* The executable is read through the pinned process (the "maps+exe" RID fallback): exe is a
 * magic link that O_NOFOLLOW never opens, so this proves the path really reads the ELF file; and
 * a process that exits is watched to its end by target_settle(). */
static void test_exe_and_settle(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t p = spawn_sleeper();
    struct target t;
    struct cla_error e = {0};
    assert_int_equal(target_open(proc, p, &t, &e), 0);
    char *exe = NULL;
    size_t len = 0;
    if (target_read_exe(&t, ELF_READ_MAX, &exe, &len, &e) != 0)
        fail_msg("target_read_exe: %s", e.msg);
    struct elf_info ei;
    assert_int_equal(elfinfo_parse((const uint8_t *)exe, len, &ei, &e), 0);
    assert_int_not_equal(ei.arch, RID_ARCH_UNKNOWN);
    free(exe);
    assert_int_equal(target_read_exe(&t, 16, &exe, &len, &e), -E2BIG);

    int64_t after = -1;
    assert_int_equal(target_settle(&t, 0, &after), 0);
    assert_int_equal(target_settle(&t, 50, &after), 0);
    /* Killed 100 ms into a 5 s settle: seen gone well before its end. */
    pid_t killer = fork();
    if (killer == 0) {
        usleep(100000);
        kill(p, SIGKILL);
        _exit(0);
    }
    /* The pidfd is readable once the process exits, zombie or not. */
    assert_int_equal(target_settle(&t, 5000, &after), 1);
    assert_true(after >= 50 && after < 4000);
    waitpid(p, NULL, 0);
    waitpid(killer, NULL, 0);
    target_close(&t);
    close(proc);
}

/* Execs `sleep` with envp; returns once the exec happened (the CLOEXEC pipe closes then), so
 * that /proc/<pid>/environ is the new one. */
static pid_t spawn_with_env(char *const envp[])
{
    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    pid_t p = fork();
    if (p == 0) {
        execle("/bin/sleep", "sleep", "60", (char *)NULL, envp);
        _exit(127);
    }
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 0);
    close(fds[0]);
    return p;
}

static void test_tmpdir_refused(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    static const struct {
        const char *env, *msg;
    } cases[] = {
        {"TMPDIR=/tmp/a/../b", "the target's TMPDIR '/tmp/a/../b' has a '..' component"},
        {"TMPDIR=/tmp/\xff", "the target's TMPDIR '/tmp/\\xff' is not valid UTF-8 at byte 5"},
        {"TMPDIR=/tmp/\xe2\x80\xae", "the target's TMPDIR '/tmp/\\u{202e}' holds a bidi control "
                                     "U+202E at byte 5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *envp[] = {(char *)cases[i].env, NULL};
        pid_t p = spawn_with_env(envp);
        struct target t;
        struct cla_error e = {0};
        /* The target's data breaking a rule: a protocol error, never EINVAL (usage). */
        assert_int_equal(target_open(proc, p, &t, &e), -EPROTO);
        assert_int_equal(e.code, -EPROTO);
        char want[256];
        snprintf(want, sizeof(want), "pid %d (sleep): %s", (int)p, cases[i].msg);
        assert_string_equal(e.msg, want);
        assert_non_null(strstr(e.hint, "restart the app with a plain absolute TMPDIR"));
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
    }
    close(proc);
}

static void test_comm_rendered(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t p = fork();
    if (p == 0) {
        /* A raw C1 CSI and a bidi override as the process name. */
        prctl(PR_SET_NAME, "x\x9b\xe2\x80\xae");
        pause();
        _exit(0);
    }
    /* Wait until the child has renamed itself. */
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)p);
    for (int i = 0; i < 200 && comm[0] != 'x'; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof(comm), f))
                comm[0] = '\0';
            fclose(f);
        }
        if (comm[0] != 'x')
            usleep(10000);
    }
    struct target t;
    struct cla_error e = {0};
    assert_int_equal(target_open(proc, p, &t, &e), 0);
    assert_string_equal(t.stat.comm, "x\x9b\xe2\x80\xae"); /* raw, for --match-comm */
    assert_string_equal(t.comm, "x\\x9b\\u{202e}");        /* for people */
    target_close(&t);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    close(proc);
}

/* Writes `text` as the "maps" of a fake /proc/<pid> directory and asks target_maps_has(). */
static int maps_has(const char *text, size_t len, const char *name)
{
    char dir[] = "/tmp/clrattach-maps.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[64];
    snprintf(p, sizeof(p), "%s/maps", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    struct target t = {.pid = 1, .pidfd = -1, .rootfd = -1};
    t.procfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(t.procfd >= 0);
    int r = target_maps_has(&t, name);
    close(t.procfd);
    unlink(p);
    rmdir(dir);
    return r;
}

/* The mapped check reads maps in pieces, in whole lines: a line cut by the read buffer is
 * matched whole, never by its head alone; a last line without newline counts; a line longer
 * than any path is malformed. */
static void test_maps_has_streamed(void **state)
{
    (void)state;
    static const char line[] = "7f00-7f01 r--p 00000000 fe:00 12 /usr/lib/libfiller.so\n";
    static const char ours[] = "7f02-7f03 r-xp 00000000 fe:00 13 /tmp/libclrprobe-0123.so\n";
    size_t cap = 100000, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    /* Fillers up to just before 16 KiB, so that our line straddles the first read's end. */
    while (n + sizeof(line) - 1 < 16384 - 20) {
        memcpy(text + n, line, sizeof(line) - 1);
        n += sizeof(line) - 1;
    }
    size_t at = n;
    memcpy(text + n, ours, sizeof(ours) - 1);
    n += sizeof(ours) - 1;
    assert_true(at < 16384 && n > 16384);
    for (int i = 0; i < 300; i++) {
        memcpy(text + n, line, sizeof(line) - 1);
        n += sizeof(line) - 1;
    }
    assert_int_equal(maps_has(text, n, "libclrprobe-0123.so"), 1);
    assert_int_equal(maps_has(text, n, "libfiller.so"), 1);
    /* A name cut at the buffer's end must not match by its head: "libclrprobe-0" is not it. */
    assert_int_equal(maps_has(text, n, "libclrprobe-0"), 0);
    assert_int_equal(maps_has(text, n, "libabsent.so"), 0);
    /* The last line without its newline. */
    assert_int_equal(maps_has(ours, sizeof(ours) - 2, "libclrprobe-0123.so"), 1);
    assert_int_equal(maps_has("", 0, "libclrprobe-0123.so"), 0);
    /* A line of 20000 bytes: no path is that long. */
    memset(text, 'a', 20000);
    assert_int_equal(maps_has(text, 20000, "libclrprobe-0123.so"), -EPROTO);
    free(text);
}

/* The maps snapshot: read once and kept (a file that appears or changes afterwards is not
 * seen), not read again after a failure either, and read afresh only after target_maps_drop().
 * A directory stands in for /proc/<pid>: only its "maps" is read. */
static void test_maps_read_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/clrattach-maps.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/maps", dir);
    struct target t = {.pid = 1, .pidfd = -1, .rootfd = -1};
    t.procfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(t.procfd >= 0);
    static const char first[] = "7f00-7f01 r-xp 00000000 fe:00 12 /usr/lib/libfirst.so\n";
    static const char second[] = "7f02-7f03 r-xp 00000000 fe:00 13 /usr/lib/libsecond.so\n";

    size_t len = 99;
    assert_null(target_maps(&t, &len)); /* no maps yet: unreadable */
    assert_int_equal(len, 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(first, f);
    fclose(f);
    assert_null(target_maps(&t, &len)); /* the failure is the answer of this snapshot */

    target_maps_drop(&t);
    const char *m = target_maps(&t, &len);
    assert_non_null(m);
    assert_int_equal(len, strlen(first));
    assert_memory_equal(m, first, len);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(second, f);
    fclose(f);
    const char *again = target_maps(&t, &len);
    assert_ptr_equal(again, m); /* the same snapshot, not a second read */
    assert_memory_equal(again, first, len);

    target_maps_drop(&t);
    assert_null(t.maps.buf);
    m = target_maps(&t, &len);
    assert_non_null(m);
    assert_memory_equal(m, second, strlen(second));
    target_close(&t); /* frees the snapshot (valgrind would see a leak otherwise) */
    assert_null(t.maps.buf);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_detected),      cmocka_unit_test(test_exe_and_settle),
        cmocka_unit_test(test_tmpdir_refused),     cmocka_unit_test(test_comm_rendered),
        cmocka_unit_test(test_pid_reuse_detected), cmocka_unit_test(test_maps_has_streamed),
        cmocka_unit_test(test_maps_read_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
