/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which processes could be .NET, without reading every process's files again and again: the
 * index `ps` and `watch` share. Each process is probed once when first seen (the owner of its
 * /proc directory, environ, ns/mnt, root: its user, TMPDIR and whether diagnostics are off) and
 * grouped by where its diagnostic socket would live: (mount namespace, root, TMPDIR, owner).
 * Its status (for its namespace pid) is read only when its group's directory holds socket
 * names. Each group's socket directory (procindex_group.c) is opened once, as the user of a
 * member, through rootfs.h, and listed at every scan (getdents: names and inode numbers); a
 * `dotnet-diagnostic-<nspid>-<key>-socket` name points at the members with that namespace pid. A
 * process with no such name costs nothing per scan beyond the listing of /proc (and, with stat on,
 * a read of its stat while it is young and now and then after, for an execve into another TMPDIR).
 *
 * The index is a pre-filter only: what a flag points at still gets the full, pinned look
 * (target_open, creds, diag_socket_find, diag_socket_open) before anything is used.
 *
 * Nothing below another process's root is touched by the caller's process: the directories are
 * held, listed and looked into by a helper process (fsworker.h), each request within
 * PROCINDEX_ANSWER_MS. A filesystem that stops answering (a hung NFS or CIFS mount, a stuck
 * volume, a FUSE daemon that never replies) holds the helper, which is given up; the group is
 * then PROCINDEX_UNREACHABLE for a back-off time, and the scan goes on with a fresh helper.
 */
#ifndef CLRATTACH_PROCINDEX_H
#define CLRATTACH_PROCINDEX_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "target/diag_socket.h"
#include "target/direvents.h"
#include "target/proc_parse.h"
#include "target/target.h"

/* A process is probed again (stat read, then everything on an execve) every scan while it is
 * younger than this, then every PROCINDEX_RECHECK_MS, spread over the scans: an execve into a
 * program with another TMPDIR is found within that. An execve that keeps the TMPDIR (a shell
 * that execs dotnet) is found by the listing at once. */
#define PROCINDEX_YOUNG_MS   10000
#define PROCINDEX_RECHECK_MS 30000
/* With stat on (watch), /proc is listed again only when a pid was allocated in our PID
 * namespace since the last listing (the last field of /proc/loadavg: a new process, also in a
 * namespace below ours, takes a pid in ours too), or when this long has passed. With no pid
 * allocated the listing can only have shrunk: a process that ended is let go by its recheck
 * (PROCINDEX_RECHECK_MS) or by this listing, whichever comes first, and until then it is one
 * that target_open finds gone. A quiet node costs one read of /proc/loadavg per scan; a listing
 * of /proc costs about a microsecond a process (kernel time), the largest part of an idle
 * watcher's when it came every 2 s. */
#define PROCINDEX_RELIST_MS 10000
/* With events (procindex_events_read), a scan looks only at the groups whose directory is not
 * held and watched and at those a socket name's event named since the last scan (a flood of
 * names in one directory costs a look at that one alone); every group is looked at again at
 * least this often (what no event shows: a tmpfs mounted over a TMPDIR a process older than
 * PROCINDEX_YOUNG_MS already had), and at the first scan after an event that does not say where
 * (an overflow, a watch gone, names in more than DIREVENTS_WDS_MAX directories at once). */
#define PROCINDEX_GROUPS_FULL_MS 1000
/* A group with a member probed afresh that is younger than PROCINDEX_YOUNG_MS is looked at by
 * every scan for this long after (its directory listed when it changed). */
#define PROCINDEX_GROUP_LOOK_MS 500
/* A socket directory that could not be opened is tried again after this long; one that held
 * more than PROCINDEX_BUSY_ENTRIES names is listed again after this long at the earliest. */
#define PROCINDEX_RETRY_MS     2000
#define PROCINDEX_BUSY_ENTRIES 1000
/* Socket directories held open at once (two fds each); the processes of groups past it get the
 * full look (PROCINDEX_UNKNOWN). */
