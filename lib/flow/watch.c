/* SPDX-License-Identifier: Apache-2.0 */
/* The watcher's loop: scan /proc, select, schedule (the table, watch_table.c), start attaches
 * (the pool, watch_pool.c), wait for them, for an event (a socket created, a new pid) or for the
 * next scan, stop on a signal. */
#include "flow/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/opfile.h"
#include "base/util.h"
#include "flow/watch_discover.h"
#include "target/creds.h"
#include "target/diag_socket.h"
#include "target/proc_parse.h"
#include "target/procindex.h"
#include "target/target.h"

/* Is the process in the mount namespace `own` (device and inode of ns/mnt)? Unknown counts as
 * yes: a process whose namespace cannot be read is not selected as "another container". */
static bool in_mntns(const struct target *tg, const struct stat *own)
{
    struct stat st;
    if (fstatat(tg->procfd, "ns/mnt", &st, 0) < 0)
        return true;
    return st.st_dev == own->st_dev && st.st_ino == own->st_ino;
}

/* Does /proc/<pid>/cgroup hold the selector's string? Read through the pinned proc dirfd. */
static bool cgroup_matches(const struct target *tg, const char *want)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    if (target_read_file(tg, "cgroup", PROC_CGROUP_MAX, &buf, &len, NULL) < 0)
        return false;
    return memmem(buf, len, want, strlen(want)) != NULL;
}

static bool selector_matches(const struct target *tg, const struct watch_selector *sel,
                             const struct stat *own_mntns)
{
    if (sel->have_uid && tg->status.uid[1] != sel->uid)
        return false;
    if (sel->cmdline && !strstr(tg->cmdline, sel->cmdline))
        return false;
    if (sel->other_mntns && in_mntns(tg, own_mntns))
        return false;
    if (sel->cgroup && !cgroup_matches(tg, sel->cgroup))
        return false;
    return true;
}

/* Records an outcome in the table and reports it when it is new for the instance. */
static void handle_result(const struct watch_opts *o, struct watch_table *t,
                          const struct attach_result *res, int64_t took_ms)
{
    pid_t pid = res->pid;
    uint64_t key = res->starttime;
    int64_t now = util_now_ms();
    if (res->outcome == ATTACH_INTERRUPTED) {
        if (o->on_result)
            o->on_result(res, false, o->userdata);
        return;
    }
    /* A runtime's socket is up a moment before it can take a profiler: while the process is
     * young, that answer is tried again from the next scan, not reported; it had its turn, so
     * it waits behind those already waiting (a young process that says so on purpose cannot
     * take slot after slot ahead of them). */
    if (res->outcome == ATTACH_NOT_READY && res->have_hresult &&
        res->hresult == ATTACH_HR_NOT_YET_AVAILABLE && procindex_age_ms(key) < WATCH_YOUNG_MS) {
        watch_table_requeue(t, pid, key, now);
        return;
    }
    bool is_new = watch_table_record_attempt(t, pid, key, res->outcome, took_ms, now);
    if (is_new && o->on_result)
        o->on_result(res, !watch_table_final(t, pid, key), o->userdata);
}

/* The options a job runs with: its own (watch_opts.choose), else the loop's. */
static const struct watch_opts *job_opts(const struct watch_opts *o, const struct job *j)
{
    return j->opts ? j->opts : o;
}

/* Ends a job whose child has been reaped (or abandoned): sweep after a run that could not clean
 * up after itself (bounded by WATCH_SWEEP_WAIT_MS), report, release, free the slot. */
static void job_finish(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                       struct procindex *x, size_t slot)
{
    struct job *j = &pool->v[slot];
    watch_job_drain(j);
    if (watch_job_needs_sweep(j) && watch_job_sweep_start(job_opts(o, j), t, pool, x, slot) == 0)
        watch_pool_sweep_wait(pool, util_now_ms() + WATCH_SWEEP_WAIT_MS);
    _cleanup_free_ struct attach_result *res = malloc(sizeof(*res));
    if (res)
        watch_job_result(job_opts(o, j), j, res);
    /* A runtime answered: the files it was started from are watched for the next start. */
    if (res && res->have_runtime && j->pinned)
        (void)procindex_hint_runtime(x, j->pinned, NULL);
    watch_job_release(j);
    if (res)
        handle_result(o, t, res, util_now_ms() - j->started_ms);
    watch_pool_remove(pool, slot);
}

