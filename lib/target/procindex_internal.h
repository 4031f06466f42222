/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the index share; nothing outside lib/target/procindex*.c includes it:
 * procindex.c (the records, the listing of /proc, the scan), procindex_probe.c (the probe of one
 * process), procindex_group.c (the socket directories the records point at, and the back-off of
 * those that stop answering), procindex_socket.c (the full look asked of the helper) and
 * procindex_helper.c (the helper process that opens and lists them: fsworker.h). A group is
 * created by the probe that first finds a process in it, scanned once per scan while it has
 * members, and freed when the last one is gone.
 *
 * Nothing in this process touches a socket directory, nor anything else below another process's
 * root: the helper does, one request at a time, and a request it does not answer within
 * PROCINDEX_ANSWER_MS marks what it was about (a group, or a process without one) unreachable
 * for a back-off time.
 */
#ifndef CLRATTACH_PROCINDEX_INTERNAL_H
#define CLRATTACH_PROCINDEX_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "target/diag_socket.h"
#include "target/fsworker.h"
#include "target/procindex.h"

/* A directory (or a process) whose request was not answered in time. */
struct procindex_stall {
    unsigned stalls;  /* in a row: the back-off doubles with each */
    int64_t until_ms; /* left alone until then (0: reachable) */
    pid_t stuck;      /* the helper given up on it, while it is not reaped: no second one is
                         sent into the same silent filesystem before the first came back */
};

/* Where the sockets of a set of processes live: one directory in one view, as one user. */
struct procindex_group {
    uint64_t id; /* names it to the helper */
    uint64_t mnt_ino, root_dev, root_ino;
    uid_t uid;
    gid_t gid;
    char *tmpdir;
    pid_t rep; /* a member of the last scan: the process whose user opens the directory */
    size_t members;
    bool held;         /* the helper of generation held_gen holds it open */
    bool watched;      /* ... with an inotify watch on it */
    int wd;            /* that watch (a socket name's event names it), when watched */
    uint64_t held_gen; /* fsworker_generation() */
    int dir_errno;     /* why there is no listing (0 with one) */
    int64_t retry_ms;
    int64_t next_list_ms; /* a crowded directory is listed at most every PROCINDEX_RETRY_MS */
    bool valid;           /* the entries are the directory's (listed, not closed since) */
    /* every scan looks at it until then, a light one too: a member was probed afresh (new, or
     * after an execve), PROCINDEX_GROUP_LOOK_MS more when that member is young (a container's
     * start mounts its /tmp between the fork the last pid shows and the exec of its app, and a
     * runtime's socket comes a few ms after its exec, maybe while the queue is left unread) */
    int64_t look_until_ms;
    struct procindex_entry *entries;
    size_t n, alloc;
    struct procindex_stall stall;
};

/* Is this error a process that has ended (its /proc directory gone, or a zombie's)? */
static inline bool procindex_gone(int r)
{
    return r == -ENOENT || r == -ESRCH;
}

/* A group for the processes in mount namespace `mnt_ino`, with root `root`, whose /proc
 * directories are owned as `owner` is, under TMPDIR `tmpdir` (copied); `rep` is the member whose
 * user opens its directory at the next scan. Nothing is opened yet. Returns NULL when out of
 * memory. */
struct procindex_group *procindex_group_new(uint64_t id, uint64_t mnt_ino, const struct stat *root,
                                            const struct stat *owner, const char *tmpdir,
                                            pid_t rep);

/* Frees the group (procindex_group_forget first, for one the helper holds). NULL is a no-op. */
void procindex_group_free(struct procindex_group *g);

/* ---- the helper's requests and answers (procindex_helper.c answers them) ------------------ */

enum procindex_op {
    PX_GROUP = 1,   /* struct px_group_req, then the TMPDIR: struct px_group_reply */
    PX_FORGET,      /* struct px_group_req: the directory let go of; an empty answer */
    PX_SOCKET_FIND, /* struct px_socket_req: struct px_socket_reply */
    PX_SOCKET_OPEN, /* struct px_socket_req: struct px_socket_reply, and the socket's fd */
    PX_EVENTS,      /* the op alone: an int32_t (0 or -errno), and the inotify fd (direvents.h) */
    PX_HINT_EVENTS, /* the same for the runtime files' inotify (procindex_hints.h) */
    PX_HINT_PLACE,  /* struct px_socket_req: the runtime's files hinted; struct px_socket_reply */
};

/* PX_GROUP: what the helper may do for the group this time. */
#define PX_MAY_OPEN 0x1u /* open it when it holds it not (as `rep`'s user) */
#define PX_MAY_LIST 0x2u /* list it when it changed */
#define PX_HOLD     0x4u /* keep it open after (watch); else let go at once (ps) */

