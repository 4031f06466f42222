/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flow/watch.h"

static void test_once_per_instance(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    assert_true(watch_table_due(t, 10, 100, 0));
    assert_true(watch_table_record(t, 10, 100, ATTACH_OK, 0));
    assert_false(watch_table_due(t, 10, 100, 1000000));
    assert_true(watch_table_final(t, 10, 100));
    /* Same pid, new start time: a restarted app is a new instance. */
    assert_true(watch_table_due(t, 10, 200, 0));
    watch_table_free(t);
}

static void test_final_outcomes_not_retried(void **state)
{
    (void)state;
    enum attach_outcome finals[] = {ATTACH_OK, ATTACH_ALREADY_ACTIVE, ATTACH_LOAD_FAILED,
                                    ATTACH_PERMISSION, ATTACH_NOT_FOUND};
    for (size_t i = 0; i < sizeof(finals) / sizeof(finals[0]); i++) {
        struct watch_table *t = watch_table_new();
        watch_table_record(t, 1, 1, finals[i], 0);
        assert_false(watch_table_due(t, 1, 1, 10000000));
        watch_table_free(t);
    }
}

static void test_transient_backoff_then_give_up(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 0;
    assert_true(watch_table_record(t, 5, 9, ATTACH_NOT_READY, now));
    assert_false(watch_table_due(t, 5, 9, now + 999));
    assert_true(watch_table_due(t, 5, 9, now + 1000));
    /* The same outcome again is not new: no second report. */
    now += 1000;
    assert_false(watch_table_record(t, 5, 9, ATTACH_NOT_READY, now));
    assert_false(watch_table_due(t, 5, 9, now + 1999));
    assert_true(watch_table_due(t, 5, 9, now + 2000));
    /* A different outcome is new. */
    now += 2000;
    assert_true(watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now));
    now += 4000;
    watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now);
    now += 8000;
    watch_table_record(t, 5, 9, ATTACH_PROTOCOL, now);
    /* Five attempts: given up, never again. */
    assert_true(watch_table_final(t, 5, 9));
    assert_false(watch_table_due(t, 5, 9, now + 100000000));
    watch_table_free(t);
}

static void test_sweep_drops_dead(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    for (int i = 1; i <= 1000; i++)
        watch_table_record(t, i, (uint64_t)i, ATTACH_OK, 0);
    assert_int_equal(watch_table_size(t), 1000);
    watch_table_begin(t);
    watch_table_seen(t, 7, 7, 0, 0);
    watch_table_seen(t, 8, 999, 0, 0); /* same pid, other instance: not this one */
    assert_int_equal(watch_table_sweep(t, 0), 999);
    assert_int_equal(watch_table_size(t), 1);
    assert_true(watch_table_final(t, 7, 7));
    assert_false(watch_table_final(t, 8, 8));
    watch_table_free(t);
}

static void test_idle_young_then_seldom(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 50000;
    /* Started 3 s ago: looked at every scan for 7 s more, then every WATCH_IDLE_LOOK_MS. */
    watch_table_idle(t, 40, 4, 0xAB, 3000, now);
    assert_true(watch_table_due(t, 40, 4, now));
    watch_table_idle(t, 40, 4, 0xAB, 6999 + 3000, now + 6999);
    assert_true(watch_table_due(t, 40, 4, now + 6999));
    watch_table_idle(t, 40, 4, 0xAB, 10000, now + 7000);
    assert_false(watch_table_due(t, 40, 4, now + 7000 + WATCH_IDLE_LOOK_MS - 1));
    assert_true(watch_table_due(t, 40, 4, now + 7000 + WATCH_IDLE_LOOK_MS));
    assert_false(watch_table_final(t, 40, 4));
    /* Found already old (the watcher started after it): seldom from the first look. */
    watch_table_idle(t, 41, 4, 0xAB, 3600000, now);
    assert_false(watch_table_due(t, 41, 4, now + 1));
    /* Idle entries are not "tracked instances", but they are entries, and swept alike. */
    assert_int_equal(watch_table_size(t), 0);
    assert_int_equal(watch_table_entries(t), 2);
    watch_table_begin(t);
    watch_table_seen(t, 41, 4, 0xAB, now);
    assert_int_equal(watch_table_sweep(t, 0), 1);
    assert_int_equal(watch_table_entries(t), 1);
    watch_table_free(t);
}

/* What selects a process changed (the agent's pods): every idle one is due at once; an attached
 * one stays final, and one backing off keeps its back-off. */
