/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <setjmp.h>
#include <cmocka.h>

#include "target/procindex.h"

static void test_probe_parse(void **state)
{
    (void)state;
    struct procindex_probe p;
    static const char env[] = "PATH=/bin\0TMPDIR=/var/app\0";
    procindex_probe_parse(env, sizeof(env) - 1, &p);
    assert_int_equal(p.flags, 0);
    assert_string_equal(p.tmpdir, "/var/app/");

    /* No environment readable: /tmp/, as target_open decides. An empty one too. */
    procindex_probe_parse(NULL, 0, &p);
    assert_string_equal(p.tmpdir, "/tmp/");
    procindex_probe_parse("", 0, &p);
    assert_string_equal(p.tmpdir, "/tmp/");
    assert_int_equal(p.flags, 0);
}

static void test_probe_flags(void **state)
{
    (void)state;
    struct procindex_probe p;
    static const char off[] = "A=1\0DOTNET_EnableDiagnostics=0\0";
    procindex_probe_parse(off, sizeof(off) - 1, &p);
    assert_int_equal(p.flags, PROCINDEX_DISABLED);
    static const char ipc[] = "DOTNET_EnableDiagnostics_IPC=0\0";
    procindex_probe_parse(ipc, sizeof(ipc) - 1, &p);
    assert_int_equal(p.flags, PROCINDEX_DISABLED);
    /* The last assignment wins, as getenv() in the target sees it. */
    static const char on[] = "COMPlus_EnableDiagnostics=0\0COMPlus_EnableDiagnostics=1\0";
    procindex_probe_parse(on, sizeof(on) - 1, &p);
    assert_int_equal(p.flags, 0);
    static const char bad[] = "TMPDIR=/a/../etc\0";
    procindex_probe_parse(bad, sizeof(bad) - 1, &p);
    assert_int_equal(p.flags, PROCINDEX_REFUSED);
    assert_string_equal(p.tmpdir, "");
    /* Larger than target_open reads: refused as it is there. */
    char *big = calloc(1, PROC_ENVIRON_MAX + 1);
    assert_non_null(big);
    procindex_probe_parse(big, PROC_ENVIRON_MAX + 1, &p);
    assert_int_equal(p.flags, PROCINDEX_REFUSED);
    free(big);
}

static void test_entries_fp(void **state)
{
    (void)state;
    struct procindex_entry v[] = {
        {.nspid = 9, .key = 5, .ino = 100},
        {.nspid = 1, .key = 7, .ino = 300},
        {.nspid = 9, .key = 3, .ino = 200},
    };
    procindex_sort_entries(v, 3);
    assert_int_equal(v[0].nspid, 1);
    assert_int_equal(v[1].key, 3);
    assert_int_equal(procindex_entries_fp(v, 3, 2), 0);
    assert_int_equal(procindex_entries_fp(NULL, 0, 1), 0);
    uint64_t a = procindex_entries_fp(v, 3, 9), b = procindex_entries_fp(v, 3, 1);
    assert_true(a != 0 && b != 0 && a != b);
    /* A new inode under the same name is a new socket: another fingerprint, for it alone. */
    v[2].ino = 101;
    assert_true(procindex_entries_fp(v, 3, 9) != a);
    assert_true(procindex_entries_fp(v, 3, 1) == b);
    /* One entry fewer: another fingerprint too. */
    assert_true(procindex_entries_fp(v, 2, 9) != procindex_entries_fp(v, 3, 9));
}