struct px_group_req {
    uint32_t op;
    uint32_t flags;
    uint64_t id;
    uint64_t mnt_ino, root_dev, root_ino;
    int32_t rep;
    uint32_t tmpdir_len; /* the bytes after this struct, no NUL */
};

/* PX_GROUP's answer: the flags, then `n` entries (struct procindex_entry, unsorted). */
#define PX_HELD        0x01u /* it holds the directory open now */
#define PX_OPEN_FAILED 0x02u /* an open was tried and failed (dir_errno says why) */
#define PX_REP_GONE    0x04u /* ... because `rep` has ended: another member may open it at once */
#define PX_LISTED      0x08u /* the entries follow and replace the last ones */
#define PX_CLOSED      0x10u /* the last listing is void (the directory went, or failed) */
#define PX_WATCHED     0x20u /* it holds it with an inotify watch on it (direvents.h) */

struct px_group_reply {
    uint32_t flags;
    int32_t dir_errno;
    uint32_t seen; /* names the listing went through */
    uint32_t n;
    int32_t wd; /* PX_WATCHED: the watch's descriptor in the helper's instance (direvents.h) */
    uint32_t pad;
};

/* PX_SOCKET_*: the full look's filesystem part, for the process (pid, start time); the helper
 * pins it again and acts as its user. `scan` keeps the helper's cache of listings to one scan. */
struct px_socket_req {
    uint32_t op;
    int32_t pid;
    uint64_t starttime;
    uint64_t scan;
    char name[sizeof(((struct diag_socket *)0)->name)]; /* PX_SOCKET_OPEN: the socket chosen */
};

struct px_socket_reply {
    int32_t r;
    uint32_t state; /* enum socket_state */
    struct {
        char name[sizeof(((struct diag_socket *)0)->name)];
        uint64_t key;
        int32_t candidates, stale, dir_errno;
        uint32_t file_type;
        uint32_t owner; /* uid of the chosen entry */
    } s;
    int32_t code;
    char msg[CLA_ERR_MSG_MAX];
    char hint[CLA_ERR_HINT_MAX];
};

/* The helper's context (fsworker_new's ctx): what it reads of the index, and its own state. */
struct procindex_hctx {
    int proc_dirfd;
    struct procindex_helper *state; /* procindex_helper.c's, in the helper; NULL in the caller */
};

/* The handler the helper runs (fsworker_fn) on a struct procindex_hctx, and its cleanup. */
void procindex_helper_handle(void *ctx, const void *req, size_t len, int fd, void **ret_reply,
                             size_t *ret_len, int *ret_fd);
void procindex_helper_done(void *ctx);

/* One scan of the group's directory, through the helper `w`: the one held is let go when its
 * TMPDIR name leads elsewhere now; when none is held and the retry is due, it is opened as
 * `g->rep`'s user, unless `may_open` is false (past the bound of directories held: no listing,
 * EMFILE, tried again later); a held one is listed when it changed. With `hold` false the
 * directory is let go after its listing (ps lists once). Returns 0, or the error of
 * fsworker_call (the helper given up, its pid in *ret_stuck while not reaped). */
int procindex_group_scan(struct procindex_group *g, struct fsworker *w, bool may_open, bool hold,
                         int64_t now_ms, pid_t *ret_stuck);

/* Tells the helper to let go of the group's directory, when it holds it. */
void procindex_group_forget(struct procindex_group *g, struct fsworker *w);

/* ---- the index (procindex.c) and its records -------------------------------------------- */

/* A process as the index knows it. */
struct procindex_rec {
    struct procindex_proc pub;
    pid_t nspid;   /* from its status, read once its group holds socket names; 0 until then */
    unsigned base; /* DISABLED, REFUSED, UNKNOWN from the probe */
    struct procindex_group *g;
    uint64_t sock_fp;
    int64_t next_look_ms; /* stat read again (with stat on), or an UNKNOWN probed again */
    int64_t young_until_ms;
    int64_t stat_ms;              /* when its stat was read last */
    struct procindex_stall stall; /* its full look did not come back (one without a group) */
};

