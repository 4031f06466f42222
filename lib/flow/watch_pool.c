/* SPDX-License-Identifier: Apache-2.0 */
/* Attaches in flight, each in a child process of its own, and the result each child sends back
 * over a pipe. The bookkeeping (watch_pool_*) and the wire format (watch_result_*) are pure;
 * the jobs (watch_job_*) own the children, their pipes and pidfds. */
#include "flow/watch_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "base/util.h"
#include "deliver/place.h"
#include "flow/otel.h"
#include "flow/perfmap.h"
#include "flow/attach.h"
#include "flow/attempt.h"
#include "target/creds.h"
#include "target/procindex.h"

_Static_assert(offsetof(struct wire, rid_source) == 4 && offsetof(struct wire, res) == 8,
               "the wire layout watch_pool.h describes");

struct watch_pool *watch_pool_new(void)
{
    return calloc(1, sizeof(struct watch_pool));
}

void watch_pool_free(struct watch_pool *p)
{
    free(p);
}

size_t watch_pool_count(const struct watch_pool *p)
{
    return p->n;
}

bool watch_pool_busy(const struct watch_pool *p, pid_t pid, uint64_t starttime)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (p->v[i].used && p->v[i].pid == pid && p->v[i].starttime == starttime)
            return true;
    return false;
}

bool watch_pool_may_start(const struct watch_pool *p, bool retry)
{
    if (p->n >= WATCH_POOL_MAX)
        return false;
    if (!retry)
        return true;
    /* Retries (runtimes that already failed or timed out once) never take the last free slot:
     * a few silent runtimes retried again and again cannot keep a new one waiting. */
    size_t retries = 0;
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        retries += p->v[i].used && p->v[i].retry;
    return retries + 1 < WATCH_POOL_MAX;
}

static int cmp_waiting(const void *a, const void *b)
{
    const struct watch_waiting *x = a, *y = b;
    if (x->since_ms != y->since_ms)
        return x->since_ms < y->since_ms ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->starttime != y->starttime)
        return x->starttime < y->starttime ? -1 : 1;
    return 0;
}

void watch_pool_offer(struct watch_pool *p, struct watch_waiting *v, size_t n,
                      void (*take)(const struct watch_waiting *w, void *userdata), void *userdata)
{
    /* First come, first served: an order by pid would let processes with low pids that keep
     * failing (or exec again after every failure, each exec a new instance) hold every slot
     * ahead of a runtime that came later with a higher pid. */
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_waiting);
    for (size_t i = 0; i < n && p->n < WATCH_POOL_MAX; i++)
        if (watch_pool_may_start(p, v[i].retry))
            take(&v[i], userdata);
}

int watch_pool_add(struct watch_pool *p, pid_t pid, uint64_t starttime, bool retry,
                   int64_t deadline_ms)
{
    if (p->n >= WATCH_POOL_MAX || watch_pool_busy(p, pid, starttime))
        return -EBUSY;
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &p->v[i];
        if (j->used)
            continue;
        memset(j, 0, sizeof(*j));
        j->used = true;
        j->retry = retry;
        j->pid = pid;
        j->starttime = starttime;
        j->deadline_ms = deadline_ms;
        j->child = -1;
        j->pidfd = j->rfd = j->sweeper_pidfd = -1;
        j->sweeper_status = -1;
        p->n++;
        return (int)i;
    }
    return -EBUSY;
}

void watch_pool_remove(struct watch_pool *p, size_t slot)
{
    if (slot >= WATCH_POOL_MAX || !p->v[slot].used)
        return;
    p->v[slot].used = false;
    p->n--;
}

int64_t watch_pool_next_deadline(const struct watch_pool *p)
{
    int64_t d = INT64_MAX;
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (p->v[i].used && p->v[i].end == JOB_RUNNING && p->v[i].deadline_ms < d)
            d = p->v[i].deadline_ms;
    return d;
}

