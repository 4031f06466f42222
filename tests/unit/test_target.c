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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

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
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    assert_int_equal(target_check_alive(&t, &e), -ESRCH);
    target_close(&t);
    assert_int_equal(target_open(proc, p, &t, &e), -ESRCH);
    assert_int_equal(target_open(proc, 0, &t, &e), -EINVAL);
    close(proc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_detected),
        cmocka_unit_test(test_pid_reuse_detected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
