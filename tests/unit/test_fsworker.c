/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/util.h"
#include "target/fsworker.h"

/* The requests the test handler knows: "echo..." answers the same bytes (and the fd it got, or
 * one of /dev/null), "hang" never answers (a filesystem that stopped), "big" answers 1 MiB. */
static void handle(void *ctx, const void *req, size_t len, int fd, void **ret, size_t *ret_len,
                   int *ret_fd)
{
    (void)ctx;
    *ret = NULL;
    *ret_len = 0;
    *ret_fd = -1;
    if (len >= 4 && memcmp(req, "hang", 4) == 0)
        for (;;)
            pause();
    if (len >= 3 && memcmp(req, "big", 3) == 0) {
        *ret_len = 1 << 20;
        *ret = calloc(1, *ret_len);
        return;
    }
    *ret = malloc(len);
    memcpy(*ret, req, len);
    *ret_len = len;
    *ret_fd = fd >= 0 ? fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Runs in the helper as it leaves: nothing of the test's to free. */
static void done(void *ctx)
{
    (void)ctx;
}

/* What one call gives back. */
struct ans {
    void *rep;
    size_t len;
    int fd;
    pid_t stuck;
};

static int call(struct fsworker *w, const char *req, int fd, int64_t timeout, struct ans *a)
{
    return fsworker_call(w, req, strlen(req), fd, timeout, &a->rep, &a->len, &a->fd, &a->stuck);
}

/* Lets go of an answer's buffer and fd. */
static void drop(struct ans *a)
{
    free(a->rep);
    a->rep = NULL;
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
}

static void test_answers_and_fds(void **state)
{
    (void)state;
    struct fsworker *w = fsworker_new(handle, done, NULL);
    struct ans a = {.fd = -1};
    assert_non_null(w);
    assert_int_equal(fsworker_generation(w), 0); /* nothing started before the first call */
    assert_int_equal(call(w, "echo one", -1, 2000, &a), 0);
    assert_int_equal(a.len, 8);
    assert_memory_equal(a.rep, "echo one", 8);
    assert_true(a.fd >= 0);
    assert_true(fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
    drop(&a);
    /* An fd sent along comes back: the same file. */
    int mine = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    struct stat sa, sb;
    assert_int_equal(fstat(mine, &sa), 0);
    assert_int_equal(call(w, "echo two", mine, 2000, &a), 0);
    assert_int_equal(fstat(a.fd, &sb), 0);
    assert_true(sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev);
    drop(&a);
    close(mine);
    /* A long answer arrives whole. */
    assert_int_equal(call(w, "big", -1, 5000, &a), 0);
    assert_int_equal(a.len, 1 << 20);
    drop(&a);
    assert_int_equal(fsworker_generation(w), 1); /* one helper all along */
    fsworker_free(w);
}

/* A helper that does not answer is given up at the deadline: SIGKILL, and the next request
 * gets a fresh helper. */
static void test_stuck_helper_given_up(void **state)
{
    (void)state;
    struct fsworker *w = fsworker_new(handle, done, NULL);
    struct ans a = {.fd = -1};
    int64_t t0 = util_now_ms();
    assert_int_equal(call(w, "hang", -1, 300, &a), -ETIMEDOUT);
    int64_t took = util_now_ms() - t0;
    assert_true(took >= 300 && took < 2000);
    /* Killed: reaped at a later look, never waited for. */
    pid_t stuck = a.stuck;
    for (int i = 0; i < 200 && stuck && fsworker_stuck(w, stuck); i++)
        usleep(10000);
    assert_false(stuck && fsworker_stuck(w, stuck));
    assert_int_equal(call(w, "echo again", -1, 2000, &a), 0);
    assert_int_equal(a.stuck, 0);
    assert_int_equal(fsworker_generation(w), 2);
    drop(&a);
    fsworker_free(w);
}

static volatile sig_atomic_t stop_flag;
static void on_alarm(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* A stop signal let in during the wait (the caller's mask) ends it at once. */
static void test_stop_ends_the_wait(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &sa, NULL);
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct fsworker *w = fsworker_new(handle, done, NULL);
    struct ans a = {.fd = -1};
    fsworker_set_interrupt(w, &orig, &stop_flag);
    stop_flag = 0;
    alarm(1);
    int64_t t0 = util_now_ms();
    assert_int_equal(call(w, "hang", -1, 10000, &a), -EINTR);
    assert_true(util_now_ms() - t0 < 3000);
    /* Once stopped, nothing more is asked. */
    assert_int_equal(call(w, "echo", -1, 2000, &a), -EINTR);
    fsworker_free(w);
    sigprocmask(SIG_SETMASK, &orig, NULL);
    signal(SIGALRM, SIG_DFL);
}

/* A child forked while the helper runs (watch's attach child) lets go of its copy without
 * touching the helper: the owner still gets its answers. */
static void test_child_copy_leaves_helper_alone(void **state)
{
    (void)state;
    struct fsworker *w = fsworker_new(handle, done, NULL);
    struct ans a = {.fd = -1};
    assert_int_equal(call(w, "echo", -1, 2000, &a), 0);
    drop(&a);
    pid_t c = fork();
    if (c == 0) {
        int r = call(w, "echo", -1, 2000, &a);
        fsworker_free(w);
        _exit(r == -EINVAL ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(c, &st, 0), c);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(call(w, "echo", -1, 2000, &a), 0);
    assert_int_equal(fsworker_generation(w), 1);
    drop(&a);
    fsworker_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers_and_fds),
        cmocka_unit_test(test_stuck_helper_given_up),
        cmocka_unit_test(test_stop_ends_the_wait),
        cmocka_unit_test(test_child_copy_leaves_helper_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