/* The index. */
struct procindex {
    int proc_dirfd;
    bool with_stat;
    pid_t self;
    struct procindex_rec *v;
    size_t n;
    struct procindex_group **groups;
    size_t ngroups, galloc;
    char *envbuf;                /* PROC_ENVIRON_MAX + 1 bytes, reused by every probe */
    pthread_mutex_t groups_lock; /* procindex_group_find() while a helper thread probes (relist) */
    pid_t last_pid;              /* from /proc/loadavg at the last listing; -1 = unknown */
    /* procindex_new_process: the pids after last_pid up to here were threads or are gone
     * (-1: not looked at since the index began); peek_ok: /proc is of our PID namespace (its
     * pids are loadavg's) */
    pid_t peek_pid;
    bool peek_ok;
    int loadavg_fd; /* /proc/loadavg held open (pread); -1: opened at each read */
    uint64_t pidns; /* the PID namespace of /proc (its pid 1's); 0 = unknown */
    /* the pids allocated since the scan before: (alloc_after, alloc_upto], cyclic; unknown
     * when alloc_after < 0 */
    pid_t alloc_after, alloc_upto;
    int64_t relist_ms; /* list /proc again by then at the latest */
    /* The helper's inotify instance (a copy), of helper generation ev_gen; -1: none. */
    int ev_fd;
    uint64_t ev_gen;
    int hint_fd; /* the same for the runtime files' instance (procindex_hints.h) */
    uint64_t hint_gen;
    /* Since the last scan: socket names came in these watched directories (their wds), or
     * anywhere (ev_all: an overflow, a watch gone, more directories than the bound). */
    int ev_wds[DIREVENTS_WDS_MAX];
    unsigned ev_nwds;
    bool ev_all;
    int64_t groups_full_ms; /* the next pass over every group, events or not */
    /* Everything below other processes' roots goes through the helper (procindex_helper.c). */
    struct fsworker *w;
    struct procindex_hctx hctx;
    uint64_t next_group_id;
    uint64_t scans;          /* counts the scans: the helper keeps its listings for one */
    int64_t now_ms;          /* the last scan's time, the clock of the back-offs */
    unsigned stalls_in_scan; /* helpers given up in this scan (PROCINDEX_SCAN_STALLS_MAX) */
    void (*on_unreachable)(const char *msg, void *userdata);
    void *userdata;
};

/* ---- the probe of one process (procindex_probe.c) ---------------------------------------- */

/* The inode of the namespace `pid` is in, by readlink of its link `ns` ("ns/mnt", "ns/pid").
 * Returns 0 or -errno / -EPROTO. */
int procindex_ns_ino(int proc_dirfd, pid_t pid, const char *ns, uint64_t *ret);

/* Reads the process's stat into r (an unparsable one left zero, UNKNOWN); false when it is
 * gone. */
bool procindex_read_stat(const struct procindex *x, struct procindex_rec *r, int64_t now);

/* Finds r's namespace pid (r->nspid); false when it cannot be read. */
bool procindex_read_nspid(const struct procindex *x, struct procindex_rec *r);

/* Probes `pid` afresh into *r (flags CHANGED); false when it is gone. */
bool procindex_probe_one(struct procindex *x, pid_t pid, struct procindex_rec *r, int64_t now);

/* A process seen before, its stat read again when due, probed afresh after an execve or on a
 * new process; false when it is gone. */
bool procindex_refresh(struct procindex *x, struct procindex_rec *r, int64_t now);

/* Probes recs[0..n) (each with its pid set), keep[i] false for one gone; on two threads when
 * there are many. */
void procindex_probe_all(struct procindex *x, struct procindex_rec *recs, bool *keep, size_t n,
                         int64_t now);

/* ---- the groups of the index and their back-off (procindex_group.c) ---------------------- */

/* The group of (mnt_ino, root, owner, p's TMPDIR), created with `pid` as its representative
 * when there is none; NULL when out of memory. The caller holds x->groups_lock. */
struct procindex_group *procindex_group_find(struct procindex *x, uint64_t mnt_ino,
                                             const struct stat *root, const struct stat *owner,
                                             const struct procindex_probe *p, pid_t pid);

/* Is what `s` is about left alone now (its back-off running, or its helper still stuck)? */
bool procindex_stall_active(struct procindex *x, struct procindex_stall *s, int64_t now_ms);

/* Is this answer of fsworker_call one that leaves what it was about unreachable? */
bool procindex_is_stall(int r);

/* Marks `s` (and group `g`, when there is one) unreachable for its back-off after the answer
 * `r`, and says so once through x->on_unreachable. */
void procindex_stall_mark(struct procindex *x, struct procindex_group *g, struct procindex_stall *s,
                          pid_t pid, const char *tmpdir, uid_t uid, int r, pid_t stuck);

/* Every group with members scanned (procindex_group_scan), those without let go. Returns 0,
 * or -EINTR on a stop. */
int procindex_scan_groups(struct procindex *x, int64_t now_ms);

#endif