static void test_wake_idle(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 50000;
    watch_table_idle(t, 41, 4, 0xAB, 3600000, now);
    assert_false(watch_table_due(t, 41, 4, now + 1));
    watch_table_record(t, 42, 4, ATTACH_OK, now);
    watch_table_record(t, 43, 4, ATTACH_NOT_READY, now);
    assert_false(watch_table_due(t, 43, 4, now + 1));
    watch_table_wake_idle(t, now + 1);
    assert_true(watch_table_due(t, 41, 4, now + 1));
    assert_false(watch_table_due(t, 42, 4, now + 1));
    assert_false(watch_table_due(t, 43, 4, now + 1));
    watch_table_free(t);
}

static void test_exec_starts_over(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 1000;
    /* An old shell, idle and seldom looked at, execs dotnet: due at once, and young again. */
    watch_table_idle(t, 7, 70, 0x1111, 3600000, now);
    assert_false(watch_table_due(t, 7, 70, now + 10));
    watch_table_seen(t, 7, 70, 0x2222, now + 10);
    assert_true(watch_table_due(t, 7, 70, now + 10));
    watch_table_idle(t, 7, 70, 0x2222, 3600000, now + 20);
    assert_true(watch_table_due(t, 7, 70, now + 30));
    /* Attached, then the runtime execs another program: a new instance, attached again. */
    assert_true(watch_table_record(t, 7, 70, ATTACH_OK, now + 40));
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0x2222, now + 50); /* same image: still final */
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0, now + 50); /* unknown: no news */
    assert_true(watch_table_final(t, 7, 70));
    watch_table_seen(t, 7, 70, 0x3333, now + 60);
    assert_false(watch_table_final(t, 7, 70));
    assert_true(watch_table_due(t, 7, 70, now + 60));
    assert_int_equal(watch_table_size(t), 0);
    assert_true(watch_table_record(t, 7, 70, ATTACH_OK, now + 70)); /* reported anew */
    /* A table entry made by record() learns its image on the next scan without a reset. */
    watch_table_record(t, 9, 90, ATTACH_OK, now);
    watch_table_seen(t, 9, 90, 0x4444, now + 1);
    assert_true(watch_table_final(t, 9, 90));
    watch_table_free(t);
}

static void test_exec_fp(void **state)
{
    (void)state;
    struct proc_stat a = {.exec_marks = {0, 0, 0, 0}}, b = {.exec_marks = {1, 2, 3, 4}},
                     c = {.exec_marks = {1, 2, 3, 5}};
    assert_int_equal(watch_exec_fp(&a), 0);
    assert_int_not_equal(watch_exec_fp(&b), 0);
    assert_int_not_equal(watch_exec_fp(&b), watch_exec_fp(&c));
    assert_int_equal(watch_exec_fp(&b),
                     watch_exec_fp(&(struct proc_stat){.exec_marks = {1, 2, 3, 4}}));
}

/* Entries arrive in any pid order (a wrapped pid counter): lookups stay exact. */
static void test_many_unordered(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    uint32_t x = 12345;
    pid_t pids[3000];
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        pids[i] = (pid_t)(i * 7919 % 30011) + 1;
        watch_table_idle(t, pids[i], x % 3, 1, 3600000, 0);
        watch_table_record(t, pids[i], 100, i % 2 ? ATTACH_OK : ATTACH_NOT_READY, 0);
    }
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(watch_table_final(t, pids[i], 100), i % 2 == 1);
        assert_false(watch_table_final(t, pids[i], 101));
    }
    assert_int_equal(watch_table_size(t), 3000);
    watch_table_free(t);
}

/* A runtime that lets every exchange time out costs a whole attempt each time: its next attempt
 * waits as long as the last one took when that is longer than the backoff. */
