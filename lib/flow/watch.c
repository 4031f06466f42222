/* SPDX-License-Identifier: Apache-2.0 */
#include "flow/watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target/creds.h"
#include "target/diag_socket.h"
#include "target/proc_parse.h"
#include "target/procindex.h"
#include "target/target.h"
#include "base/opfile.h"
#include "base/util.h"
#include "base/syscalls.h"

struct instance {
    pid_t pid;
    uint64_t starttime;
    uint64_t exec_fp; /* the program image last seen (0 = unknown) */
    enum attach_outcome last;
    bool has_outcome; /* false: only looked at, nothing to attach yet */
    bool final;
    int attempts;
    int64_t next_ms;        /* not before this time */
    int64_t young_until_ms; /* looked at every scan until then */
    unsigned gen;           /* last scan that saw it */
};

/* Sorted by (pid, starttime): a node may show thousands of processes, each looked up per scan. */
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

/* The instance, created (seen in this generation, nothing recorded) when absent, which
 * *ret_created tells when not NULL; NULL when out of memory. */
static struct instance *find_or_add(struct watch_table *t, pid_t pid, uint64_t starttime,
                                    bool *ret_created)
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
    return in;
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
    default: return true;
    }
}

bool watch_table_due(const struct watch_table *t, pid_t pid, uint64_t starttime, int64_t now_ms)
{
    const struct instance *in = find(t, pid, starttime);
    return !in || (!in->final && now_ms >= in->next_ms);
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
    struct instance *in = find_or_add(t, pid, starttime, NULL);
    if (!in)
        return false;
    bool is_new = !in->has_outcome || in->last != outcome;
    in->has_outcome = true;
    in->last = outcome;
    in->attempts++;
    in->final = watch_outcome_final(outcome) || in->attempts >= WATCH_RETRY_ATTEMPTS;
    int64_t delay = WATCH_RETRY_FIRST_MS;
    for (int i = 1; i < in->attempts && delay < WATCH_RETRY_MAX_MS; i++)
        delay *= 2;
    if (delay > WATCH_RETRY_MAX_MS)
        delay = WATCH_RETRY_MAX_MS;
    /* An attempt that took long (a runtime that never answers costs a whole --timeout) waits at
     * least as long again: a silent instance holds an attach slot at most half of the time. */
    in->next_ms = now_ms + (took_ms > delay ? took_ms : delay);
    return is_new;
}

void watch_table_idle(struct watch_table *t, pid_t pid, uint64_t starttime, uint64_t exec_fp,
                      int64_t age_ms, int64_t now_ms)
{
    bool created;
    struct instance *in = find_or_add(t, pid, starttime, &created);
    if (!in)
        return; /* out of memory: looked at again next scan, as without a table */
    if (created) {
        in->exec_fp = exec_fp;
        in->young_until_ms = now_ms + (age_ms < WATCH_YOUNG_MS ? WATCH_YOUNG_MS - age_ms : 0);
    }
    if (in->has_outcome)
        return; /* a retry keeps its own backoff */
    in->next_ms = now_ms < in->young_until_ms ? now_ms : now_ms + WATCH_IDLE_LOOK_MS;
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
    if (exec_fp == 0 || in->exec_fp == exec_fp)
        return;
    if (in->exec_fp != 0) {
        /* execve since: another program under the same pid and start time (a shell that
         * execs dotnet, or one runtime exec'ing into another) is a new instance. */
        unsigned gen = in->gen;
        memset(in, 0, sizeof(*in));
        in->pid = pid;
        in->starttime = starttime;
        in->gen = gen;
        in->next_ms = now_ms;
        in->young_until_ms = now_ms + WATCH_YOUNG_MS;
    }
    in->exec_fp = exec_fp;
}

size_t watch_table_sweep(struct watch_table *t)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].gen == t->gen)
            t->v[kept++] = t->v[i];
        else
            dropped++;
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
        n += t->v[i].has_outcome;
    return n;
}

size_t watch_table_entries(const struct watch_table *t)
{
    return t->n;
}

uint64_t watch_exec_fp(const struct proc_stat *st)
{
    /* FNV-1a over the image addresses; all 0 (hidden, or an old kernel) means unknown. */
    uint64_t h = 1469598103934665603ULL;
    bool any = false;
    for (size_t i = 0; i < 4; i++) {
        any |= st->exec_marks[i] != 0;
        for (int b = 0; b < 64; b += 8) {
            h ^= (st->exec_marks[i] >> b) & 0xFF;
            h *= 1099511628211ULL;
        }
    }
    return any ? (h ? h : 1) : 0;
}

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

