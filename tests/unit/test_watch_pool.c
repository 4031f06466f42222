/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "base/util.h"
#include "deliver/deliver.h"
#include "flow/watch.h"
#include "flow/watch_pool.h"
#include "target/target.h"

static void test_pool_bounds_and_busy(void **state)
{
    (void)state;
    struct watch_pool *p = watch_pool_new();
    assert_int_equal(watch_pool_count(p), 0);
    assert_true(watch_pool_next_deadline(p) == INT64_MAX);
    int slots[WATCH_POOL_MAX];
    for (int i = 0; i < WATCH_POOL_MAX; i++) {
        assert_true(watch_pool_may_start(p, false));
        slots[i] = watch_pool_add(p, 100 + i, 7, false, 5000 - i);
        assert_in_range(slots[i], 0, WATCH_POOL_MAX - 1);
        assert_true(watch_pool_busy(p, 100 + i, 7));
    }
    /* Full: nothing more starts, whatever it is. */
    assert_int_equal(watch_pool_count(p), WATCH_POOL_MAX);
    assert_false(watch_pool_may_start(p, false));
    assert_false(watch_pool_may_start(p, true));
    assert_int_equal(watch_pool_add(p, 200, 1, false, 0), -EBUSY);
    assert_true(watch_pool_next_deadline(p) == 5000 - (WATCH_POOL_MAX - 1));
    /* Same pid, another instance: not busy (a restarted app is not the one in flight). */
    assert_false(watch_pool_busy(p, 100, 8));
    watch_pool_remove(p, (size_t)slots[1]);
    watch_pool_remove(p, (size_t)slots[1]); /* twice: no effect */
    assert_int_equal(watch_pool_count(p), WATCH_POOL_MAX - 1);
    assert_false(watch_pool_busy(p, 101, 7));
    /* One instance, one attach in flight. */
    assert_int_equal(watch_pool_add(p, 100, 7, false, 0), -EBUSY);
    assert_int_equal(watch_pool_add(p, 101, 7, false, 1), slots[1]);
    assert_true(watch_pool_next_deadline(p) == 1);
    for (int i = 0; i < WATCH_POOL_MAX; i++)
        watch_pool_remove(p, (size_t)slots[i]);
    assert_int_equal(watch_pool_count(p), 0);
    assert_true(watch_pool_next_deadline(p) == INT64_MAX);
    watch_pool_free(p);
}

/* Retries of runtimes that failed (or never answered) never take the last free slot: a new
 * runtime always finds one, however many silent ones are retried. */
static void test_pool_keeps_a_slot_for_new_runtimes(void **state)
{
    (void)state;
    struct watch_pool *p = watch_pool_new();
    for (int i = 0; i < WATCH_POOL_MAX - 1; i++) {
        assert_true(watch_pool_may_start(p, true));
        assert_true(watch_pool_add(p, 10 + i, 1, true, 0) >= 0);
    }
    assert_false(watch_pool_may_start(p, true));
    assert_true(watch_pool_may_start(p, false));
    assert_true(watch_pool_add(p, 99, 1, false, 0) >= 0);
    assert_false(watch_pool_may_start(p, false));
    watch_pool_free(p);
}

static void test_attach_deadline(void **state)
{
    (void)state;
    /* Past both exchanges' own deadlines, never before them. */
    assert_true(watch_attach_deadline_ms(30000) > 2 * 30000);
    assert_true(watch_attach_deadline_ms(1000) == 2 * 1000 + WATCH_ATTACH_SLACK_MS);
}

/* A result crosses from an attach's child to the watcher as bytes: round trip, and a hostile
 * child's bytes made harmless. */