/* Takes a slot for the pinned process `tg`, and the pin with it (closed when no slot is left):
 * the attach starts once the scan is over (start_pending). */
static void reserve(const struct watch_opts *o, const struct watch_opts *jo,
                    struct watch_pool *pool, struct target *tg, bool retry)
{
    _cleanup_(target_closep) struct target *pin = tg;
    int64_t now = util_now_ms();
    int slot = watch_pool_add(pool, tg->pid, tg->stat.starttime, retry,
                              now + watch_attach_deadline_ms(o->attach.timeout_ms));
    if (slot < 0)
        return;
    struct job *j = &pool->v[slot];
    j->opts = jo;
    j->started_ms = now;
    j->nspid = tg->status.nspid;
    j->uid = tg->status.uid[1];
    j->gid = tg->status.gid[1];
    memcpy(j->command_line, tg->cmdline, sizeof(j->command_line));
    j->tg = *util_take_ptr(&pin);
    j->pinned = &j->tg;
}

/* Starts the attach of a reserved slot in a child (watch_job_start). An attach that cannot
 * start (no fork, no pipe) is an internal error, retried with backoff. */
static void start_attach(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                         struct procindex *x, size_t slot)
{
    struct job *j = &pool->v[slot];
    struct cla_error e = {0};
    if (watch_job_start(job_opts(o, j), t, pool, x, slot, &e) == 0)
        return;
    _cleanup_free_ struct attach_result *res = malloc(sizeof(*res));
    if (res) {
        watch_job_result_of(j, ATTACH_INTERNAL, util_now_ms(), res);
        res->error = e;
        handle_result(o, t, res, 0);
    }
    watch_pool_remove(pool, slot);
}

/* Starts every attach the last scan reserved (pinned, no child yet). */
static void start_pending(const struct watch_opts *o, struct watch_table *t,
                          struct watch_pool *pool, struct procindex *x)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (pool->v[i].used && pool->v[i].pinned && pool->v[i].child <= 0)
            start_attach(o, t, pool, x, i);
}

/* What a scan offers a slot with (watch_pool_offer). */
struct scan_ctx {
    const struct watch_opts *o;
    struct watch_table *t;
    struct watch_pool *pool;
    struct procindex *x;
    const struct stat *own_mntns;
    pid_t self; /* our pid: a process whose parent we are is never a target */
};

/* A process of our uid that we cannot read for its gid alone is said once on stderr, with the
 * group to set (creds.h), not at every look: remembered by pid and start time, the last
 * UNREADABLE_SAID of them. */
#define UNREADABLE_SAID 64
static void say_unreadable_once(const struct target *tg)
{
    static struct {
        pid_t pid;
        uint64_t starttime;
    } said[UNREADABLE_SAID];
    static size_t next;
    struct cla_error e = {0};
    for (size_t i = 0; i < UNREADABLE_SAID; i++)
        if (said[i].pid == tg->pid && said[i].starttime == tg->stat.starttime)
            return;
    if (!creds_explain_gid_mismatch(tg->pid, &tg->status, &e))
        return;
    said[next].pid = tg->pid;
    said[next].starttime = tg->stat.starttime;
    next = (next + 1) % UNREADABLE_SAID;
    dprintf(STDERR_FILENO, "clrattach: watch: %s; %s\n", e.msg, e.hint);
}

/* A slot is free for the due instance `w`: pin it, check the selectors and look for its socket,
 * and reserve the slot if it is to be attached; else it is idle (looked at again later). */