static void test_timeout_backs_off_by_its_cost(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 100000;
    assert_false(watch_table_tried(t, 3, 33));
    /* 10 s spent in a silent attach: not due for 10 s, although the first backoff is 1 s. */
    assert_true(watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 10000, now));
    assert_true(watch_table_tried(t, 3, 33));
    assert_false(watch_table_final(t, 3, 33));
    assert_false(watch_table_due(t, 3, 33, now + WATCH_RETRY_FIRST_MS));
    assert_false(watch_table_due(t, 3, 33, now + 9999));
    assert_true(watch_table_due(t, 3, 33, now + 10000));
    /* A quick failure keeps the plain doubling backoff (2 s at the second attempt). */
    now += 10000;
    assert_false(watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 5, now));
    assert_false(watch_table_due(t, 3, 33, now + 1999));
    assert_true(watch_table_due(t, 3, 33, now + 2000));
    /* Given up after WATCH_RETRY_ATTEMPTS like any transient outcome. */
    for (int i = 2; i < WATCH_RETRY_ATTEMPTS; i++) {
        now += 60000;
        watch_table_record_attempt(t, 3, 33, ATTACH_PROTOCOL, 30000, now);
    }
    assert_true(watch_table_final(t, 3, 33));
    /* An interrupted attach (the watcher stopping) is never final. */
    assert_false(watch_outcome_final(ATTACH_INTERRUPTED));
    watch_table_free(t);
}

/* A delivery conflict (the content-addressed name taken by a file of another uid) is not the
 * target's last word: retried with backoff, doubling up to its own cap, and never given up. */
static void test_delivery_failure_retried(void **state)
{
    (void)state;
    assert_false(watch_outcome_final(ATTACH_DELIVERY));
    struct watch_table *t = watch_table_new();
    int64_t now = 0, delay = WATCH_RETRY_FIRST_MS;
    assert_true(watch_table_record_attempt(t, 4, 44, ATTACH_DELIVERY, 20, now));
    for (int i = 1; i <= 3 * WATCH_RETRY_ATTEMPTS; i++) {
        assert_false(watch_table_final(t, 4, 44));
        assert_false(watch_table_due(t, 4, 44, now + delay - 1));
        assert_true(watch_table_due(t, 4, 44, now + delay));
        now += delay;
        /* The same conflict again is not reported again, and is still retried. */
        assert_false(watch_table_record_attempt(t, 4, 44, ATTACH_DELIVERY, 20, now));
        delay = delay * 2 > WATCH_DELIVERY_RETRY_MAX_MS ? WATCH_DELIVERY_RETRY_MAX_MS : delay * 2;
    }
    assert_int_equal(delay, WATCH_DELIVERY_RETRY_MAX_MS);
    assert_false(watch_table_final(t, 4, 44));
    /* Once delivered, the next outcome decides as usual. */
    now += delay;
    assert_true(watch_table_record(t, 4, 44, ATTACH_OK, now));
    assert_true(watch_table_final(t, 4, 44));
    watch_table_free(t);
}

/* Queues the instance as a scan does; asserts it is due, and returns since when. */
static int64_t queued_since(struct watch_table *t, pid_t pid, uint64_t st, uint64_t fp, int64_t now,
                            bool retry)
{
    struct watch_waiting w;
    assert_true(watch_table_queue(t, pid, st, fp, 60000, now, &w));
    assert_int_equal(w.pid, pid);
    assert_true(w.starttime == st);
    assert_int_equal(w.retry, retry);
    return w.since_ms;
}

/* A runtime that fails and then execs itself (the same pid: a new image, or as a model of a
 * restart on the same pid, a new start time) is not a new runtime for the schedule: the new
 * instance is due when its predecessor's back-off ends, counts as a retry, and a failure of its
 * own doubles the lineage's back-off. A genuinely new process (another pid) is due at once. */