int64_t watch_attach_deadline_ms(int64_t timeout_ms)
{
    /* Two exchanges (ProcessInfo, AttachProfiler) each bounded by --timeout in the child, plus
     * reading /proc and copying the profiler: past that the child is stuck, not slow. */
    return 2 * timeout_ms + WATCH_ATTACH_SLACK_MS;
}

static void for_each_string(struct attach_result *r, void (*fn)(char *s, size_t size))
{
#define STR(f) fn((f), sizeof(f))
    STR(r->command_line);
    STR(r->tmpdir);
    STR(r->socket_name);
    STR(r->runtime_version);
    STR(r->runtime_rid);
    STR(r->os_arch);
    STR(r->target_rid);
    STR(r->variant);
    STR(r->delivered_path);
    STR(r->loader_path);
    STR(r->delivered_dir);
    STR(r->placement);
    STR(r->holder);
    STR(r->dependency_note);
    STR(r->sha256);
    STR(r->profiler_env);
    STR(r->vendor_env);
    STR(r->perfmap_path);
    STR(r->jitdump_path);
    STR(r->node_root);
    STR(r->otel_status_path);
    STR(r->otel.action);
    STR(r->otel.reason);
    STR(r->otel.next_step);
    STR(r->otel.instrumentations);
    STR(r->otel.traces);
    STR(r->otel.metrics);
    STR(r->otel.exporter);
    STR(r->otel.protocol);
    STR(r->otel.endpoint);
    STR(r->otel.service_name);
    STR(r->otel.agent_version);
    STR(r->error.msg);
    STR(r->error.hint);
    for (size_t i = 0; i < ENV_VARS_MAX; i++)
        STR(r->env[i]);
#undef STR
}

/* The sender's side: the bytes after a string's end are zero, not whatever a copy brought along
 * (nothing of the child's memory beyond the result leaves it). */
static void zero_tail(char *s, size_t size)
{
    size_t n = strnlen(s, size);
    if (n < size)
        memset(s + n, 0, size - n);
}

/* The receiver's side: a child parses hostile input, so what it sends is checked like input,
 * not trusted like our own memory: terminated, and control bytes replaced. */