static void test_loadavg(void **state)
{
    (void)state;
    pid_t last = 0;
    static const char ok[] = "0.00 0.01 0.05 1/123 4567\n";
    assert_int_equal(procindex_parse_loadavg(ok, strlen(ok), &last), 0);
    assert_int_equal(last, 4567);
    assert_int_equal(procindex_parse_loadavg(ok, strlen(ok) - 1, &last), 0); /* no newline */
    static const char *const bad[] = {"",
                                      "0.00 0.01 0.05 1/123\n",
                                      "0.00 0.01 0.05 1/123 4567 8\n",
                                      "0.00 0.01 0.05 1/123 \n",
                                      "0.00 0.01 0.05 1/123 45x7\n",
                                      "0.00 0.01 0.05 1/123 99999999999\n",
                                      "0.00 0.01\n0.05 1/123 4567\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(procindex_parse_loadavg(bad[i], strlen(bad[i]), &last), -EPROTO);
    static const char nul[] = "0.00 0.01 0.05 1/1\0 4567";
    assert_int_equal(procindex_parse_loadavg(nul, sizeof(nul) - 1, &last), -EPROTO);
}

/* A directory that did not answer is left alone 5 s, then 10, 20... up to the cap, and never
 * for less than the first step. */
static void test_stall_backoff(void **state)
{
    (void)state;
    assert_int_equal(procindex_stall_backoff_ms(0), PROCINDEX_STALL_BACKOFF_MIN_MS);
    assert_int_equal(procindex_stall_backoff_ms(1), PROCINDEX_STALL_BACKOFF_MIN_MS);
    assert_int_equal(procindex_stall_backoff_ms(2), 2 * PROCINDEX_STALL_BACKOFF_MIN_MS);
    assert_int_equal(procindex_stall_backoff_ms(3), 4 * PROCINDEX_STALL_BACKOFF_MIN_MS);
    int64_t last = 0;
    for (unsigned i = 1; i < 40; i++) {
        int64_t ms = procindex_stall_backoff_ms(i);
        assert_true(ms >= last && ms <= PROCINDEX_STALL_BACKOFF_MAX_MS);
        last = ms;
    }
    assert_int_equal(last, PROCINDEX_STALL_BACKOFF_MAX_MS);
    assert_int_equal(procindex_stall_backoff_ms(UINT32_MAX), PROCINDEX_STALL_BACKOFF_MAX_MS);
}

/* A child running `sleep` with TMPDIR=dir in its own environment. */
static pid_t spawn_sleeper(const char *dir, const char *extra)
{
    pid_t pid = fork();
    if (pid == 0) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "TMPDIR=%s", dir);
        char *envp[] = {tmp, (char *)extra, NULL};
        char *argv[] = {"sleep", "30", NULL};
        execve("/bin/sleep", argv, envp);
        _exit(127);
    }
    return pid;
}

static const struct procindex_proc *find_pid(const struct procindex *x, pid_t pid)
{
    for (size_t i = 0; i < procindex_count(x); i++)
        if (procindex_at(x, i)->pid == pid)
            return procindex_at(x, i);
    return NULL;
}

