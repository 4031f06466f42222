/* SPDX-License-Identifier: Apache-2.0 */
/* Which runtime instances are due, final or backing off. Pure: no I/O, and the time is passed
 * in, so every schedule is a unit test (tests/unit/test_watch_table.c). */
#include "flow/watch_table.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The back-off exponent saturates here: the delay reached its cap long before. */
#define STRIKES_MAX 30

struct instance {
    pid_t pid;
    uint64_t starttime;
    uint64_t exec_fp; /* the program image last seen (0 = unknown) */
    enum attach_outcome last;
    bool has_outcome; /* false: only looked at, nothing to attach yet */
    bool final;
    /* The pid's lineage: the last outcome of this instance, or of the one before it on this pid
     * (an execve, a new start time), was a failure. A successor takes over `strikes` and
     * `next_ms` instead of starting fresh (inherit()). */
    bool failing;
    bool gone;    /* not seen by the last scan: kept for its lineage only, until it expires */
    int attempts; /* of this instance, towards WATCH_RETRY_ATTEMPTS */
    int strikes;  /* failures of the lineage: the back-off's exponent */
    /* Not before this time; for a due instance, the time since which it has waited: the order
     * in which free slots are offered (watch_pool_offer). */
    int64_t next_ms;
    int64_t young_until_ms; /* looked at every scan until then */
    unsigned gen;           /* last scan that saw it */
};

/* Sorted by (pid, starttime): a node may show thousands of processes, each looked up per scan,
 * and the instances of one pid (its lineage) are neighbours. */
struct watch_table {
    struct instance *v;
    size_t n, alloc;
    unsigned gen;
};

struct watch_table *watch_table_new(void)
{
    return calloc(1, sizeof(struct watch_table));
}

void watch_table_free(struct watch_table *t)
{
    if (!t)
        return;
    free(t->v);
    free(t);
}

static int cmp_key(pid_t pid, uint64_t starttime, const struct instance *in)
{
    if (pid != in->pid)
        return pid < in->pid ? -1 : 1;
    if (starttime != in->starttime)
        return starttime < in->starttime ? -1 : 1;
    return 0;
}

/* The index of the instance, or of where it would go (with *found false). */
static size_t locate(const struct watch_table *t, pid_t pid, uint64_t starttime, bool *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_key(pid, starttime, &t->v[mid]);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *found = false;
    return lo;
}

static struct instance *find(const struct watch_table *t, pid_t pid, uint64_t starttime)
{
    bool found;
    size_t i = locate(t, pid, starttime, &found);
    return found ? &t->v[i] : NULL;
}

/* The latest back-off among the failing instances of `pid` around index i (the table's order
 * puts them next to each other), other than i itself: *ret_strikes and *ret_next_ms are raised
 * to it. Returns whether there was one. */
static bool lineage_of(const struct watch_table *t, pid_t pid, size_t i, size_t skip,
                       int *ret_strikes, int64_t *ret_next_ms)
{
    bool any = false;
    size_t lo = i;
    while (lo > 0 && t->v[lo - 1].pid == pid)
        lo--;
    for (size_t j = lo; j < t->n && t->v[j].pid == pid; j++) {
        const struct instance *p = &t->v[j];
        if (j == skip || !p->failing)
            continue;
        any = true;
        if (p->strikes > *ret_strikes)
            *ret_strikes = p->strikes;
        if (p->next_ms > *ret_next_ms)
            *ret_next_ms = p->next_ms;
    }
    return any;
}

/* A new instance on a pid whose last instance failed (it exec'd, or a process with the same pid
 * and a new start time came) continues that lineage's back-off: a runtime that re-execs each
 * time an attach gives up gains nothing by it. */
static void inherit(struct watch_table *t, size_t i)
{
    struct instance *in = &t->v[i];
    if (lineage_of(t, in->pid, i, i, &in->strikes, &in->next_ms))
        in->failing = true;
}

/* The instance, created (seen in this generation, due since now_ms with its lineage's back-off,
 * nothing recorded) when absent, which *ret_created tells when not NULL; NULL when out of
 * memory. */
static struct instance *find_or_add(struct watch_table *t, pid_t pid, uint64_t starttime,
                                    int64_t now_ms, bool *ret_created)
{
    bool found;
    size_t i = locate(t, pid, starttime, &found);
    if (ret_created)
        *ret_created = !found;
    if (found)
        return &t->v[i];
    if (t->n == t->alloc) {
        size_t na = t->alloc ? t->alloc * 2 : 16;
        struct instance *nv = realloc(t->v, na * sizeof(*nv));
        if (!nv)
            return NULL;
        t->v = nv;
        t->alloc = na;
    }
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
    t->n++;
    struct instance *in = &t->v[i];
    memset(in, 0, sizeof(*in));
    in->pid = pid;
    in->starttime = starttime;
    in->gen = t->gen;
    in->next_ms = now_ms;
    inherit(t, i);
    return in;
}