static void clean_string(char *s, size_t size)
{
    s[size - 1] = '\0';
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static void clean_bool(bool *b)
{
    unsigned char c;
    memcpy(&c, b, 1);
    *b = c != 0;
}

size_t watch_result_wire_size(void)
{
    return sizeof(struct wire);
}

void watch_result_encode(const struct attach_result *r, void *buf)
{
    struct wire w;
    memset(&w, 0, sizeof(w));
    w.magic = WIRE_MAGIC;
    w.res = *r;
    for (uint32_t i = 0; i < ATTACH_RID_SOURCES; i++)
        if (r->rid_source == attach_rid_sources[i])
            w.rid_source = i + 1;
    w.res.rid_source = NULL;
    for_each_string(&w.res, zero_tail);
    memcpy(buf, &w, sizeof(w));
}

int watch_result_decode(const void *buf, size_t len, struct attach_result *ret)
{
    struct wire w;
    if (len != sizeof(w))
        return -EPROTO;
    memcpy(&w, buf, sizeof(w));
    if (w.magic != WIRE_MAGIC)
        return -EPROTO;
    struct attach_result *r = &w.res;
    int o;
    memcpy(&o, &r->outcome, sizeof(o));
    if (o < 0 || o > ATTACH_OUTCOME_LAST)
        r->outcome = ATTACH_INTERNAL;
    memcpy(&o, &r->kind, sizeof(o));
    if (o < 0 || o > ATTACH_KIND_LAST)
        r->kind = ATTACH_KIND_PROFILER;
    memcpy(&o, &r->otel.state, sizeof(o));
    if (o < 0 || o > OTEL_STATE_FAILED)
        r->otel.state = OTEL_STATE_NONE;
    r->rid_source = w.rid_source >= 1 && w.rid_source <= ATTACH_RID_SOURCES
                        ? attach_rid_sources[w.rid_source - 1]
                        : NULL;
    for_each_string(r, clean_string);
    clean_bool(&r->have_runtime);
    clean_bool(&r->mapped);
    clean_bool(&r->reused);
    clean_bool(&r->startup_load);
    clean_bool(&r->have_hresult);
    clean_bool(&r->removed);
    clean_bool(&r->died);
    clean_bool(&r->resume_owed);
    clean_bool(&r->resumed);
    if (r->env_count > ENV_VARS_MAX)
        r->env_count = ENV_VARS_MAX;
    if (r->env_sent > r->env_count)
        r->env_sent = r->env_count;
    *ret = *r;
    return 0;
}

/* The child's work, with the pin it took along: its result, or 71 (no memory) or 74 (the pipe
 * failed) for an exit status. */
static int child_attach(const struct attach_opts *o, struct target *tg, int wfd)
{
    _cleanup_(target_closep) struct target *pin = tg;
    _cleanup_free_ struct attach_result *res = calloc(1, sizeof(*res));
    _cleanup_free_ struct wire *w = calloc(1, sizeof(*w));
    if (!res || !w)
        return 71;
    if (o->perfmap)
        perfmap_run(o->perfmap, pin, res);
    else if (o->otel)
        otel_run(o->otel, pin, res);
    else
        attach_run(o, pin, res);
    watch_result_encode(res, w);
    return util_write_all(wfd, w, sizeof(*w)) < 0 ? 74 : 0;
}

/* In a child of the watcher: takes the pin of `slot` out of the pool, then releases everything
 * of the watcher's it does not need: the other jobs' fds and pins, the table, the pool, the
 * index (the socket directories of other processes, held open); valgrind checks a child's
 * leaks at its exit too. */
static void child_release(struct watch_table *t, struct watch_pool *pool, struct procindex *x,
                          size_t slot, struct target *ret_pin)
{
    *ret_pin = *util_take_ptr(&pool->v[slot].pinned);
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (pool->v[i].used) {
            watch_job_release(&pool->v[i]);
            util_closep(&pool->v[i].sweeper_pidfd);
        }
    watch_pool_free(pool);
    watch_table_free(t);
    procindex_free(x); /* its copy only: the index's helper stays the watcher's */
}

/*
 * The child attaches to the process the scan pinned (its pidfd and /proc dirfd are inherited,
 * so it is that process or nothing), with the nonce the watcher chose, tightens its own seccomp
 * stages through the attach's on_stage, sends the fixed-size result and leaves with _exit: no
 * atexit handler, no stdio flush of the watcher's buffers, nothing printed or reported from here.
 */
static _Noreturn void child_main(const struct watch_opts *o, struct watch_table *t,
                                 struct watch_pool *pool, struct procindex *x, size_t slot, int wfd)
{
    struct attach_opts ao = o->attach;
    char nonce[sizeof(pool->v[slot].nonce)];
    memcpy(nonce, pool->v[slot].nonce, sizeof(nonce));
    ao.nonce = nonce;
    struct target tg;
    child_release(t, pool, x, slot, &tg);
    _exit(child_attach(&ao, &tg, wfd));
}

int watch_job_start(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                    struct procindex *x, size_t slot, struct cla_error *e)
{
    struct job *j = &pool->v[slot];
    int r = deliver_new_nonce(j->nonce);
    if (r < 0) {
        target_closep(&j->pinned);
        return err_setsys(e, r, "watch: a nonce for the attach to pid %d", (int)j->pid);
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        r = err_setsys(e, -errno, "watch: a pipe for the attach to pid %d", (int)j->pid);
        target_closep(&j->pinned);
        return r;
    }
    j->started_ms = util_now_ms();
    pid_t child = fork();
    if (child < 0) {
        r = err_setsys(e, -errno, "watch: fork for the attach to pid %d", (int)j->pid);
        close(p[0]);
        close(p[1]);
        target_closep(&j->pinned);
        return r;
    }
    if (child == 0) {
        close(p[0]);
        child_main(o, t, pool, x, slot, p[1]);
    }
    close(p[1]);
    j->child = child;
    j->rfd = p[0];
    j->pidfd = sys_pidfd_open(child, 0);
    return 0;
}

bool watch_job_needs_sweep(const struct job *j)
{
    if (j->swept || j->child <= 0 || !j->reaped || !j->pinned)
        return false;
    return j->end != JOB_RUNNING || WIFSIGNALED(j->status);
}

/* The sweeper's work, as the target's user: the temporaries removed and, for watch --startup,
 * the ResumeRuntime the killed child may have owed. Its exit status says what it could do
 * (SWEEPER_*). */
static int sweeper_work(const struct watch_opts *o, struct target *tg, uid_t uid, const char *nonce)
{
    _cleanup_(target_closep) struct target *pin = tg;
    struct creds_target ct;
    struct creds_saved cs = {0};
    creds_target_of(pin->procfd, &pin->status, &ct);
    if (creds_check(&ct, NULL) < 0 || creds_become(&ct, &cs, NULL) < 0)
        return SWEEPER_NO_CREDS;
    int r = SWEEPER_NO_ROOT;
    if (target_open_root(pin, NULL) == 0) {
        struct place_opts po = {.user_dir = o->attach.target_dir, .uid = uid, .nonce = nonce};
        (void)place_sweep(pin, &po);
        r = 0;
        /* The child may have been killed between StartupProfiler and ResumeRuntime (or before
         * either): the resume guarantee holds per child, so it is sent here, within the time
         * the watcher gives a sweeper. */
        if (o->attach.startup) {
            int sr = attempt_resume_pinned(pin, util_now_ms() + WATCH_SWEEP_WAIT_MS / 2);
            r |= sr > 0 ? SWEEPER_RESUMED : sr < 0 ? SWEEPER_RESUME_FAILED : 0;
        }
    }
    creds_restore(&cs);
    return r;
}

int watch_job_sweep_start(const struct watch_opts *o, struct watch_table *t,
                          struct watch_pool *pool, struct procindex *x, size_t slot)
{
    struct job *j = &pool->v[slot];
    j->swept = true;
    pid_t child = fork();
    if (child < 0)
        return -errno;
    if (child == 0) {
        char nonce[sizeof(j->nonce)];
        memcpy(nonce, j->nonce, sizeof(nonce));
        uid_t uid = j->uid;
        struct target tg;
        child_release(t, pool, x, slot, &tg);
        _exit(sweeper_work(o, &tg, uid, nonce));
    }
    j->sweeper = child;
    j->sweeper_status = -1;
    j->sweeper_pidfd = sys_pidfd_open(child, 0);
    return 0;
}

/* Reaps `*pid` if it has ended; true once it has (or is not ours to wait for). Its wait status
 * goes to *ret_status when given and known. */
static bool reap_now(pid_t *pid, int *ret_status)
{
    if (*pid <= 0)
        return true;
    pid_t r;
    int st = 0;
    do
        r = waitpid(*pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == *pid && ret_status)
        *ret_status = st;
    if (r == *pid || (r < 0 && errno == ECHILD))
        *pid = 0;
    return *pid == 0;
}

void watch_pool_reap_strays(struct watch_pool *pool)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        (void)reap_now(&pool->strays[i], NULL);
}