static int bind_socket(const char *dir, pid_t pid, unsigned key)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dotnet-diagnostic-%d-%u-socket", dir, (int)pid,
             key);
    unlink(sa.sun_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Ends sleeper `pid` and removes the socket bound for it (bind_socket: fd, dir, key). */
static void end_sleeper(pid_t pid, int fd, const char *dir, unsigned key)
{
    char path[512];
    close(fd);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%d-%u-socket", dir, (int)pid, key);
    unlink(path);
}

/* Waits until the child runs sleep (its environ is the new one) or gives up. */
static void wait_exec(pid_t pid)
{
    char path[64], buf[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    for (int i = 0; i < 200; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0 && strncmp(buf, "sleep", 5) == 0)
            return;
        usleep(10000);
    }
}

/* An index of our /proc (its fd in *proc), scanned once at `now`. */
static struct procindex *index_scanned(int *proc, bool stat, int64_t now)
{
    *proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(*proc >= 0);
    struct procindex *x = procindex_new(*proc, stat);
    assert_non_null(x);
    assert_int_equal(procindex_scan(x, now, NULL), 0);
    return x;
}

static void test_scan_real_proc(void **state)
{
    (void)state;
    char dir[] = "/tmp/procindex-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t a = spawn_sleeper(dir, "X=1");
    pid_t b = spawn_sleeper(dir, "DOTNET_EnableDiagnostics=0");
    pid_t c = spawn_sleeper("/tmp/../etc", "X=1");
    assert_true(a > 0 && b > 0 && c > 0);
    wait_exec(a);
    wait_exec(b);
    wait_exec(c);
    int s1 = bind_socket(dir, a, 1234);

    int proc;
    struct procindex *x = index_scanned(&proc, true, 1000);
    assert_null(find_pid(x, getpid())); /* never ourselves */
    const struct procindex_proc *pa = find_pid(x, a), *pb = find_pid(x, b), *pc = find_pid(x, c);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_non_null(pc);
    assert_int_equal(pa->flags, PROCINDEX_SOCKET | PROCINDEX_CHANGED);
    assert_true(pa->stat.starttime > 0);
    assert_string_equal(pa->stat.comm, "sleep");
    assert_int_equal(pb->flags, PROCINDEX_DISABLED | PROCINDEX_CHANGED);
    assert_int_equal(pc->flags, PROCINDEX_REFUSED | PROCINDEX_CHANGED);

    /* Nothing new: nothing flagged as changed. */
    assert_int_equal(procindex_scan(x, 1250, NULL), 0);
    assert_int_equal(find_pid(x, a)->flags, PROCINDEX_SOCKET);
    assert_int_equal(find_pid(x, b)->flags, PROCINDEX_DISABLED);

    /* The socket re-created under the same name (a new inode), and one for b: both changed. */
    close(s1);
    s1 = bind_socket(dir, a, 1234);
    int s2 = bind_socket(dir, b, 99);
    assert_int_equal(procindex_scan(x, 1500, NULL), 0);
    assert_int_equal(find_pid(x, a)->flags, PROCINDEX_SOCKET | PROCINDEX_CHANGED);
    assert_int_equal(find_pid(x, b)->flags,
                     PROCINDEX_SOCKET | PROCINDEX_DISABLED | PROCINDEX_CHANGED);
    assert_true(procindex_groups(x) >= 1);

    /* A process gone is gone from the index. */
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    assert_int_equal(procindex_scan(x, 1750, NULL), 0);
    assert_null(find_pid(x, c));

    procindex_free(x);
    close(proc);
    end_sleeper(a, s1, dir, 1234);
    end_sleeper(b, s2, dir, 99);
    rmdir(dir);
}

static void *thread_main(void *arg)
{
    return arg;
}

/* A pid taken by a thread is no new process; one taken by a child is. Other processes on the
 * machine may take pids meanwhile (a true answer then is right too): a thread's pid must give
 * false at least once in a few tries, a child's must always give true. */
static void test_new_process_not_threads(void **state)
{
    (void)state;
    int proc;
    struct procindex *x = index_scanned(&proc, true, 1000);
    int quiet = 0;
    for (int i = 0; i < 20 && !quiet; i++) {
        assert_int_equal(procindex_scan(x, 1000 + i, NULL), 0);
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, thread_main, NULL), 0);
        pthread_join(th, NULL);
        quiet += !procindex_new_process(x);
    }
    assert_true(quiet > 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(procindex_scan(x, 2000 + i, NULL), 0);
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
            pause();
            _exit(0);
        }
        assert_true(procindex_new_process(x));
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
    }
    procindex_free(x);
    close(proc);
}

/* Enough new processes for the probe to run on two threads: every one is found once, in pid
 * order, in the group of its own TMPDIR, with its own socket and nobody else's. */