/* ---- attaches in flight ---- */

/* What a child sends back: its result with the one pointer (rid_source) as an index. */
struct wire {
    uint32_t magic;
    uint32_t rid_source; /* 1 + index into attach_rid_sources, 0 = none */
    struct attach_result res;
};
#define WIRE_MAGIC 0x434c5257u /* "WRLC" */

enum job_end {
    JOB_RUNNING,
    JOB_TIMED_OUT,   /* killed by us past its deadline */
    JOB_INTERRUPTED, /* killed by us because the watcher stops */
};

struct job {
    bool used;
    bool retry; /* the instance has an earlier outcome */
    pid_t pid;  /* the target, and its instance */
    uint64_t starttime;
    uint64_t exec_fp;
    int64_t started_ms, deadline_ms;
    /* the child process running the attach, and what it sent so far */
    pid_t child;
    int pidfd; /* of the child; -1 where pidfd_open is missing (Linux < 5.3) */
    int rfd;   /* read end of its result pipe */
    bool eof, excess, reaped;
    int status; /* wait status, once reaped */
    enum job_end end;
    size_t got;
    struct wire wire;
    /* the pin from the scan, held until the child is started with it */
    bool pinned;
    struct target tg;
    /* who the attach was for, from the pin: for a result the child never sent */
    pid_t nspid;
    uid_t uid;
    gid_t gid;
    char command_line[512];
};

struct watch_pool {
    struct job v[WATCH_POOL_MAX];
    size_t n;
};

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
        j->pidfd = j->rfd = -1;
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

/* ---- running one attach in a child process ---- */

/* Every string of a result, for the two ends of the pipe below. */
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
    STR(r->delivered_dir);
    STR(r->placement);
    STR(r->holder);
    STR(r->sha256);
    STR(r->profiler_env);
    STR(r->error.msg);
    STR(r->error.hint);
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
    *ret = *r;
    return 0;
}

/*
 * The child attaches to the process the scan pinned (its pidfd and /proc dirfd are inherited,
 * so it is that process or nothing), tightens its own seccomp stages through the attach's
 * on_stage, sends the fixed-size result and leaves with _exit: no atexit handler, no stdio
 * flush of the watcher's buffers, nothing printed or reported from here.
 */
static _Noreturn void child_main(const struct watch_opts *o, struct watch_table *t,
                                 struct watch_pool *pool, struct procindex *x, size_t slot, int wfd)
{
    /* Everything of the watcher's that the attach does not need is released: the other jobs'
     * fds and pins, the table, the pool (valgrind checks a child's leaks at its exit too). */
    struct target tg = pool->v[slot].tg;
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (i == slot || !j->used)
            continue;
        util_closep(&j->rfd);
        util_closep(&j->pidfd);
        if (j->pinned)
            target_close(&j->tg);
    }
    watch_pool_free(pool);
    watch_table_free(t);
    procindex_free(x); /* the socket directories of other processes, held open */
    struct attach_result *res = calloc(1, sizeof(*res));
    struct wire *w = calloc(1, sizeof(*w));
    if (!res || !w)
        _exit(71);
    attach_run(&o->attach, &tg, res);
    target_close(&tg);
    watch_result_encode(res, w);
    int r = util_write_all(wfd, w, sizeof(*w));
    free(w);
    free(res);
    _exit(r < 0 ? 74 : 0);
}