void watch_pool_sweep_wait(struct watch_pool *pool, int64_t until_ms)
{
    for (;;) {
        struct pollfd fds[WATCH_POOL_MAX];
        size_t nfds = 0;
        bool pending = false;
        for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
            struct job *j = &pool->v[i];
            if (!j->used || reap_now(&j->sweeper, &j->sweeper_status))
                continue;
            pending = true;
            if (j->sweeper_pidfd >= 0)
                fds[nfds++] = (struct pollfd){.fd = j->sweeper_pidfd, .events = POLLIN};
        }
        int64_t now = util_now_ms();
        if (!pending || now >= until_ms)
            break;
        int64_t left = until_ms - now;
        (void)poll(fds, nfds, nfds ? (int)left : (int)(left < 10 ? left : 10));
    }
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        /* Past its deadline: killed (through its pidfd, as an attach's child is), and if it
         * sleeps uninterruptibly, reaped later rather than waited for. */
        if (j->sweeper > 0 && j->sweeper_pidfd >= 0)
            (void)sys_pidfd_send_signal(j->sweeper_pidfd, SIGKILL, NULL, 0);
        util_closep(&j->sweeper_pidfd);
        if (reap_now(&j->sweeper, &j->sweeper_status))
            continue;
        for (size_t k = 0; k < WATCH_POOL_MAX; k++)
            if (pool->strays[k] <= 0) {
                pool->strays[k] = j->sweeper;
                break;
            }
        j->sweeper = 0;
    }
}