static void test_reexec_inherits_backoff(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    struct watch_waiting w;
    int64_t now = 100000;
    watch_table_begin(t);
    watch_table_seen(t, 7, 70, 0xA, now);
    assert_int_equal(queued_since(t, 7, 70, 0xA, now, false), now);
    /* Three timeouts of 1 s: the back-off is at 4 s. */
    watch_table_record_attempt(t, 7, 70, ATTACH_PROTOCOL, 1000, now);
    now += 1000;
    watch_table_record_attempt(t, 7, 70, ATTACH_PROTOCOL, 1000, now);
    now += 2000;
    watch_table_record_attempt(t, 7, 70, ATTACH_PROTOCOL, 1000, now);
    /* It execs itself at once: a new instance, but not a fresh one. */
    watch_table_begin(t);
    watch_table_seen(t, 7, 70, 0xB, now + 10);
    assert_false(watch_table_tried(t, 7, 70));
    assert_false(watch_table_due(t, 7, 70, now + 3999));
    assert_false(watch_table_queue(t, 7, 70, 0xB, 60000, now + 3999, &w));
    assert_int_equal(queued_since(t, 7, 70, 0xB, now + 4000, true), now + 4000);
    assert_int_equal(watch_table_sweep(t, now + 4000), 0);
    /* Its own failure doubles the lineage's back-off (8 s, not the 1 s of a first failure). */
    now += 4000;
    assert_true(watch_table_record_attempt(t, 7, 70, ATTACH_PROTOCOL, 1000, now));
    assert_false(watch_table_final(t, 7, 70));
    assert_false(watch_table_due(t, 7, 70, now + 7999));
    assert_true(watch_table_due(t, 7, 70, now + 8000));

    /* The same pid with a new start time, while the failing instance is gone: its back-off as
     * well, kept across the sweep that drops the old instance. */
    watch_table_begin(t);
    watch_table_seen(t, 7, 71, 0xC, now + 20); /* not known yet: nothing to see */
    assert_false(watch_table_due(t, 7, 71, now + 7999));
    assert_false(watch_table_queue(t, 7, 71, 0xC, 60000, now + 20, &w));
    /* A genuinely new process, another pid, meanwhile: due at once, a first attempt. */
    assert_int_equal(queued_since(t, 8, 70, 0xD, now + 20, false), now + 20);
    assert_int_equal(watch_table_sweep(t, now + 20), 1); /* (7, 70) is gone */
    assert_int_equal(watch_table_size(t), 0);
    assert_int_equal(watch_table_entries(t), 2);
    assert_int_equal(queued_since(t, 7, 71, 0xC, now + 8000, true), now + 8000);
    now += 8000;
    watch_table_record_attempt(t, 7, 71, ATTACH_PROTOCOL, 1000, now);
    assert_false(watch_table_due(t, 7, 71, now + 15999));
    assert_true(watch_table_due(t, 7, 71, now + 16000));

    /* Gone for good: WATCH_LINEAGE_MS after its back-off, a process on that pid is new. */
    now += 16000 + WATCH_LINEAGE_MS;
    watch_table_begin(t);
    watch_table_seen(t, 8, 70, 0xD, now);
    assert_int_equal(watch_table_sweep(t, now), 1);
    watch_table_begin(t);
    assert_int_equal(queued_since(t, 7, 72, 0xE, now, false), now);
    watch_table_free(t);
}

/* A young runtime's "not yet available" is not recorded, and does not keep the instance's place:
 * due again at once, but since then, behind those already waiting. While it is not due (a
 * back-off) the back-off stands. */
static void test_requeue_goes_behind(void **state)
{
    (void)state;
    struct watch_table *t = watch_table_new();
    int64_t now = 5000;
    assert_int_equal(queued_since(t, 3, 30, 0xA, now, false), now);
    assert_int_equal(queued_since(t, 4, 40, 0xA, now + 100, false), now + 100);
    watch_table_requeue(t, 3, 30, now + 900);
    assert_false(watch_table_tried(t, 3, 30));
    assert_int_equal(queued_since(t, 3, 30, 0xA, now + 1000, false), now + 900);
    assert_int_equal(queued_since(t, 4, 40, 0xA, now + 1000, false), now + 100);
    watch_table_record(t, 4, 40, ATTACH_PROTOCOL, now + 1000);
    watch_table_requeue(t, 4, 40, now + 1500);
    assert_false(watch_table_due(t, 4, 40, now + 1999));
    assert_true(watch_table_due(t, 4, 40, now + 2000));
    watch_table_free(t);
}

/* Free slots go to the instance waiting longest, whatever its pid; a retry never takes the last
 * one, which the next first attempt in line gets. */
struct offer_log {
    struct watch_pool *pool;
    pid_t order[16];
    size_t n;
};

static void take_slot(const struct watch_waiting *w, void *userdata)
{
    struct offer_log *l = userdata;
    assert_true(l->n < 16);
    l->order[l->n++] = w->pid;
    assert_true(watch_pool_add(l->pool, w->pid, w->starttime, w->retry, 0) >= 0);
}

static void test_offer_longest_waiting_first(void **state)
{
    (void)state;
    struct offer_log l = {.pool = watch_pool_new()};
    struct watch_waiting v[] = {
        {.pid = 5, .since_ms = 300, .retry = true},  {.pid = 9, .since_ms = 100, .retry = true},
        {.pid = 2, .since_ms = 400, .retry = false}, {.pid = 7, .since_ms = 200, .retry = true},
        {.pid = 3, .since_ms = 300, .retry = true},  {.pid = 1, .since_ms = 500, .retry = false},
    };
    watch_pool_offer(l.pool, v, 6, take_slot, &l);
    assert_int_equal(l.n, WATCH_POOL_MAX);
    /* 9, 7, 3 (ties by pid), then 5 cannot take the last slot: 2 does. */
    pid_t want[] = {9, 7, 3, 2};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(l.order[i], want[i]);
    /* A full pool offers nothing. */
    watch_pool_offer(l.pool, v, 6, take_slot, &l);
    assert_int_equal(l.n, WATCH_POOL_MAX);
    watch_pool_free(l.pool);
}