/* A result the child did not send: from what the watcher knows of the instance. */
static void result_of_job(const struct job *j, enum attach_outcome outcome, int64_t now,
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

static bool wire_complete(const struct job *j)
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

/* Reads what the child has sent, without blocking. */
static void job_drain(struct job *j)
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

/* Reaps the child if it has ended; true once it has. */
static bool job_reap(struct job *j, bool block)
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

static void job_kill(struct job *j, enum job_end why)
{
    if (j->end == JOB_RUNNING)
        j->end = why;
    /* Only through the pidfd: the child is ours and unreaped, but a pid in a kill() call is a
     * number the filter cannot restrict, so kill(2) is not on the seccomp list at all. */
    if (j->pidfd >= 0 && !j->reaped)
        (void)sys_pidfd_send_signal(j->pidfd, SIGKILL, NULL, 0);
}

/* The result of an ended (or abandoned) job, for reporting. */
static void job_result(const struct watch_opts *o, const struct job *j, struct attach_result *r)
{
    int64_t now = util_now_ms();
    if (wire_complete(j) && j->end != JOB_INTERRUPTED) {
        result_from_wire(j, r);
        return;
    }
    if (j->end == JOB_INTERRUPTED) {
        result_of_job(j, ATTACH_INTERRUPTED, now, r);
        err_set(&r->error, -EINTR,
                "the watcher was stopped (SIGTERM or SIGINT) while attaching to pid %d: the "
                "attach was abandoned after %lld ms",
                (int)j->pid, (long long)r->duration_ms);
        err_hint(&r->error, "the next watcher tries this process again (the attach may have "
                            "been abandoned before or after the runtime got AttachProfiler)");
    } else if (j->end == JOB_TIMED_OUT) {
        result_of_job(j, ATTACH_PROTOCOL, now, r);
        err_set(&r->error, -ETIMEDOUT,
                "the attach to pid %d did not end within %lld ms (twice --timeout and %d ms): "
                "abandoned",
                (int)j->pid, (long long)watch_attach_deadline_ms(o->attach.timeout_ms),
                WATCH_ATTACH_SLACK_MS);
        err_hint(&r->error, "the runtime does not answer; it is tried again with backoff");
    } else if (j->excess) {
        result_of_job(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO,
                "the attach process for pid %d sent a malformed result (%zu bytes%s, %zu expected)",
                (int)j->pid, j->got, j->excess ? " and more" : "", sizeof(j->wire));
    } else if (j->reaped && WIFSIGNALED(j->status)) {
        int sig = WTERMSIG(j->status);
        result_of_job(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EINTR, "the attach process for pid %d died of signal %d (%s)",
                (int)j->pid, sig, strsignal(sig));
        if (sig == SIGSYS)
            err_hint(&r->error, "a syscall outside clrattach's seccomp allow-list: the kernel "
                                "log (dmesg, audit type=1326) names it; please report it");
    } else if (j->got > 0) {
        result_of_job(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO,
                "the attach process for pid %d sent a malformed result (%zu bytes%s, %zu expected)",
                (int)j->pid, j->got, j->excess ? " and more" : "", sizeof(j->wire));
    } else {
        result_of_job(j, ATTACH_INTERNAL, now, r);
        err_set(&r->error, -EPROTO, "the attach process for pid %d ended (%s %d) without a result",
                (int)j->pid, j->reaped ? "exit status" : "not reaped",
                j->reaped && WIFEXITED(j->status) ? WEXITSTATUS(j->status) : -1);
    }
}

/* Records an outcome in the table and reports it when it is new for the instance. */
static void handle_result(const struct watch_opts *o, struct watch_table *t, uint64_t exec_fp,
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
     * young, that answer is looked at again next scan, not reported. */
    if (res->outcome == ATTACH_NOT_READY && res->have_hresult &&
        res->hresult == ATTACH_HR_NOT_YET_AVAILABLE) {
        int64_t age = procindex_age_ms(key);
        if (age < WATCH_YOUNG_MS) {
            watch_table_idle(t, pid, key, exec_fp, age, now);
            return;
        }
    }
    bool is_new = watch_table_record_attempt(t, pid, key, res->outcome, took_ms, now);
    if (is_new && o->on_result)
        o->on_result(res, !watch_table_final(t, pid, key), o->userdata);
}

/* Ends a job whose child has been reaped (or abandoned): report, release, free the slot. */
static void job_finish(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                       size_t slot)
{
    struct job *j = &pool->v[slot];
    job_drain(j);
    struct attach_result *res = malloc(sizeof(*res));
    util_closep(&j->rfd);
    util_closep(&j->pidfd);
    if (j->pinned)
        target_close(&j->tg);
    j->pinned = false;
    if (res) {
        job_result(o, j, res);
        handle_result(o, t, j->exec_fp, res, util_now_ms() - j->started_ms);
        free(res);
    }
    watch_pool_remove(pool, slot);
}

/* Takes a slot for the pinned process `tg` (or closes it when none is left): the attach
 * starts once the scan is over (start_pending). */
static void reserve(const struct watch_opts *o, struct watch_pool *pool, struct target *tg,
                    uint64_t exec_fp, bool retry)
{
    int64_t now = util_now_ms();
    int slot = watch_pool_add(pool, tg->pid, tg->stat.starttime, retry,
                              now + watch_attach_deadline_ms(o->attach.timeout_ms));
    if (slot < 0) {
        target_close(tg);
        return;
    }
    struct job *j = &pool->v[slot];
    j->exec_fp = exec_fp;
    j->started_ms = now;
    j->nspid = tg->status.nspid;
    j->uid = tg->status.uid[1];
    j->gid = tg->status.gid[1];
    memcpy(j->command_line, tg->cmdline, sizeof(j->command_line));
    j->tg = *tg;
    j->pinned = true;
}

/* Starts the attach of a reserved slot in a child, which takes the pin along; the watcher's
 * copy of the pin is closed either way. An attach that cannot start (no fork, no pipe) is an
 * internal error, retried with backoff. */
static void start_attach(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                         struct procindex *x, size_t slot)
{
    struct job *j = &pool->v[slot];
    struct cla_error e = {0};
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        err_setsys(&e, -errno, "watch: a pipe for the attach to pid %d", (int)j->pid);
        goto failed;
    }
    j->started_ms = util_now_ms();
    pid_t child = fork();
    if (child < 0) {
        err_setsys(&e, -errno, "watch: fork for the attach to pid %d", (int)j->pid);
        close(p[0]);
        close(p[1]);
        goto failed;
    }
    if (child == 0) {
        close(p[0]);
        child_main(o, t, pool, x, slot, p[1]);
    }
    close(p[1]);
    target_close(&j->tg);
    j->pinned = false;
    j->child = child;
    j->rfd = p[0];
    j->pidfd = sys_pidfd_open(child, 0);
    return;
failed:
    target_close(&j->tg);
    j->pinned = false;
    {
        struct attach_result *res = malloc(sizeof(*res));
        if (res) {
            result_of_job(j, ATTACH_INTERNAL, util_now_ms(), res);
            res->error = e;
            handle_result(o, t, j->exec_fp, res, 0);
            free(res);
        }
    }
    watch_pool_remove(pool, slot);
}