/* What a created entry learns from the scan: its image, and how long it is young. */
static void settle_new(struct instance *in, uint64_t exec_fp, int64_t age_ms, int64_t now_ms)
{
    in->exec_fp = exec_fp;
    in->young_until_ms = now_ms + (age_ms < WATCH_YOUNG_MS ? WATCH_YOUNG_MS - age_ms : 0);
}

bool watch_outcome_final(enum attach_outcome o)
{
    switch (o) {
    case ATTACH_NOT_READY:
    case ATTACH_PROTOCOL:
    case ATTACH_NOT_DOTNET:
    case ATTACH_INTERNAL:
    case ATTACH_INTERRUPTED:
        return false; /* may succeed later: runtime starting, socket not there yet, busy */
    case ATTACH_DELIVERY:
        /* The content-addressed name may be taken by a file we will not trust (another uid
         * sharing the directory can plant it), or the directory full: neither is the target's
         * last word, and a squatter must not be able to end the watch for it. */
        return false;
    case ATTACH_INERT:
        /* The profiler, not the instance, is the reason: it stays a no-op on every retry, so the
         * refusal is reported once for the instance. */
        return true;
    default: return true;
    }
}

/* Does an outcome count against the pid's lineage (a successor inherits its back-off)? Not a
 * success, not a process that is gone (its pid is another's now), not our own stop. */
static bool outcome_failed(enum attach_outcome o)
{
    return !attach_outcome_ok(o) && o != ATTACH_ALREADY_ACTIVE && o != ATTACH_NOT_FOUND &&
           o != ATTACH_INTERRUPTED;
}

bool watch_table_due(const struct watch_table *t, pid_t pid, uint64_t starttime, int64_t now_ms)
{
    bool found;
    size_t i = locate(t, pid, starttime, &found);
    if (found)
        return !t->v[i].final && now_ms >= t->v[i].next_ms;
    int strikes = 0;
    int64_t next = INT64_MIN;
    lineage_of(t, pid, i, SIZE_MAX, &strikes, &next);
    return now_ms >= next;
}

bool watch_table_queue(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                       int64_t age_ms, int64_t now_ms, struct watch_waiting *ret)
{
    bool created;
    struct instance *in = find_or_add(t, pid, starttime, now_ms, &created);
    if (!in) {
        /* Out of memory: due now with no place in the queue, as without a table. */
        *ret = (struct watch_waiting){.pid = pid, .starttime = starttime, .since_ms = now_ms};
        return true;
    }
    if (created)
        settle_new(in, exec_fp, age_ms, now_ms);
    if (in->final || now_ms < in->next_ms)
        return false;
    *ret = (struct watch_waiting){
        .pid = pid,
        .starttime = starttime,
        .since_ms = in->next_ms,
        .retry = in->has_outcome || in->strikes > 0,
    };
    return true;
}

bool watch_table_final(const struct watch_table *t, pid_t pid, uint64_t starttime)
{
    const struct instance *in = find(t, pid, starttime);
    return in && in->final;
}

bool watch_table_tried(const struct watch_table *t, pid_t pid, uint64_t starttime)
{
    const struct instance *in = find(t, pid, starttime);
    return in && in->has_outcome;
}

bool watch_table_record(struct watch_table *t, pid_t pid, uint64_t starttime,
                        enum attach_outcome outcome, int64_t now_ms)
{
    return watch_table_record_attempt(t, pid, starttime, outcome, 0, now_ms);
}

bool watch_table_record_attempt(struct watch_table *t, pid_t pid, uint64_t starttime,
                                enum attach_outcome outcome, int64_t took_ms, int64_t now_ms)
{
    struct instance *in = find_or_add(t, pid, starttime, now_ms, NULL);
    if (!in)
        return false;
    bool is_new = !in->has_outcome || in->last != outcome;
    in->has_outcome = true;
    in->last = outcome;
    in->attempts++;
    in->failing = outcome_failed(outcome);
    if (in->failing && in->strikes < STRIKES_MAX)
        in->strikes++;
    /* A delivery conflict is never given up on (watch_outcome_final); it is retried seldom. */
    bool delivery = outcome == ATTACH_DELIVERY;
    in->final = watch_outcome_final(outcome) || (!delivery && in->attempts >= WATCH_RETRY_ATTEMPTS);
    int64_t cap = delivery ? WATCH_DELIVERY_RETRY_MAX_MS : WATCH_RETRY_MAX_MS;
    int64_t delay = WATCH_RETRY_FIRST_MS;
    for (int i = 1; i < in->strikes && delay < cap; i++)
        delay *= 2;
    if (delay > cap)
        delay = cap;
    /* An attempt that took long (a runtime that never answers costs a whole --timeout) waits at
     * least as long again: a silent instance holds an attach slot at most half of the time. */
    in->next_ms = now_ms + (took_ms > delay ? took_ms : delay);
    return is_new;
}