static void test_scan_many_processes(void **state)
{
    (void)state;
    enum { N = 300 };
    char d1[] = "/tmp/procindex-many1-XXXXXX", d2[] = "/tmp/procindex-many2-XXXXXX";
    assert_non_null(mkdtemp(d1));
    assert_non_null(mkdtemp(d2));
    pid_t kids[N];
    int socks[N];
    for (size_t i = 0; i < N; i++) {
        kids[i] = spawn_sleeper(i % 2 ? d2 : d1, "X=1");
        assert_true(kids[i] > 0);
        socks[i] = -1;
    }
    for (size_t i = 0; i < N; i++)
        wait_exec(kids[i]);
    for (size_t i = 0; i < N; i += 7)
        socks[i] = bind_socket(i % 2 ? d2 : d1, kids[i], 5);

    int proc;
    struct procindex *x = index_scanned(&proc, false, 0);
    assert_true(procindex_count(x) > N);
    for (size_t i = 1; i < procindex_count(x); i++)
        assert_true(procindex_at(x, i - 1)->pid < procindex_at(x, i)->pid);
    for (size_t i = 0; i < N; i++) {
        const struct procindex_proc *p = find_pid(x, kids[i]);
        assert_non_null(p);
        assert_int_equal(p->flags, (socks[i] >= 0 ? PROCINDEX_SOCKET : 0u) | PROCINDEX_CHANGED);
    }
    procindex_free(x);
    close(proc);
    for (size_t i = 0; i < N; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
        if (socks[i] >= 0) {
            char path[512];
            snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%d-5-socket", i % 2 ? d2 : d1,
                     (int)kids[i]);
            unlink(path);
            close(socks[i]);
        }
    }
    rmdir(d1);
    rmdir(d2);
}

/* ps lets go of each directory once listed: the fds it closed are not closed again later,
 * when their numbers may belong to someone else (an attach's pinned target, a pipe). */