static void offer_slot(const struct watch_waiting *w, void *userdata)
{
    struct scan_ctx *c = userdata;
    const struct procindex_proc *p = procindex_at(c->x, w->ref);
    const struct proc_stat *st = &p->stat;
    int64_t now = util_now_ms();
    uint64_t fp = watch_exec_fp(st);

    /* The selectors are checked on the pinned process, and that same pin (pidfd, /proc dirfd,
     * start time) is what the attach uses: a process that takes the pid afterwards is never
     * attached in its place. */
    struct target tg;
    if (target_open(c->o->proc_dirfd, p->pid, &tg, NULL) < 0) {
        watch_table_idle(c->t, p->pid, st->starttime, fp, procindex_age_ms(st->starttime), now);
        return;
    }
    _cleanup_(target_closep) struct target *pinned = &tg;
    /* Our own children (the index's filesystem helper, the attach jobs) share our command line
     * and TMPDIR: a stale socket name that a former process with one of their pids left there
     * must not make one of them a target. */
    bool match = tg.stat.starttime == st->starttime && tg.stat.ppid != c->self &&
                 selector_matches(&tg, &c->o->sel, c->own_mntns);
    const struct watch_opts *jo = NULL;
    if (match && c->o->choose)
        match = (jo = c->o->choose(&tg, c->o->userdata)) != NULL;
    struct diag_socket s = {.state = SOCKET_ABSENT};
    /* The look for its socket is an access to the target: made as its user (creds.h), by the
     * index's helper (stall isolation: a filesystem that stops answering holds the helper, never
     * this loop; the process is then UNREACHABLE for a while). */
    if (match && procindex_socket_find(c->x, &tg, &s, NULL) < 0)
        s.state = SOCKET_ABSENT;
    /* Not .NET (yet), or not ours: looked at every scan while young, then now and then. */
    if (!match || (s.state != SOCKET_FOUND && s.state != SOCKET_FOUND_UNKEYED)) {
        if (match && !tg.environ)
            say_unreadable_once(&tg);
        watch_table_idle(c->t, p->pid, st->starttime, fp, procindex_age_ms(st->starttime), now);
        return;
    }
    reserve(c->o, jo, c->pool, util_take_ptr(&pinned), w->retry);
}

/* One pass over /proc through the index. Lists the due instances, then offers the free slots to
 * them in the order they became due (watch_pool_offer; in pid order, processes that came first
 * and keep failing would always be ahead); never waits for an attach. Only a process the index
 * points at (a socket name for its namespace pid, or nothing known) is considered: a process
 * with no socket costs nothing here. One that is due but gets no slot keeps its place. */
static int scan(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                struct procindex *x, const struct stat *own_mntns, pid_t self, struct cla_error *e)
{
    int r = procindex_scan(x, util_now_ms(), e);
    if (r < 0)
        return r;
    size_t count = procindex_count(x);
    /* Made for the first process the index points at (on an idle node, none: this loop over
     * every process is most of a scan's own time). Out of memory: no attach starts this scan
     * (the table is still kept up to date). */
    _cleanup_free_ struct watch_waiting *waiting = NULL;
    bool nomem = false;
    size_t n = 0;
    int64_t now = util_now_ms();
    watch_table_begin(t);
    for (size_t i = 0; i < count; i++) {
        const struct procindex_proc *p = procindex_at(x, i);
        const struct proc_stat *st = &p->stat;
        pid_t pid = p->pid;
        uint64_t fp = watch_exec_fp(st);
        watch_table_seen(t, pid, st->starttime, fp, now);
        if (!(p->flags & (PROCINDEX_SOCKET | PROCINDEX_UNKNOWN)))
            continue;
        if (watch_pool_busy(pool, pid, st->starttime))
            continue;
        if (o->sel.comm && strcmp(st->comm, o->sel.comm) != 0)
            continue;
        if (!waiting && !nomem)
            nomem = !(waiting = calloc(count - i, sizeof(*waiting)));
        struct watch_waiting *w = waiting ? &waiting[n] : NULL;
        if (w &&
            watch_table_queue(t, pid, st->starttime, fp, procindex_age_ms(st->starttime), now, w)) {
            w->ref = i;
            n++;
        }
    }
    struct scan_ctx c = {
        .o = o,
        .t = t,
        .pool = pool,
        .x = x,
        .own_mntns = own_mntns,
        .self = self,
    };
    watch_pool_offer(pool, waiting, n, offer_slot, &c);
    watch_table_sweep(t, util_now_ms());
    return 0;
}

static int create_ready_file(const char *path, struct cla_error *e)
{
    /* An operator's path, written as root and often in a directory the app can write too: a
     * link, FIFO or device planted there is refused, never followed or waited on (opfile.h). */
    int fd = opfile_open_for_write(path, "--ready-file", O_CREAT | O_TRUNC, 0644, e);
    if (fd < 0)
        return fd;
    (void)util_write_all(fd, "ready\n", 6);
    close(fd);
    return 0;
}