/*
 * The watcher's schedule on a simulated clock: SIM_N hostile runtimes with lower pids than a
 * good one, all selected, each letting every attach time out after --timeout; the good one comes
 * when they have cycled for a while. Each scan does what watch.c's does with the table and the
 * pool: outcomes of attaches that ended, seen/queue for every process, offer, sweep.
 */
#define SIM_N        12
#define SIM_TIMEOUT  1000
#define SIM_INTERVAL 250
#define SIM_GOOD_PID 5000

enum sim_hostile {
    SIM_STAYS,         /* fails and stays (given up after WATCH_RETRY_ATTEMPTS) */
    SIM_EXECS,         /* execs itself when an attach gives up: same pid and start, new image */
    SIM_NEW_START,     /* the same, modelled as a new start time on the same pid */
    SIM_RESTARTS_LOWER /* exits and comes back as a new process with a new, lower pid */
};

struct sim_proc {
    pid_t pid;
    uint64_t starttime, fp;
    bool good, present;
    int attempts;
};

struct sim_job {
    size_t proc;
    uint64_t starttime;
    int64_t start_ms, end_ms;
};

struct sim {
    struct watch_table *t;
    struct watch_pool *pool;
    struct sim_proc p[SIM_N + 1];
    struct sim_job jobs[WATCH_POOL_MAX];
    enum sim_hostile mode;
    int64_t now;
    int64_t good_start; /* -1 until the good one got a slot */
    pid_t low_pid;      /* the next pid a restart takes */
};

static void sim_take(const struct watch_waiting *w, void *userdata)
{
    struct sim *s = userdata;
    struct sim_proc *p = &s->p[w->ref];
    int slot = watch_pool_add(s->pool, w->pid, w->starttime, w->retry,
                              s->now + watch_attach_deadline_ms(SIM_TIMEOUT));
    assert_true(slot >= 0);
    s->jobs[slot] = (struct sim_job){
        .proc = w->ref,
        .starttime = w->starttime,
        .start_ms = s->now,
        .end_ms = s->now + (p->good ? 50 : SIM_TIMEOUT),
    };
    p->attempts++;
    if (p->good && s->good_start < 0)
        s->good_start = s->now;
}

/* Attaches that ended by now: their outcome into the table, and the hostile reaction. */
static void sim_finish(struct sim *s)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct sim_job *j = &s->jobs[i];
        if (!watch_pool_busy(s->pool, s->p[j->proc].pid, j->starttime) || j->end_ms > s->now)
            continue;
        struct sim_proc *p = &s->p[j->proc];
        watch_table_record_attempt(s->t, p->pid, j->starttime,
                                   p->good ? ATTACH_OK : ATTACH_PROTOCOL, j->end_ms - j->start_ms,
                                   j->end_ms);
        watch_pool_remove(s->pool, i);
        if (p->good)
            continue;
        switch (s->mode) {
        case SIM_STAYS: break;
        case SIM_EXECS: p->fp++; break;
        case SIM_NEW_START: p->starttime += 1000; break;
        case SIM_RESTARTS_LOWER:
            p->pid = s->low_pid++;
            p->starttime += 1000;
            break;
        }
    }
}

static void sim_scan(struct sim *s)
{
    struct watch_waiting v[SIM_N + 1];
    size_t n = 0;
    sim_finish(s);
    watch_table_begin(s->t);
    for (size_t i = 0; i < SIM_N + 1; i++) {
        struct sim_proc *p = &s->p[i];
        if (!p->present)
            continue;
        watch_table_seen(s->t, p->pid, p->starttime, p->fp, s->now);
        if (watch_table_final(s->t, p->pid, p->starttime) ||
            watch_pool_busy(s->pool, p->pid, p->starttime))
            continue;
        if (watch_table_queue(s->t, p->pid, p->starttime, p->fp, 60000, s->now, &v[n])) {
            v[n].ref = i;
            n++;
        }
    }
    watch_pool_offer(s->pool, v, n, sim_take, s);
    watch_table_sweep(s->t, s->now);
}

