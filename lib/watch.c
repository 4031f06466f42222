/* SPDX-License-Identifier: Apache-2.0 */
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "creds.h"
#include "discover.h"
#include "proc_parse.h"
#include "target.h"
#include "util.h"

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

bool watch_table_record(struct watch_table *t, pid_t pid, uint64_t starttime,
                        enum attach_outcome outcome, int64_t now_ms)
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
    in->next_ms = now_ms + (delay > WATCH_RETRY_MAX_MS ? WATCH_RETRY_MAX_MS : delay);
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

/* Reads a pid's stat through /proc (comm and start time): the cheap first look. */
static int quick_stat(int proc_dirfd, const char *name, struct proc_stat *ret)
{
    char path[32];
    snprintf(path, sizeof(path), "%s/stat", name);
    _cleanup_close_ int fd = openat(proc_dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    char buf[PROC_STAT_MAX];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0)
        return -EIO;
    return proc_parse_stat(buf, (size_t)n, ret, NULL);
}

/* How long ago the process started (0 when the clocks disagree). */
static int64_t age_ms(uint64_t starttime)
{
    struct timespec ts;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
        return 0;
    int64_t boot_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t start_ms = (int64_t)(starttime / (uint64_t)hz) * 1000 +
                       (int64_t)(starttime % (uint64_t)hz) * 1000 / hz;
    return boot_ms > start_ms ? boot_ms - start_ms : 0;
}

/* One pass over /proc. Attaches to every due, matching instance with a socket. */
static int scan(const struct watch_opts *o, struct watch_table *t, pid_t self,
                const struct stat *own_mntns)
{
    int fd = openat(o->proc_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int r = -errno;
        close(fd);
        return r;
    }
    struct discover_cache *cache = discover_cache_new();
    watch_table_begin(t);
    struct dirent *de;
    while ((de = readdir(dir))) {
        uint64_t v;
        if (util_parse_u64(de->d_name, strlen(de->d_name), INT32_MAX, &v) < 0 || v == 0)
            continue;
        pid_t pid = (pid_t)v;
        struct proc_stat st;
        if (pid == self || quick_stat(o->proc_dirfd, de->d_name, &st) < 0)
            continue;
        int64_t now = util_now_ms();
        uint64_t fp = watch_exec_fp(&st);
        watch_table_seen(t, pid, st.starttime, fp, now);
        if (watch_table_final(t, pid, st.starttime))
            continue;
        if (o->sel.comm && strcmp(st.comm, o->sel.comm) != 0)
            continue;
        if (!watch_table_due(t, pid, st.starttime, now))
            continue;

        struct target tg;
        struct cla_error e = {0};
        bool match = false;
        struct discover_socket s = {.state = SOCKET_ABSENT};
        if (target_open(o->proc_dirfd, pid, &tg, &e) == 0) {
            match = tg.stat.starttime == st.starttime && selector_matches(&tg, &o->sel, own_mntns);
            /* The look for its socket is an access to the target: made as its user (creds.h). */
            if (match && cache) {
                struct creds_target ct;
                struct creds_saved cs = {0};
                creds_target_of(tg.procfd, &tg.status, &ct);
                if (creds_check(&ct, &e) < 0 || creds_become(&ct, &cs, &e) < 0 ||
                    discover_find_socket(&tg, cache, &s, &e) < 0)
                    s.state = SOCKET_ABSENT;
                creds_restore(&cs);
            }
            target_close(&tg);
        }
        /* Not .NET (yet), or not ours: looked at every scan while young, then now and then. */
        if (!match || (s.state != SOCKET_FOUND && s.state != SOCKET_FOUND_UNKEYED)) {
            watch_table_idle(t, pid, st.starttime, fp, age_ms(st.starttime), now);
            continue;
        }

        struct attach_opts ao = o->attach;
        ao.pid = pid;
        struct attach_result res;
        attach_run(&ao, &res);
        /* A runtime's socket is up a moment before it can take a profiler: while the process is
         * young, that answer is looked at again next scan, not reported. */
        if (res.outcome == ATTACH_NOT_READY && res.have_hresult &&
            res.hresult == ATTACH_HR_NOT_YET_AVAILABLE && res.starttime == st.starttime) {
            int64_t age = age_ms(st.starttime);
            if (age < WATCH_YOUNG_MS) {
                watch_table_idle(t, pid, st.starttime, fp, age, now);
                continue;
            }
        }
        /* The instance we attached to is the one we pinned; key the table by its start time. */
        uint64_t key = res.starttime ? res.starttime : st.starttime;
        bool is_new = watch_table_record(t, pid, key, res.outcome, util_now_ms());
        if (key != st.starttime)
            watch_table_seen(t, pid, key, 0, now);
        if (is_new && o->on_result)
            o->on_result(&res, !watch_table_final(t, pid, key), o->userdata);
    }
    discover_cache_free(cache);
    closedir(dir);
    watch_table_sweep(t);
    return 0;
}

static int create_ready_file(const char *path, struct cla_error *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return err_setsys(e, -errno, "ready file '%s'", path);
    (void)util_write_all(fd, "ready\n", 6);
    close(fd);
    return 0;
}

int watch_run(const struct watch_opts *o, struct cla_error *e)
{
    struct watch_table *t = watch_table_new();
    if (!t)
        return err_set(e, -ENOMEM, "out of memory");
    /* SIGTERM/SIGINT stay blocked while we work and are only delivered inside ppoll(), so a
     * stop request never interrupts an attach half-way (the kubelet's grace period covers one
     * attach, bounded by its deadline). */
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &orig);
    pid_t self = getpid();
    /* Our own mount namespace, for --other-containers: read once, before any target. */
    struct stat own_mntns = {0};
    if (o->sel.other_mntns) {
        char path[48];
        snprintf(path, sizeof(path), "%d/ns/mnt", (int)self);
        if (fstatat(o->proc_dirfd, path, &own_mntns, 0) < 0) {
            int er = -errno;
            sigprocmask(SIG_SETMASK, &orig, NULL);
            watch_table_free(t);
            return err_setsys(e, er, "watch: our own mount namespace (%s)", path);
        }
    }
    int r = 0;
    for (int64_t n = 0; !*o->stop && (o->max_scans == 0 || n < o->max_scans); n++) {
        r = scan(o, t, self, &own_mntns);
        if (r < 0) {
            err_setsys(e, r, "watch: scan /proc");
            break;
        }
        if (n == 0 && o->ready_file && (r = create_ready_file(o->ready_file, e)) < 0)
            break;
        struct timespec ts = {.tv_sec = o->interval_ms / 1000,
                              .tv_nsec = (o->interval_ms % 1000) * 1000000};
        if (!*o->stop)
            (void)ppoll(NULL, 0, &ts, &orig);
    }
    sigprocmask(SIG_SETMASK, &orig, NULL);
    if (o->ret_tracked)
        *o->ret_tracked = watch_table_size(t);
    if (o->ret_known)
        *o->ret_known = watch_table_entries(t);
    watch_table_free(t);
    return r;
}