void watch_job_result_of(const struct job *j, enum attach_outcome outcome, int64_t now,
                         struct attach_result *r)
{
    memset(r, 0, sizeof(*r));
    r->outcome = outcome;
    r->pid = j->pid;
    r->nspid = j->nspid;
    r->uid = j->uid;
    r->gid = j->gid;
    r->starttime = j->starttime;
    memcpy(r->command_line, j->command_line, sizeof(r->command_line));
    r->duration_ms = now - j->started_ms;
}

bool watch_job_complete(const struct job *j)
{
    return j->got == sizeof(j->wire) && !j->excess && j->wire.magic == WIRE_MAGIC;
}

/* The child's result, made safe to print and report (watch_result_decode); the target's identity
 * is the one the watcher pinned, whatever the child says. */
static void result_from_wire(const struct job *j, struct attach_result *r)
{
    if (watch_result_decode(&j->wire, j->got, r) < 0) {
        memset(r, 0, sizeof(*r));
        r->outcome = ATTACH_INTERNAL;
    }
    r->pid = j->pid;
    r->starttime = j->starttime;
}

void watch_job_drain(struct job *j)
{
    while (j->rfd >= 0 && !j->eof) {
        struct pollfd p = {.fd = j->rfd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0)
            return;
        char extra[64];
        bool full = j->got == sizeof(j->wire);
        ssize_t n = full ? read(j->rfd, extra, sizeof(extra))
                         : read(j->rfd, (char *)&j->wire + j->got, sizeof(j->wire) - j->got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            j->eof = true;
            return;
        }
        if (full) {
            /* More than a result: not ours to read on (a child that writes without end would
             * keep the watcher here); it is killed, and reported as malformed. */
            j->excess = j->eof = true;
            if (j->pidfd >= 0)
                (void)sys_pidfd_send_signal(j->pidfd, SIGKILL, NULL, 0);
            return;
        }
        j->got += (size_t)n;
    }
}

bool watch_job_reap(struct job *j, bool block)
{
    if (j->reaped || j->child <= 0) { /* never started: nothing to wait for */
        j->reaped = true;
        return true;
    }
    int st;
    pid_t r;
    do
        r = waitpid(j->child, &st, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == j->child || (r < 0 && errno == ECHILD)) {
        j->status = r == j->child ? st : 0;
        j->reaped = true;
    }
    return j->reaped;
}

void watch_job_kill(struct job *j, enum job_end why)
{
    if (j->end == JOB_RUNNING)
        j->end = why;
    /* Only through the pidfd: the child is ours and unreaped, but a pid in a kill() call is a
     * number the filter cannot restrict, so kill(2) is not on the seccomp list at all. */
    if (j->pidfd >= 0 && !j->reaped)
        (void)sys_pidfd_send_signal(j->pidfd, SIGKILL, NULL, 0);
}

void watch_job_release(struct job *j)
{
    util_closep(&j->rfd);
    util_closep(&j->pidfd);
    target_closep(&j->pinned);
}