#define PROCINDEX_HELD_MAX 128

/* The flags of a process after a scan (struct procindex_proc). */

/* Its socket directory has an entry named for its nspid. */
#define PROCINDEX_SOCKET 0x01u
/* First seen, or its image or its entries (name, inode) changed. */
#define PROCINDEX_CHANGED 0x02u
/* DOTNET_EnableDiagnostics=0 (or a sibling) in its environment. */
#define PROCINDEX_DISABLED 0x04u
/* Its environment breaks a rule (TMPDIR, size): see target.h. */
#define PROCINDEX_REFUSED 0x08u
/* Not probed (no access to it, or to its socket directory as its group's user): only the full
 * look can tell. */
#define PROCINDEX_UNKNOWN 0x10u
/* Its socket directory, or its full look, did not answer within PROCINDEX_ANSWER_MS: left
 * alone (never SOCKET or UNKNOWN) until its back-off ends. */
#define PROCINDEX_UNREACHABLE 0x20u

/* How long a directory that did not answer for the `stalls`-th time in a row is left alone:
 * PROCINDEX_STALL_BACKOFF_MIN_MS, doubling, at most PROCINDEX_STALL_BACKOFF_MAX_MS (a helper
 * still stuck in it also keeps it alone). Pure. */
int64_t procindex_stall_backoff_ms(unsigned stalls);

/* What the probe finds in a process's environ alone (pure). */
struct procindex_probe {
    unsigned flags;               /* PROCINDEX_DISABLED, PROCINDEX_REFUSED */
    char tmpdir[TARGET_PATH_MAX]; /* as target_open() finds it; empty when REFUSED */
};

/* Parses a process's /proc environ (NULL when it could not be read: TMPDIR is then /tmp/, as in
 * target_open). `environ_len` past PROC_ENVIRON_MAX is REFUSED, as target_open refuses it.
 * Never fails. */
void procindex_probe_parse(const char *environ, size_t environ_len, struct procindex_probe *ret);

/* An entry of a socket directory: the name's pid and key, the inode it names and that inode's
 * change time (a filesystem may give a freed inode number to the next file at once). */
struct procindex_entry {
    pid_t nspid;
    uint64_t key;
    uint64_t ino;
    int64_t ctime_ns;
};

/* Sorts entries by (nspid, key, ino). Pure. */
void procindex_sort_entries(struct procindex_entry *v, size_t n);

/* A fingerprint of the sorted entries named for `nspid` (keys, inodes, change times): 0 when
 * there is none, and another value when one is added, removed or replaced under its name. */
uint64_t procindex_entries_fp(const struct procindex_entry *v, size_t n, pid_t nspid);

/* The last pid allocated, from /proc/loadavg ("0.00 0.01 0.05 1/123 4567\n"). Returns 0, or
 * -EPROTO when the text is not of that form. Pure. */
int procindex_parse_loadavg(const char *buf, size_t len, pid_t *ret_last_pid);

struct procindex_proc {
    pid_t pid;
    unsigned flags;
    struct proc_stat stat; /* with stat on (start time, comm raw, image marks); else zero */
};

struct procindex;

/* A new index over the /proc directory `proc_dirfd` (not owned). With `stat`, every process's
 * stat is read when probed and while it is young (watch needs start times and image marks);
 * `ps` leaves it off. Returns NULL when out of memory. */
struct procindex *procindex_new(int proc_dirfd, bool stat);
void procindex_free(struct procindex *x);

/* One pass: lists /proc (skipping ourselves), probes the processes not seen before, lists each
 * socket directory. Acts as each group's user (creds.h) to open its directory. Returns 0 or a
 * negative errno when /proc itself cannot be listed, or -EINTR on a stop
 * (procindex_set_interrupt). */
int procindex_scan(struct procindex *x, int64_t now_ms, struct cla_error *e);

/* The processes of the last scan, sorted by pid. */
size_t procindex_count(const struct procindex *x);
const struct procindex_proc *procindex_at(const struct procindex *x, size_t i);