/* Waits until a child sends or ends, a deadline passes, `until_ms` comes, an event fd `evfd[k]`
 * (the directories', the hints'; -1: not waited on) is readable (ret_event[k]) or a stop
 * signal arrives (the only place SIGTERM/SIGINT are unblocked: `orig`), then handles what
 * happened to the children. */
static void wait_and_handle(const struct watch_opts *o, struct watch_table *t,
                            struct watch_pool *pool, struct procindex *x, int64_t until_ms,
                            const sigset_t *orig, const int evfd[2], bool ret_event[2],
                            bool *ret_look)
{
    struct pollfd fds[2 * WATCH_POOL_MAX + 2 + WATCH_EXTRA_FDS_MAX];
    size_t nfds = 0, nextra = 0;
    if (o->poll_fds)
        nfds = nextra = o->poll_fds(fds, WATCH_EXTRA_FDS_MAX, &until_ms, o->userdata);
    size_t evi[2];
    for (int k = 0; k < 2; k++) {
        evi[k] = nfds;
        if (evfd[k] >= 0)
            fds[nfds++] = (struct pollfd){.fd = evfd[k], .events = POLLIN};
    }
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        if (j->rfd >= 0 && !j->eof)
            fds[nfds++] = (struct pollfd){.fd = j->rfd, .events = POLLIN};
        if (j->pidfd >= 0)
            fds[nfds++] = (struct pollfd){.fd = j->pidfd, .events = POLLIN};
    }
    int64_t now = util_now_ms();
    int64_t until = watch_pool_next_deadline(pool);
    if (until_ms < until)
        until = until_ms;
    int64_t wait = until > now ? until - now : 0;
    if (wait > 60000)
        wait = 60000;
    struct timespec ts = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000};
    int n = ppoll(fds, nfds, &ts, orig);
    for (int k = 0; k < 2; k++)
        ret_event[k] = n > 0 && evfd[k] >= 0 && (fds[evi[k]].revents & POLLIN);
    if (n <= 0)
        for (size_t i = 0; i < nextra; i++)
            fds[i].revents = 0;
    /* The hook's choices may have changed: the idle processes are looked at by the next scan. */
    *ret_look = o->after_poll && o->after_poll(fds, nextra, o->userdata);
    if (*ret_look)
        watch_table_wake_idle(t, util_now_ms());

    watch_pool_reap_strays(pool);
    now = util_now_ms();
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        watch_job_drain(j);
        /* With a pidfd, its readiness says the child has exited; without, the pipe's end does
         * (the child's write end is its alone: closed in the watcher right after the fork). */
        bool ended = false;
        if (j->pidfd >= 0) {
            struct pollfd p = {.fd = j->pidfd, .events = POLLIN};
            ended = poll(&p, 1, 0) > 0 && watch_job_reap(j, false);
        } else if (j->eof) {
            ended = watch_job_reap(j, true);
        }
        if (ended) {
            job_finish(o, t, pool, x, i);
        } else if (j->end == JOB_RUNNING && now >= j->deadline_ms) {
            watch_job_kill(j, JOB_TIMED_OUT);
            if (j->pidfd < 0)
                j->deadline_ms = INT64_MAX; /* cannot kill it: its own deadlines end it */
        }
    }
}

/* Stop: every attach still in flight is killed, reaped within a short bound, swept after (the
 * sweepers run side by side, bounded together by WATCH_SWEEP_WAIT_MS) and reported once as
 * interrupted (one that had already sent its whole result is reported with that). */
static void abandon_all(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                        struct procindex *x)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        watch_job_drain(j);
        watch_job_kill(j, watch_job_complete(j) ? JOB_RUNNING : JOB_INTERRUPTED);
    }
    /* SIGKILL ends a process within moments unless it sleeps uninterruptibly (a hung
     * filesystem); the stop is not held up for such a one, which init reaps later. */
    int64_t until = util_now_ms() + WATCH_REAP_WAIT_MS;
    for (;;) {
        bool pending = false;
        struct pollfd fds[WATCH_POOL_MAX];
        size_t nfds = 0;
        for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
            struct job *j = &pool->v[i];
            if (!j->used || watch_job_reap(j, false))
                continue;
            pending = true;
            if (j->pidfd >= 0)
                fds[nfds++] = (struct pollfd){.fd = j->pidfd, .events = POLLIN};
        }
        int64_t now = util_now_ms();
        if (!pending || now >= until)
            break;
        (void)poll(fds, nfds, nfds ? (int)(until - now) : 10);
    }
    bool sweeping = false;
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (j->used && watch_job_needs_sweep(j))
            sweeping |= watch_job_sweep_start(job_opts(o, j), t, pool, x, i) == 0;
    }
    if (sweeping)
        watch_pool_sweep_wait(pool, util_now_ms() + WATCH_SWEEP_WAIT_MS);
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (pool->v[i].used)
            job_finish(o, t, pool, x, i);
    watch_pool_reap_strays(pool);
}