/* What the sweeper did about a resume the killed child may have owed (watch --startup). */
static void note_sweeper_resume(const struct job *j, struct attach_result *r)
{
    if (j->sweeper_status < 0 || !WIFEXITED(j->sweeper_status))
        return;
    int s = WEXITSTATUS(j->sweeper_status);
    if (s == SWEEPER_NO_CREDS || !(s & (SWEEPER_RESUMED | SWEEPER_RESUME_FAILED)))
        return;
    r->resume_owed = true;
    r->resumed = s & SWEEPER_RESUMED;
    r->resumed_after_ms = r->duration_ms;
    char hint[sizeof(r->error.hint)];
    memcpy(hint, r->error.hint, sizeof(hint));
    err_hint(&r->error, "%s%s%s", hint, hint[0] ? "; " : "",
             r->resumed ? "the app, whose environment pauses it at startup, was sent "
                          "ResumeRuntime after the attach was abandoned"
                        : "the app's environment pauses it at startup, and ResumeRuntime sent "
                          "after the attach was abandoned was not answered: it may still be "
                          "paused");
}

static void result_without_wire(const struct watch_opts *o, const struct job *j, int64_t now,
                                struct attach_result *r)
{
    if (j->end == JOB_INTERRUPTED) {
        watch_job_result_of(j, ATTACH_INTERRUPTED, now, r);
        err_set(&r->error, -EINTR,
                "the watcher was stopped (SIGTERM or SIGINT) while attaching to pid %d: the "
                "attach was abandoned after %lld ms",
                (int)j->pid, (long long)r->duration_ms);
        err_hint(&r->error, "the next watcher tries this process again (the attach may have "
                            "been abandoned before or after the runtime got AttachProfiler)");
    } else if (j->end == JOB_TIMED_OUT) {
        watch_job_result_of(j, ATTACH_PROTOCOL, now, r);
        err_set(&r->error, -ETIMEDOUT,
                "the attach to pid %d did not end within %lld ms (twice --timeout and %d ms): "
                "abandoned",
                (int)j->pid, (long long)watch_attach_deadline_ms(o->attach.timeout_ms),
                WATCH_ATTACH_SLACK_MS);
        err_hint(&r->error, "the runtime does not answer; it is tried again with backoff");
    } else if (j->excess) {
        watch_job_result_of(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO,
                "the attach process for pid %d sent a malformed result (%zu bytes%s, %zu expected)",
                (int)j->pid, j->got, j->excess ? " and more" : "", sizeof(j->wire));
    } else if (j->reaped && WIFSIGNALED(j->status)) {
        int sig = WTERMSIG(j->status);
        watch_job_result_of(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EINTR, "the attach process for pid %d died of signal %d (%s)",
                (int)j->pid, sig, strsignal(sig));
        if (sig == SIGSYS)
            err_hint(&r->error, "a syscall outside clrattach's seccomp allow-list: the kernel "
                                "log (dmesg, audit type=1326) names it; please report it");
    } else if (j->got > 0) {
        watch_job_result_of(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO,
                "the attach process for pid %d sent a malformed result (%zu bytes%s, %zu expected)",
                (int)j->pid, j->got, j->excess ? " and more" : "", sizeof(j->wire));
    } else {
        watch_job_result_of(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO, "the attach process for pid %d ended (%s %d) without a result",
                (int)j->pid, j->reaped ? "exit status" : "not reaped",
                j->reaped && WIFEXITED(j->status) ? WEXITSTATUS(j->status) : -1);
    }
}

void watch_job_result(const struct watch_opts *o, const struct job *j, struct attach_result *r)
{
    int64_t now = util_now_ms();
    if (watch_job_complete(j) && j->end != JOB_INTERRUPTED) {
        result_from_wire(j, r);
        return;
    }
    result_without_wire(o, j, now, r);
    note_sweeper_resume(j, r);
}