static void test_result_wire_round_trip(void **state)
{
    (void)state;
    size_t n = watch_result_wire_size();
    unsigned char *buf = calloc(1, n + 1);
    struct attach_result *r = calloc(1, sizeof(*r)), *d = calloc(1, sizeof(*d));
    assert_non_null(buf);
    r->outcome = ATTACH_LOAD_FAILED;
    r->pid = 42;
    r->starttime = 4242;
    r->have_hresult = true;
    r->hresult = 0x80131363u;
    r->rid_source = attach_rid_sources[1];
    snprintf(r->command_line, sizeof(r->command_line), "dotnet app.dll");
    snprintf(r->error.msg, sizeof(r->error.msg), "the runtime answered");
    watch_result_encode(r, buf);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_int_equal(d->outcome, ATTACH_LOAD_FAILED);
    assert_int_equal(d->pid, 42);
    assert_true(d->starttime == 4242);
    assert_true(d->have_hresult);
    assert_true(d->hresult == 0x80131363u);
    assert_ptr_equal(d->rid_source, attach_rid_sources[1]);
    assert_string_equal(d->command_line, "dotnet app.dll");
    assert_string_equal(d->error.msg, "the runtime answered");
    /* no pointer travels: one that is not a known name is dropped */
    r->rid_source = "elsewhere";
    watch_result_encode(r, buf);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_null(d->rid_source);
    /* short, long, or without the magic: refused */
    assert_int_equal(watch_result_decode(buf, n - 1, d), -EPROTO);
    assert_int_equal(watch_result_decode(buf, n + 1, d), -EPROTO);
    buf[0] ^= 0xff;
    assert_int_equal(watch_result_decode(buf, n, d), -EPROTO);
    free(buf);
    free(r);
    free(d);
}

static void test_result_wire_hostile_child(void **state)
{
    (void)state;
    size_t n = watch_result_wire_size();
    unsigned char *buf = calloc(1, n);
    struct attach_result *r = calloc(1, sizeof(*r)), *d = calloc(1, sizeof(*d));
    assert_non_null(buf);
    r->outcome = ATTACH_OK;
    watch_result_encode(r, buf);
    /* Everything after the magic and the rid index overwritten: every string unterminated and
     * full of escape bytes, flags that are not 0 or 1, a wild outcome, a wild rid index. */
    memset(buf + 8, 0x1b, n - 8);
    memcpy(buf + 4, &(uint32_t){0xdeadbeefu}, 4);
    assert_int_equal(watch_result_decode(buf, n, d), 0);
    assert_int_equal(d->outcome, ATTACH_INTERNAL);
    assert_null(d->rid_source);
    assert_int_equal(strlen(d->command_line), sizeof(d->command_line) - 1);
    assert_null(strchr(d->command_line, 0x1b));
    assert_int_equal(strlen(d->error.hint), sizeof(d->error.hint) - 1);
    assert_null(strchr(d->error.hint, 0x1b));
    assert_null(strchr(d->delivered_path, 0x1b));
    unsigned char b;
    memcpy(&b, &d->mapped, 1);
    assert_int_equal(b, 1);
    memcpy(&b, &d->have_hresult, 1);
    assert_int_equal(b, 1);
    free(buf);
    free(r);
    free(d);
}

/* A child stuck past its deadline is killed and reaped, and then its run's temporaries are swept
 * through the pin, as the target's user (here: ourselves), within WATCH_SWEEP_WAIT_MS: the
 * temporary tree named with its nonce goes; another run's temporary and a published profiler
 * stay. */