int watch_run(const struct watch_opts *o, struct cla_error *e)
{
    struct watch_table *t = watch_table_new();
    struct watch_pool *pool = watch_pool_new();
    struct procindex *x = procindex_new(o->proc_dirfd, true);
    if (!t || !pool || !x) {
        watch_table_free(t);
        watch_pool_free(pool);
        procindex_free(x);
        return err_set(e, -ENOMEM, "out of memory");
    }
    /* SIGTERM/SIGINT stay blocked while we work and are only delivered inside ppoll(), where
     * the watcher waits for its children and the next scan: a stop is seen within one wait,
     * and a scan never blocks on an attach (each runs in its own process). */
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &orig);
    /* stall isolation: the index's waits for its helper let a stop in as ppoll here does, and
     * a directory that stops answering is said once */
    procindex_set_interrupt(x, &orig, o->stop);
    procindex_on_unreachable(x, o->on_warning, o->userdata);
    pid_t self = getpid();
    int r = 0;
    /* Our own mount namespace, for --other-containers: read once, before any target. */
    struct stat own_mntns = {0};
    if (o->sel.other_mntns) {
        char path[48];
        snprintf(path, sizeof(path), "%d/ns/mnt", (int)self);
        if (fstatat(o->proc_dirfd, path, &own_mntns, 0) < 0) {
            r = err_setsys(e, -errno, "watch: our own mount namespace (%s)", path);
            goto out;
        }
    }
    struct discover d;
    discover_init(&d, x,
                  o->pid_poll_ms == 0 ? DISCOVER_TICK_MAX_MS
                                      : (o->pid_poll_ms < 0 ? 0 : o->pid_poll_ms));
    int64_t scans = 0, next_scan = util_now_ms();
    while (!*o->stop) {
        bool more = o->max_scans == 0 || scans < o->max_scans;
        bool full = more && util_now_ms() >= next_scan;
        if (full || (more && discover_due(&d, util_now_ms()))) {
            int64_t began = discover_cpu_us();
            r = scan(o, t, pool, x, &own_mntns, self, e);
            if (r == -EINTR && *o->stop) { /* a stop while the index waited for its helper */
                r = 0;
                break;
            }
            if (r < 0) {
                err_prefix(e, "watch: scan");
                break;
            }
            start_pending(o, t, pool, x);
            discover_scanned(&d, x, began);
            if (!full)
                continue; /* asked for by an event: the interval's scans keep their times */
            if (scans++ == 0 && o->ready_file && (r = create_ready_file(o->ready_file, e)) < 0)
                break;
            next_scan = util_now_ms() + o->interval_ms;
            more = o->max_scans == 0 || scans < o->max_scans;
        }
        /* A bounded run (max_scans) ends once its last scan's attaches have. */
        if (!more && watch_pool_count(pool) == 0)
            break;
        int64_t until = more ? discover_until(&d, next_scan) : INT64_MAX;
        bool event[2] = {false, false}, look = false;
        size_t running = watch_pool_count(pool);
        int evfd[2] = {more ? discover_fd(&d) : -1,
                       more ? discover_hint_fd(&d, util_now_ms()) : -1};
        wait_and_handle(o, t, pool, x, until, &orig, evfd, event, &look);
        if (more)
            discover_look(&d, x, event[0], event[1], look || watch_pool_count(pool) < running,
                          util_now_ms());
    }
    abandon_all(o, t, pool, x);
out:
    sigprocmask(SIG_SETMASK, &orig, NULL);
    if (o->ret_tracked)
        *o->ret_tracked = watch_table_size(t);
    if (o->ret_known)
        *o->ret_known = watch_table_entries(t);
    watch_table_free(t);
    watch_pool_free(pool);
    procindex_free(x);
    return r;
}