void watch_table_idle(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                      int64_t age_ms, int64_t now_ms)
{
    bool created;
    struct instance *in = find_or_add(t, pid, starttime, now_ms, &created);
    if (!in)
        return; /* out of memory: looked at again next scan, as without a table */
    if (created)
        settle_new(in, exec_fp, age_ms, now_ms);
    if (in->has_outcome)
        return; /* a retry keeps its own backoff */
    /* While young it stays due, and keeps its place in the queue (due since it was first seen,
     * or since its lineage's back-off ended); later it is looked at now and then. */
    if (now_ms >= in->young_until_ms && in->next_ms < now_ms + WATCH_IDLE_LOOK_MS)
        in->next_ms = now_ms + WATCH_IDLE_LOOK_MS;
}

void watch_table_wake_idle(struct watch_table *t, int64_t now_ms)
{
    for (size_t i = 0; i < t->n; i++) {
        struct instance *in = &t->v[i];
        if (!in->has_outcome && !in->final && !in->gone && in->next_ms > now_ms)
            in->next_ms = now_ms;
    }
}

void watch_table_requeue(struct watch_table *t, pid_t pid, uint64_t starttime, int64_t now_ms)
{
    struct instance *in = find(t, pid, starttime);
    if (in && in->next_ms < now_ms)
        in->next_ms = now_ms;
}

void watch_table_begin(struct watch_table *t)
{
    t->gen++;
}

void watch_table_seen(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                      int64_t now_ms)
{
    struct instance *in = find(t, pid, starttime);
    if (!in)
        return;
    in->gen = t->gen;
    in->gone = false;
    if (exec_fp == 0 || in->exec_fp == exec_fp)
        return;
    if (in->exec_fp != 0) {
        /* execve since: another program under the same pid and start time (a shell that
         * execs dotnet, or one runtime exec'ing into another) is a new instance, with the
         * lineage's back-off if this one was failing. */
        struct instance was = *in;
        memset(in, 0, sizeof(*in));
        in->pid = pid;
        in->starttime = starttime;
        in->gen = was.gen;
        in->next_ms = now_ms;
        in->young_until_ms = now_ms + WATCH_YOUNG_MS;
        if (was.failing) {
            in->failing = true;
            in->strikes = was.strikes;
            if (was.next_ms > now_ms)
                in->next_ms = was.next_ms;
        }
    }
    in->exec_fp = exec_fp;
}

size_t watch_table_sweep(struct watch_table *t, int64_t now_ms)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct instance *in = &t->v[i];
        if (in->gen == t->gen) {
            t->v[kept++] = *in;
            continue;
        }
        dropped += !in->gone;
        /* A failing instance that is gone is kept, for a process that comes on its pid, until
         * WATCH_LINEAGE_MS after its back-off ended: what it is kept for is bounded by the
         * attempts made in that time, not by the processes that ever lived. */
        if (in->failing && now_ms < in->next_ms + WATCH_LINEAGE_MS) {
            in->gone = true;
            t->v[kept++] = *in;
        }
    }
    t->n = kept;
    /* Give memory back after a burst of short-lived processes. */
    if (t->alloc > 64 && t->n < t->alloc / 4) {
        struct instance *nv = realloc(t->v, (t->alloc / 2) * sizeof(*nv));
        if (nv) {
            t->v = nv;
            t->alloc /= 2;
        }
    }
    return dropped;
}

size_t watch_table_size(const struct watch_table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->v[i].has_outcome && !t->v[i].gone;
    return n;
}

size_t watch_table_entries(const struct watch_table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !t->v[i].gone;
    return n;
}

uint64_t watch_exec_fp(const struct proc_stat *st)
{
    /* The image addresses mixed a word at a time (an FNV-1a step, then the high half folded
     * down: the addresses differ in their middle bits); all 0 (hidden, or an old kernel) means
     * unknown. Computed for every process at every scan: kept cheap. */
    uint64_t h = 1469598103934665603ULL;
    bool any = false;
    for (size_t i = 0; i < ARRAY_SIZE(st->exec_marks); i++) {
        any |= st->exec_marks[i] != 0;
        h = (h ^ st->exec_marks[i]) * 1099511628211ULL;
        h ^= h >> 29;
    }
    return any ? (h ? h : 1) : 0;
}