/* Runs the simulation; returns how long the good one waited for a slot (-1: never, within
 * `run_ms`), and the most attempts any hostile runtime had in *ret_max_attempts. */
static int64_t sim_run(enum sim_hostile mode, int64_t good_at, int64_t run_ms,
                       int *ret_max_attempts)
{
    struct sim s = {.t = watch_table_new(), .pool = watch_pool_new(), .mode = mode};
    s.good_start = -1;
    s.low_pid = 1000;
    for (int i = 0; i < SIM_N; i++)
        s.p[i] = (struct sim_proc){.pid = 100 + i, .starttime = 10 + i, .fp = 1, .present = true};
    s.p[SIM_N] = (struct sim_proc){.pid = SIM_GOOD_PID, .starttime = 99, .fp = 1, .good = true};
    for (s.now = 0; s.now < run_ms; s.now += SIM_INTERVAL) {
        if (s.now == good_at)
            s.p[SIM_N].present = true;
        sim_scan(&s);
    }
    *ret_max_attempts = 0;
    for (int i = 0; i < SIM_N; i++)
        if (s.p[i].attempts > *ret_max_attempts)
            *ret_max_attempts = s.p[i].attempts;
    watch_table_free(s.t);
    watch_pool_free(s.pool);
    return s.good_start < 0 ? -1 : s.good_start - good_at;
}

/* The bound watch.h and docs/security.md state for a first attempt, ceil(N / S) rounds of H (the
 * longest an attempt holds a slot: here the timeout the silent runtimes let pass, at worst the
 * attach deadline) and one interval, and one interval more. */
static int64_t first_attempt_bound(int n, int64_t hold_ms)
{
    return (n + WATCH_POOL_MAX - 1) / WATCH_POOL_MAX * (hold_ms + SIM_INTERVAL) + SIM_INTERVAL;
}

static void test_hostile_runtimes_do_not_starve_a_good_one(void **state)
{
    (void)state;
    const enum sim_hostile modes[] = {SIM_STAYS, SIM_EXECS, SIM_NEW_START, SIM_RESTARTS_LOWER};
    const int64_t run_ms = 120000, bound = first_attempt_bound(SIM_N, SIM_TIMEOUT);
    assert_true(bound <= first_attempt_bound(SIM_N, watch_attach_deadline_ms(SIM_TIMEOUT)));
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        /* The good one comes at every scan of the first 30 s in turn: with all of them still
         * untried, with their retries bunched, with their back-offs spread. */
        int64_t worst = 0;
        int max_attempts;
        for (int64_t at = 0; at <= 30000; at += SIM_INTERVAL) {
            int64_t waited = sim_run(modes[m], at, at + 2 * bound, &max_attempts);
            assert_true(waited >= 0);
            if (waited > worst)
                worst = waited;
        }
        print_message("hostile mode %zu: the good runtime waited at most %lld ms (bound %lld ms)\n",
                      m, (long long)worst, (long long)bound);
        assert_true(worst <= bound);
        /* Each exec (or new start on the pid) continues the back-off of the one before: the
         * re-exec'ing runtimes are tried about as seldom as ones that stay. With a fresh
         * instance at every exec they would be tried every N / S timeouts, 40 times in 120 s. */
        sim_run(modes[m], 20000, run_ms, &max_attempts);
        if (modes[m] == SIM_EXECS || modes[m] == SIM_NEW_START)
            assert_true(max_attempts <= 10);
        if (modes[m] == SIM_STAYS)
            assert_true(max_attempts <= WATCH_RETRY_ATTEMPTS);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_once_per_instance),
        cmocka_unit_test(test_final_outcomes_not_retried),
        cmocka_unit_test(test_transient_backoff_then_give_up),
        cmocka_unit_test(test_sweep_drops_dead),
        cmocka_unit_test(test_idle_young_then_seldom),
        cmocka_unit_test(test_wake_idle),
        cmocka_unit_test(test_exec_starts_over),
        cmocka_unit_test(test_exec_fp),
        cmocka_unit_test(test_many_unordered),
        cmocka_unit_test(test_timeout_backs_off_by_its_cost),
        cmocka_unit_test(test_delivery_failure_retried),
        cmocka_unit_test(test_reexec_inherits_backoff),
        cmocka_unit_test(test_requeue_goes_behind),
        cmocka_unit_test(test_offer_longest_waiting_first),
        cmocka_unit_test(test_hostile_runtimes_do_not_starve_a_good_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