/* How long ago a process with this start time (clock ticks since boot) started; 0 when the
 * clocks disagree. */
int64_t procindex_age_ms(uint64_t starttime);

/* Socket directories open (groups with members), for tests and the benchmark. */
size_t procindex_groups(const struct procindex *x);

/* Has a process been made in our PID namespace since the last scan (/proc/loadavg's last pid
 * moved, and a pid it allocated names a process, not a thread of one, nor one gone already)?
 * The pids allocated since are looked up one by one (their status's Tgid), PROCINDEX_PEEK_MAX
 * at most (more: true), each once. True when unknown, or when /proc is not of our PID namespace.
 * Changes nothing the scan sees. For a caller that scans at once when it says yes (watch's
 * tick): a node of .NET apps makes and ends threads all the time (the thread pool, the tiering
 * worker), and their pids ask for no scan. */
#define PROCINDEX_PEEK_MAX 16
bool procindex_new_process(struct procindex *x);

/* Event-driven discovery (watch): the socket directories the helper holds are watched with
 * inotify (IN_CREATE, IN_MOVED_TO, the directory leaving), each as the user that opened it and
 * on the directory opened (direvents.h; at most DIREVENTS_WATCHES_MAX). procindex_events_fd
 * gives the fd to poll, fetched again from a fresh helper after one was given up (-1: none).
 * The fd is the index's. procindex_events_read reads what is queued (at most DIREVENTS_READ_MAX
 * bytes) into *ret and returns true when a scan is owed: a socket name came, a directory went, the
 * queue overflowed. The scan is then the same as any other, the directories named looked at
 * (PROCINDEX_GROUPS_FULL_MS): an event is a hint, never used. */
int procindex_events_fd(struct procindex *x);
bool procindex_events_read(struct procindex *x, struct direvents *ret);

/* The runtime files' hints (procindex_hints.h) in an instance of their own, fetched as above
 * (-1: none), so that a caller can read them while it leaves the directories' queue unread.
 * procindex_hints_read reads what is queued (at most DIREVENTS_READ_MAX bytes) and returns the
 * opens seen (an overflow counts as one). */
int procindex_hints_fd(struct procindex *x);
unsigned procindex_hints_read(struct procindex *x);

/* For a caller that lets its stop signals in only while it waits (watch): the waits for the
 * helper use `mask`, and a signal that sets *stop ends the scan with -EINTR (fsworker.h). */
void procindex_set_interrupt(struct procindex *x, const sigset_t *mask,
                             volatile sig_atomic_t *stop);

/* `fn` gets a sentence (rendered, with the next step) each time a directory stops answering. */
void procindex_on_unreachable(struct procindex *x, void (*fn)(const char *msg, void *userdata),
                              void *userdata);

/* The full look's filesystem part for the pinned `t` (as diag_socket_find, diag_socket_open,
 * each as t's user: creds.h), made by the helper on the same process (pid and start time).
 * -ETIMEDOUT when it did not answer in time: the process is then UNREACHABLE from the next
 * scan on. procindex_socket_open returns the O_PATH fd of the socket. */
int procindex_socket_find(struct procindex *x, const struct target *t, struct diag_socket *ret,
                          struct cla_error *e);
int procindex_socket_open(struct procindex *x, const struct target *t, const struct diag_socket *s,
                          struct cla_error *e);

/* The pinned `t` has answered as a runtime (ProcessInfo): with events on (watch), the files it
 * was started from are watched for the next start (procindex_hints.h), by the helper, as t's
 * user, on the same process. A socket name proves nothing: only a runtime's answer earns a
 * hint, so a process that makes a name for itself gets none of the PROCINDEX_HINTS_MAX places.
 * Returns how many files were newly watched, or a negative errno (an answer that did not come
 * marks the process as procindex_socket_find's does). */
int procindex_hint_runtime(struct procindex *x, const struct target *t, struct cla_error *e);

#endif