/* Starts every attach the last scan reserved. */
static void start_pending(const struct watch_opts *o, struct watch_table *t,
                          struct watch_pool *pool, struct procindex *x)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (pool->v[i].used && pool->v[i].pinned)
            start_attach(o, t, pool, x, i);
}

/* One pass over /proc through the index. Reserves a slot, with its pin, for every due, matching
 * instance with a socket while one is free; never waits for an attach. Only a process the index
 * points at (a socket name for its namespace pid, or nothing known) gets a look: a process with
 * no socket costs nothing here. */
static int scan(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool,
                struct procindex *x, const struct stat *own_mntns, struct cla_error *e)
{
    int r = procindex_scan(x, util_now_ms(), e);
    if (r < 0)
        return r;
    struct diag_socket_cache *cache = diag_socket_cache_new();
    watch_table_begin(t);
    for (size_t i = 0; i < procindex_count(x); i++) {
        const struct procindex_proc *p = procindex_at(x, i);
        const struct proc_stat *st = &p->stat;
        pid_t pid = p->pid;
        int64_t now = util_now_ms();
        uint64_t fp = watch_exec_fp(st);
        watch_table_seen(t, pid, st->starttime, fp, now);
        if (!(p->flags & (PROCINDEX_SOCKET | PROCINDEX_UNKNOWN)))
            continue;
        if (watch_table_final(t, pid, st->starttime) || watch_pool_busy(pool, pid, st->starttime))
            continue;
        if (o->sel.comm && strcmp(st->comm, o->sel.comm) != 0)
            continue;
        if (!watch_table_due(t, pid, st->starttime, now))
            continue;

        /* The selectors are checked on the pinned process, and that same pin (pidfd, /proc
         * dirfd, start time) is what the attach uses: a process that takes the pid afterwards
         * is never attached in its place. */
        struct target tg;
        if (target_open(o->proc_dirfd, pid, &tg, NULL) < 0) {
            watch_table_idle(t, pid, st->starttime, fp, procindex_age_ms(st->starttime), now);
            continue;
        }
        bool match =
            tg.stat.starttime == st->starttime && selector_matches(&tg, &o->sel, own_mntns);
        struct diag_socket s = {.state = SOCKET_ABSENT};
        /* The look for its socket is an access to the target: made as its user (creds.h). */
        if (match && cache) {
            struct creds_target ct;
            struct creds_saved cs = {0};
            creds_target_of(tg.procfd, &tg.status, &ct);
            if (creds_check(&ct, NULL) < 0 || creds_become(&ct, &cs, NULL) < 0 ||
                diag_socket_find(&tg, cache, &s, NULL) < 0)
                s.state = SOCKET_ABSENT;
            creds_restore(&cs);
        }
        /* Not .NET (yet), or not ours: looked at every scan while young, then now and then. */
        if (!match || (s.state != SOCKET_FOUND && s.state != SOCKET_FOUND_UNKEYED)) {
            target_close(&tg);
            watch_table_idle(t, pid, st->starttime, fp, procindex_age_ms(st->starttime), now);
            continue;
        }
        bool retry = watch_table_tried(t, pid, st->starttime);
        if (!watch_pool_may_start(pool, retry)) {
            target_close(&tg); /* still due: the next scan tries again */
            continue;
        }
        reserve(o, pool, &tg, fp, retry);
    }
    diag_socket_cache_free(cache);
    watch_table_sweep(t);
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

/* Waits until a child sends or ends, a deadline passes, `until_ms` comes or a stop signal
 * arrives (the only place SIGTERM/SIGINT are unblocked: `orig`), then handles what happened. */
static void wait_and_handle(const struct watch_opts *o, struct watch_table *t,
                            struct watch_pool *pool, int64_t until_ms, const sigset_t *orig)
{
    struct pollfd fds[2 * WATCH_POOL_MAX];
    size_t nfds = 0;
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
    (void)ppoll(fds, nfds, &ts, orig);