static void test_killed_child_is_swept(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_watch_pool.XXXXXX";
    assert_non_null(mkdtemp(dir));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    struct watch_pool *p = watch_pool_new();
    struct watch_table *t = watch_table_new();
    assert_non_null(p);
    assert_non_null(t);
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(proc >= 0);
    int slot = watch_pool_add(p, getpid(), 1, false, util_now_ms() - 1);
    assert_true(slot >= 0);
    struct job *j = &p->v[slot];
    assert_int_equal(target_open(proc, getpid(), &j->tg, NULL), 0);
    j->pinned = &j->tg;
    j->uid = getuid();
    assert_int_equal(deliver_new_nonce(j->nonce), 0);
    char other[DELIVER_NONCE_LEN + 1], mine[96], theirs[96];
    assert_int_equal(deliver_new_nonce(other), 0);
    const char *digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_int_equal(deliver_temp_name(digest, j->nonce, ".tmpdir", mine, sizeof(mine)), 0);
    assert_int_equal(deliver_temp_name(digest, other, ".tmpdir", theirs, sizeof(theirs)), 0);
    assert_int_equal(mkdirat(dfd, mine, 0700), 0);
    int f = openat(dfd, mine, O_RDONLY | O_DIRECTORY);
    assert_true(f >= 0);
    int g = openat(f, "pad.bin", O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(g >= 0);
    close(g);
    close(f);
    assert_int_equal(mkdirat(dfd, theirs, 0700), 0);
    assert_int_equal(mkdirat(dfd, "libclrprobe-0123456789abcdef", 0500), 0);

    /* The "attach": a child that never ends on its own. */
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        for (;;)
            pause();
    }
    j->child = c;
    j->pidfd = sys_pidfd_open(c, 0);
    assert_false(watch_job_needs_sweep(j)); /* running: it could still be writing */
    assert_true(util_now_ms() >= j->deadline_ms);
    watch_job_kill(j, JOB_TIMED_OUT);
    assert_true(watch_job_reap(j, true));
    assert_true(watch_job_needs_sweep(j));

    struct watch_opts o = {.proc_dirfd = proc};
    o.attach.target_dir = dir;
    int64_t t0 = util_now_ms();
    assert_int_equal(watch_job_sweep_start(&o, t, p, NULL, (size_t)slot), 0);
    watch_pool_sweep_wait(p, util_now_ms() + WATCH_SWEEP_WAIT_MS);
    assert_true(util_now_ms() - t0 <= WATCH_SWEEP_WAIT_MS + 100);
    assert_false(watch_job_needs_sweep(j)); /* once */
    struct stat st;
    assert_int_equal(fstatat(dfd, mine, &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(fstatat(dfd, theirs, &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(fstatat(dfd, "libclrprobe-0123456789abcdef", &st, AT_SYMLINK_NOFOLLOW), 0);

    /* A child that ended by itself with its result sent cleaned up after itself: no sweep. */
    j->swept = false;
    j->end = JOB_RUNNING;
    j->status = 0;
    assert_false(watch_job_needs_sweep(j));

    watch_job_release(j);
    watch_pool_free(p);
    watch_table_free(t);
    (void)unlinkat(dfd, theirs, AT_REMOVEDIR);
    (void)unlinkat(dfd, "libclrprobe-0123456789abcdef", AT_REMOVEDIR);
    close(dfd);
    close(proc);
    (void)rmdir(dir);
}

/* An attach the watcher killed (here: at a stop) is reported with what its sweeper did about
 * the resume it may have owed (watch --startup): resumed, not answered, or nothing owed. */
static void test_abandoned_result_says_resumed(void **state)
{
    (void)state;
    struct watch_pool *p = watch_pool_new();
    assert_non_null(p);
    int slot = watch_pool_add(p, 4242, 7, false, util_now_ms() + 1000);
    assert_true(slot >= 0);
    struct job *j = &p->v[slot];
    j->end = JOB_INTERRUPTED;
    struct watch_opts o = {.proc_dirfd = -1};
    static struct attach_result r;

    j->sweeper_status = SWEEPER_RESUMED << 8; /* exited with that status */
    watch_job_result(&o, j, &r);
    assert_int_equal(r.outcome, ATTACH_INTERRUPTED);
    assert_true(r.resume_owed && r.resumed);
    assert_non_null(strstr(r.error.hint, "was sent ResumeRuntime"));
    assert_non_null(strstr(r.error.hint, "the next watcher tries")); /* the first hint kept */

    j->sweeper_status = SWEEPER_RESUME_FAILED << 8;
    watch_job_result(&o, j, &r);
    assert_true(r.resume_owed);
    assert_false(r.resumed);
    assert_non_null(strstr(r.error.hint, "may still be paused"));

    /* Nothing owed (not --startup, or an app not asking for the pause), or no sweeper. */
    j->sweeper_status = 0;
    watch_job_result(&o, j, &r);
    assert_false(r.resume_owed);
    j->sweeper_status = -1;
    watch_job_result(&o, j, &r);
    assert_false(r.resume_owed);
    watch_pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_bounds_and_busy),
        cmocka_unit_test(test_pool_keeps_a_slot_for_new_runtimes),
        cmocka_unit_test(test_attach_deadline),
        cmocka_unit_test(test_result_wire_round_trip),
        cmocka_unit_test(test_result_wire_hostile_child),
        cmocka_unit_test(test_killed_child_is_swept),
        cmocka_unit_test(test_abandoned_result_says_resumed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
