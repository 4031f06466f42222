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

static int call(struct fsworker *w, const char *req, int fd, int64_t timeout, void **ret,
                size_t *ret_len, int *ret_fd, pid_t *stuck)
{
    return fsworker_call(w, req, strlen(req), fd, timeout, ret, ret_len, ret_fd, stuck);
}

static void test_answers_and_fds(void **state)
{
    (void)state;
    struct fsworker *w = fsworker_new(handle, done, NULL);
    assert_non_null(w);
    assert_int_equal(fsworker_generation(w), 0); /* nothing started before the first call */
    void *rep;
    size_t len;
    int fd;
    pid_t stuck;
    assert_int_equal(call(w, "echo one", -1, 2000, &rep, &len, &fd, &stuck), 0);
    assert_int_equal(len, 8);
    assert_memory_equal(rep, "echo one", 8);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    free(rep);
    /* An fd sent along comes back: the same file. */
    int mine = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    struct stat a, b;
    assert_int_equal(fstat(mine, &a), 0);
    assert_int_equal(call(w, "echo two", mine, 2000, &rep, &len, &fd, &stuck), 0);
    assert_int_equal(fstat(fd, &b), 0);
    assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
    close(fd);
    close(mine);
    free(rep);
    /* A long answer arrives whole. */
    assert_int_equal(call(w, "big", -1, 5000, &rep, &len, &fd, &stuck), 0);
    assert_int_equal(len, 1 << 20);
    free(rep);
    assert_int_equal(fsworker_generation(w), 1); /* one helper all along */
    fsworker_free(w);
}

/* A helper that does not answer is given up at the deadline: SIGKILL, and the next request
 * gets a fresh helper. */
static void test_stuck_helper_given_up(void **state)
{
    (void)state;
    struct fsworker *w = fsworker_new(handle, done, NULL);
    void *rep;
    size_t len;
    int fd;
    pid_t stuck;
    int64_t t0 = util_now_ms();
    assert_int_equal(call(w, "hang", -1, 300, &rep, &len, &fd, &stuck), -ETIMEDOUT);
    int64_t took = util_now_ms() - t0;
    assert_true(took >= 300 && took < 2000);
    /* Killed: reaped at a later look, never waited for. */
    for (int i = 0; i < 200 && stuck && fsworker_stuck(w, stuck); i++)
        usleep(10000);
    assert_false(stuck && fsworker_stuck(w, stuck));
    assert_int_equal(call(w, "echo again", -1, 2000, &rep, &len, &fd, &stuck), 0);
    assert_int_equal(stuck, 0);
    assert_int_equal(fsworker_generation(w), 2);
    close(fd);
    free(rep);
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
    fsworker_set_interrupt(w, &orig, &stop_flag);
    stop_flag = 0;
    alarm(1);
    void *rep;
    size_t len;
    int fd;
    pid_t stuck;
    int64_t t0 = util_now_ms();
    assert_int_equal(call(w, "hang", -1, 10000, &rep, &len, &fd, &stuck), -EINTR);
    assert_true(util_now_ms() - t0 < 3000);
    /* Once stopped, nothing more is asked. */
    assert_int_equal(call(w, "echo", -1, 2000, &rep, &len, &fd, &stuck), -EINTR);
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
    void *rep;
    size_t len;
    int fd;
    pid_t stuck;
    assert_int_equal(call(w, "echo", -1, 2000, &rep, &len, &fd, &stuck), 0);
    close(fd);
    free(rep);
    pid_t c = fork();
    if (c == 0) {
        int r = call(w, "echo", -1, 2000, &rep, &len, &fd, &stuck);
        fsworker_free(w);
        _exit(r == -EINVAL ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(c, &st, 0), c);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(call(w, "echo", -1, 2000, &rep, &len, &fd, &stuck), 0);
    assert_int_equal(fsworker_generation(w), 1);
    close(fd);
    free(rep);
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