    now = util_now_ms();
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        job_drain(j);
        /* With a pidfd, its readiness says the child has exited; without, the pipe's end does
         * (the child's write end is its alone: closed in the watcher right after the fork). */
        bool ended = false;
        if (j->pidfd >= 0) {
            struct pollfd p = {.fd = j->pidfd, .events = POLLIN};
            ended = poll(&p, 1, 0) > 0 && job_reap(j, false);
        } else if (j->eof) {
            ended = job_reap(j, true);
        }
        if (ended) {
            job_finish(o, t, pool, i);
        } else if (j->end == JOB_RUNNING && now >= j->deadline_ms) {
            job_kill(j, JOB_TIMED_OUT);
            if (j->pidfd < 0)
                j->deadline_ms = INT64_MAX; /* cannot kill it: its own deadlines end it */
        }
    }
}

/* Stop: every attach still in flight is killed, reaped within a short bound, and reported once
 * as interrupted (one that had already sent its whole result is reported with that). */
static void abandon_all(const struct watch_opts *o, struct watch_table *t, struct watch_pool *pool)
{
    for (size_t i = 0; i < WATCH_POOL_MAX; i++) {
        struct job *j = &pool->v[i];
        if (!j->used)
            continue;
        job_drain(j);
        job_kill(j, wire_complete(j) ? JOB_RUNNING : JOB_INTERRUPTED);
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
            if (!j->used || job_reap(j, false))
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
    for (size_t i = 0; i < WATCH_POOL_MAX; i++)
        if (pool->v[i].used)
            job_finish(o, t, pool, i);
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
    int64_t scans = 0, next_scan = util_now_ms();
    while (!*o->stop) {
        bool more = o->max_scans == 0 || scans < o->max_scans;
        if (more && util_now_ms() >= next_scan) {
            r = scan(o, t, pool, x, &own_mntns, e);
            if (r < 0) {
                err_prefix(e, "watch: scan");
                break;
            }
            start_pending(o, t, pool, x);
            if (scans++ == 0 && o->ready_file && (r = create_ready_file(o->ready_file, e)) < 0)
                break;
            next_scan = util_now_ms() + o->interval_ms;
            more = o->max_scans == 0 || scans < o->max_scans;
        }
        /* A bounded run (max_scans) ends once its last scan's attaches have. */
        if (!more && watch_pool_count(pool) == 0)
            break;
        wait_and_handle(o, t, pool, more ? next_scan : INT64_MAX, &orig);
    }
    abandon_all(o, t, pool);
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