static void test_released_fds_not_closed_twice(void **state)
{
    (void)state;
    char dir[] = "/tmp/procindex-fds-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t a = spawn_sleeper(dir, "X=1");
    assert_true(a > 0);
    wait_exec(a);
    int proc;
    struct procindex *x = index_scanned(&proc, false, 0);
    assert_true(procindex_groups(x) >= 1);
    /* The lowest free numbers: those the index held and released. */
    int mine[4];
    for (size_t i = 0; i < 4; i++)
        assert_true((mine[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
    procindex_free(x);
    for (size_t i = 0; i < 4; i++) {
        assert_true(fcntl(mine[i], F_GETFD) >= 0);
        close(mine[i]);
    }
    close(proc);
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    rmdir(dir);
}

/* The scenario of test_busy_throttle_not_carried, in a child of its own (a private mount
 * namespace): 0, or the number of the step that went wrong. */
static int busy_then_mounted_over(void)
{
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return 10;
    char dir[] = "/tmp/procindex-busy-XXXXXX", path[512];
    if (!mkdtemp(dir))
        return 11;
    /* More names than PROCINDEX_BUSY_ENTRIES: that directory is listed 2 s apart at most. */
    for (int i = 0; i <= PROCINDEX_BUSY_ENTRIES; i++) {
        snprintf(path, sizeof(path), "%s/f%d", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return 12;
        close(fd);
    }
    int rc = 0, sock = -1, proc;
    pid_t a = spawn_sleeper(dir, "X=1");
    if (a <= 0)
        return 13;
    wait_exec(a);
    struct procindex *x = index_scanned(&proc, true, 1000);
    /* A container's tmpfs mounted over it: the index lets go of the busy directory and opens
     * the new one (listed at once: empty), then a socket comes there. */
    if (mount("tmpfs", dir, "tmpfs", 0, "mode=1777") < 0)
        rc = 14;
    else if (procindex_scan(x, 1250, NULL) < 0 || !find_pid(x, a) ||
             (find_pid(x, a)->flags & PROCINDEX_SOCKET))
        rc = 15;
    else if ((sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        rc = 16;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dotnet-diagnostic-%d-7-socket", dir, (int)a);
    if (!rc && bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        rc = 17;
    /* Within the busy one's 2 s: the new directory is listed all the same. */
    if (!rc && (procindex_scan(x, 1500, NULL) < 0 || !find_pid(x, a) ||
                !(find_pid(x, a)->flags & PROCINDEX_SOCKET)))
        rc = 18;
    procindex_free(x);
    close(proc);
    if (sock >= 0)
        close(sock);
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    umount2(dir, MNT_DETACH);
    for (int i = 0; i <= PROCINDEX_BUSY_ENTRIES; i++) {
        snprintf(path, sizeof(path), "%s/f%d", dir, i);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}

/* A process first seen with a TMPDIR that holds many names (a container's first process sees
 * the node's /tmp until its own tmpfs is mounted there) gets no 2 s throttle on the directory
 * its TMPDIR leads to afterwards: its runtime's socket is found at the next look. */
static void test_busy_throttle_not_carried(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(busy_then_mounted_over());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Reads the index's copy of the directories' queue and throws it away (what a queue that lost
 * its events would leave). */
static void discard_events(int fd)
{
    _Alignas(8) char buf[4096];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* With events, a scan looks at the directories a socket name's event named, not at the others
 * (a flood in one directory costs one look), and every directory is looked at again within
 * PROCINDEX_GROUPS_FULL_MS all the same. */
static void test_events_name_directories(void **state)
{
    (void)state;
    char da[] = "/tmp/procindex-eva-XXXXXX", db[] = "/tmp/procindex-evb-XXXXXX";
    assert_non_null(mkdtemp(da));
    assert_non_null(mkdtemp(db));
    pid_t a = spawn_sleeper(da, "X=1"), b = spawn_sleeper(db, "X=1");
    assert_true(a > 0 && b > 0);
    wait_exec(a);
    wait_exec(b);
    int proc;
    struct procindex *x = index_scanned(&proc, true, 1000); /* held and watched (stat on) */
    int evfd = procindex_events_fd(x);
    assert_true(evfd >= 0);
    discard_events(evfd);
    /* b's socket comes with its event lost; then a's, whose event is read. */
    int sb = bind_socket(db, b, 5);
    discard_events(evfd);
    int sa = bind_socket(da, a, 5);
    struct direvents ev = {0};
    for (int i = 0; i < 100 && !procindex_events_read(x, &ev); i++)
        usleep(10000);
    assert_int_equal(ev.sockets, 1);
    /* Past the young processes' look (PROCINDEX_GROUP_LOOK_MS), within the full pass's time. */
    int64_t t = 1000 + PROCINDEX_GROUP_LOOK_MS + 100;
    assert_true(t < 1000 + PROCINDEX_GROUPS_FULL_MS);
    assert_int_equal(procindex_scan(x, t, NULL), 0);
    assert_true(find_pid(x, a)->flags & PROCINDEX_SOCKET);
    assert_false(find_pid(x, b)->flags & PROCINDEX_SOCKET); /* not looked at */
    assert_int_equal(procindex_scan(x, 1000 + PROCINDEX_GROUPS_FULL_MS + 1, NULL), 0);
    assert_true(find_pid(x, b)->flags & PROCINDEX_SOCKET); /* the full pass */
    procindex_free(x);
    close(proc);
    end_sleeper(a, sa, da, 5);
    end_sleeper(b, sb, db, 5);
    rmdir(da);
    rmdir(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_parse),
        cmocka_unit_test(test_probe_flags),
        cmocka_unit_test(test_entries_fp),
        cmocka_unit_test(test_loadavg),
        cmocka_unit_test(test_stall_backoff),
        cmocka_unit_test(test_scan_real_proc),
        cmocka_unit_test(test_new_process_not_threads),
        cmocka_unit_test(test_released_fds_not_closed_twice),
        cmocka_unit_test(test_scan_many_processes),
        cmocka_unit_test(test_busy_throttle_not_carried),
        cmocka_unit_test(test_events_name_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
