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
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <sys/wait.h>

#include "base/util.h"
#include "flow/watch.h"

/* The loop over a /proc of our making: an empty directory holds no process, so what the loop
 * does is its own (scans, the ready file, the stop, the bound), not an attach's. */
struct fake_proc {
    char dir[64];
    char ready[96];
    int fd;
    volatile sig_atomic_t stop;
    int results;
};

static void on_result(const struct attach_result *r, bool retry, void *userdata)
{
    (void)r;
    (void)retry;
    ((struct fake_proc *)userdata)->results++;
}

static void fake_proc_open(struct fake_proc *f)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/clrattach-watch-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->ready, sizeof(f->ready), "%s/ready", f->dir);
    f->fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(f->fd >= 0);
}

static void fake_proc_close(struct fake_proc *f)
{
    char path[128];
    unlink(f->ready);
    snprintf(path, sizeof(path), "%s/%d/ns/mnt", f->dir, (int)getpid());
    unlink(path);
    snprintf(path, sizeof(path), "%s/%d/ns", f->dir, (int)getpid());
    rmdir(path);
    snprintf(path, sizeof(path), "%s/%d", f->dir, (int)getpid());
    rmdir(path);
    close(f->fd);
    assert_int_equal(rmdir(f->dir), 0);
}

static struct watch_opts opts_for(struct fake_proc *f, size_t *tracked, size_t *known)
{
    return (struct watch_opts){
        .proc_dirfd = f->fd,
        .interval_ms = 1,
        .ready_file = f->ready,
        .max_scans = 3,
        .on_result = on_result,
        .userdata = f,
        .stop = &f->stop,
        .ret_tracked = tracked,
        .ret_known = known,
    };
}

/* A bounded run scans max_scans times and ends by itself, the ready file made after the first
 * scan; nothing to attach, nothing reported, nothing left in the table. */
static void test_bounded_run(void **state)
{
    (void)state;
    struct fake_proc f;
    fake_proc_open(&f);
    size_t tracked = 99, known = 99;
    struct watch_opts o = opts_for(&f, &tracked, &known);
    struct cla_error e = {0};
    assert_int_equal(watch_run(&o, &e), 0);
    assert_int_equal(e.code, 0);
    assert_int_equal(access(f.ready, F_OK), 0);
    assert_int_equal(f.results, 0);
    assert_int_equal(tracked, 0);
    assert_int_equal(known, 0);
    fake_proc_close(&f);
}

/* A stop that came before the first scan ends the loop at once: no scan, so no ready file (it
 * says "scanned once", which did not happen). */
static void test_stop_before_first_scan(void **state)
{
    (void)state;
    struct fake_proc f;
    fake_proc_open(&f);
    struct watch_opts o = opts_for(&f, NULL, NULL);
    o.max_scans = 0;
    f.stop = 1;
    struct cla_error e = {0};
    assert_int_equal(watch_run(&o, &e), 0);
    assert_int_equal(access(f.ready, F_OK), -1);
    assert_int_equal(errno, ENOENT);
    fake_proc_close(&f);
}

/* A ready file that cannot be made ends the watcher with an error (an orchestrator would wait
 * for it forever otherwise). */
static void test_ready_file_failure(void **state)
{
    (void)state;
    struct fake_proc f;
    fake_proc_open(&f);
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/no-such-dir/ready", f.dir);
    struct watch_opts o = opts_for(&f, NULL, NULL);
    o.ready_file = missing;
    struct cla_error e = {0};
    int r = watch_run(&o, &e);
    assert_true(r < 0);
    assert_int_equal(e.code, r);
    fake_proc_close(&f);
}

/* The agent's hooks: an fd handed over by poll_fds joins the loop's wait and comes back to
 * after_poll with its revents; a wake-up time it asks for is kept even when the interval is
 * long. */
struct hooked {
    struct fake_proc *f;
    int rfd;
    int calls, readable;
};

static size_t hook_fds(struct pollfd *fds, size_t max, int64_t *until_ms, void *userdata)
{
    struct hooked *h = userdata;
    assert_true(max >= 1);
    fds[0] = (struct pollfd){.fd = h->rfd, .events = POLLIN};
    int64_t soon = util_now_ms() + 5;
    if (soon < *until_ms)
        *until_ms = soon;
    return 1;
}

static bool hook_after(const struct pollfd *fds, size_t n, void *userdata)
{
    struct hooked *h = userdata;
    assert_int_equal(n, 1);
    h->calls++;
    if (fds[0].revents & POLLIN) {
        h->readable++;
        h->f->stop = 1;
    }
    return false;
}

static void test_agent_hooks(void **state)
{
    (void)state;
    struct fake_proc f;
    fake_proc_open(&f);
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct hooked h = {.f = &f, .rfd = p[0]};
    struct watch_opts o = opts_for(&f, NULL, NULL);
    o.max_scans = 0;
    o.interval_ms = 60000;
    o.poll_fds = hook_fds;
    o.after_poll = hook_after;
    o.userdata = &h;
    /* nothing readable for the first waits: woken by the time asked for, not the interval */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        usleep(100000);
        _exit(write(p[1], "x", 1) == 1 ? 0 : 1);
    }
    struct cla_error e = {0};
    assert_int_equal(watch_run(&o, &e), 0);
    assert_true(h.calls >= 3);
    assert_int_equal(h.readable, 1);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    close(p[0]);
    close(p[1]);
    fake_proc_close(&f);
}

/* --other-containers needs our own mount namespace, read before any target: without it the
 * loop does not start; with it, it runs. */
static void test_other_containers_reads_own_namespace(void **state)
{
    (void)state;
    struct fake_proc f;
    fake_proc_open(&f);
    struct watch_opts o = opts_for(&f, NULL, NULL);
    o.sel.other_mntns = true;
    struct cla_error e = {0};
    assert_int_equal(watch_run(&o, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "own mount namespace"));
    assert_int_equal(access(f.ready, F_OK), -1);

    char path[128];
    snprintf(path, sizeof(path), "%s/%d", f.dir, (int)getpid());
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%d/ns", f.dir, (int)getpid());
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%d/ns/mnt", f.dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    memset(&e, 0, sizeof(e));
    assert_int_equal(watch_run(&o, &e), 0);
    assert_int_equal(access(f.ready, F_OK), 0);
    fake_proc_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_run),
        cmocka_unit_test(test_stop_before_first_scan),
        cmocka_unit_test(test_ready_file_failure),
        cmocka_unit_test(test_other_containers_reads_own_namespace),
        cmocka_unit_test(test_agent_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
