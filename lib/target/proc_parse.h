/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_PROC_PARSE_H
#define CLRATTACH_PROC_PARSE_H

/*
 * Parsers for /proc/<pid> files and diagnostic socket names, on buffers only. Everything here
 * reads bytes a target controls (its comm, its environment, its command line), so every parser
 * takes an explicit length, checks every field and rejects the rest with -EPROTO.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"

struct proc_stat {
    char comm[64]; /* as the kernel shows it, at most 15 bytes plus the NUL in practice */
    char state;
    pid_t ppid;
    uint64_t starttime; /* field 22: clock ticks since boot; the runtime's socket key */
    /* Fields 26 startcode, 28 startstack, 48 arg_start, 50 env_start: addresses of the program
     * image, new with every execve. 0 when absent or when the reader may not ptrace-read the
     * process (the kernel hides them then). */
    uint64_t exec_marks[4];
};

/* Parses /proc/<pid>/stat. comm may hold spaces and ')' so fields are counted from the LAST ')'
 * (as the runtime itself does). comm is kept raw (the process chose it: render it before showing
 * it, see render.h); a NUL in it is malformed. Returns 0 or -EPROTO. */
int proc_parse_stat(const char *buf, size_t len, struct proc_stat *ret_stat, struct cla_error *e);

struct proc_status {
    pid_t nspid;      /* innermost pid (last NSpid value): the pid the runtime knows itself by */
    int nspid_levels; /* pid namespaces deep: >= 1 from NSpid, 0 when have_nspid is false */
    uid_t uid[4];     /* real, effective, saved, filesystem */
    gid_t gid[4];
    bool have_nspid; /* kernels before 4.1 have no NSpid line */
    /* CapEff: effective capabilities, meaningful in the process's own user namespace. 0 when
     * the line is missing: acting for it then keeps no capability of ours. */
    uint64_t cap_eff;
    bool have_cap_eff;
    /* Groups: the supplementary groups, the first PROC_GROUPS_MAX of them; a longer list
     * sets groups_truncated (acting with fewer groups never grants more than it has). */
    gid_t groups[PROC_GROUPS_MAX];
    size_t ngroups;
    bool groups_truncated;
};

/* Parses /proc/<pid>/status for Uid, Gid, NSpid, CapEff and Groups. Uid and Gid are required.
 * Returns 0 or -EPROTO. */
int proc_parse_status(const char *buf, size_t len, struct proc_status *ret_status,
                      struct cla_error *e);

/* Looks `name` up in a NUL-separated environment block. Returns 1 and points *ret_value into buf
 * (with its length; the value need not be NUL-terminated at the end of a truncated block), or 0
 * when absent. The last assignment wins, as getenv() in the target would see it. */
int proc_environ_get(const char *buf, size_t len, const char *name, const char **ret_value,
                     size_t *ret_len);

/* proc_environ_get for `n` names in one pass over the block (a scan of thousands of processes
 * reads every environment: one pass, not one per name). values[i] is NULL when names[i] is
 * absent, else it points into buf with lens[i] bytes. */
void proc_environ_get_many(const char *buf, size_t len, const char *const *names, size_t n,
                           const char **values, size_t *lens);

/* Which variable of the environment block turns the runtime's diagnostic IPC off (=0): the
 * runtime reads each knob under both prefixes, DOTNET_ and COMPlus_, and .NET 8 added the _IPC
 * switch. Returns its name (static), or NULL when none does or buf is NULL. */
const char *proc_environ_diagnostics_off(const char *buf, size_t len);

/* The namespace a /proc/<pid>/ns/<type> link names, from its readlink() text ("mnt:[4026531841]"):
 * its inode number, which is what stat() through the link reports as st_ino. readlink() costs
 * the kernel a third of stat(), which builds a dentry for the namespace and drops it again.
 * Returns 0, or -EPROTO for any other text (another type, no brackets, not a decimal number). */
int proc_ns_link_parse(const char *buf, size_t len, const char *type, uint64_t *ret_ino);

/* Parses "dotnet-diagnostic-<pid>-<key>-socket". Returns 1 with pid and key, 0 when the name is
 * not exactly of that form (a dsrouter socket, another file, leading zeros, overflow). */
int proc_socket_name_parse(const char *name, size_t len, pid_t *ret_pid, uint64_t *ret_key);

/* The runtime's TMPDIR rule (PAL GetTempPathA): the value when set and non-empty, with one '/'
 * appended unless it ends in one; else "/tmp/". Writes into out. The target's value is refused
 * with -EPROTO and a message naming the rule it breaks (quoting it rendered) when it is not
 * absolute, has a "." or ".." component, is not valid UTF-8, or holds any character render.h
 * escapes (control, C1, bidi, invisible, separator); -ENAMETOOLONG when it does not fit. */
int proc_tmpdir_from_environ(const char *env, size_t env_len, char *out, size_t size,
                             struct cla_error *e);

/* One line of /proc/<pid>/mountinfo, with the mount point as the PROCESS sees it (relative to
 * its root) and the flags that decide whether a shared object can be placed and mapped there. */
struct proc_mount {
    char mount_point[TARGET_PATH_MAX_MOUNT];
    char fstype[32];
    bool read_only; /* per-mount "ro" or superblock "ro" */
    bool noexec;    /* mmap(PROT_EXEC) of files here fails: dlopen gives 0x8007007E */
};

/* Parses a mountinfo file into a new array (caller frees). Octal escapes (\040) in mount points
 * are decoded. Returns 0, or -EPROTO for a malformed line, -E2BIG past PROC_MOUNTS_MAX lines. */
int proc_parse_mountinfo(const char *buf, size_t len, struct proc_mount **ret_mounts, size_t *ret_n,
                         struct cla_error *e);

/* The mount that holds absolute `path`: the longest mount point that is a path prefix of it,
 * the last listed winning among equals (it is mounted on top) except for "/", where the first
 * (the process's root) wins. NULL when none. Pure. */
const struct proc_mount *proc_mount_for_path(const struct proc_mount *mounts, size_t n,
                                             const char *path);

/* Scans /proc/<pid>/maps text for the dynamic loader the process runs with.
 * Returns 1 for musl (ld-musl-*), 2 for glibc (ld-linux-*), 0 when neither is seen. */
int proc_maps_libc(const char *buf, size_t len);

/* Is a file whose path ends in `/name` mapped (any line's path column)? Returns 1 or 0. */
int proc_maps_has(const char *buf, size_t len, const char *name);

/* proc_maps_has() over maps text that arrives in pieces (reads of the /proc file), so that a
 * reader can stop at the first line that matches. Whole lines only are scanned: a line cut by a
 * read waits for the rest. A line is at most a path (PATH_MAX) and its numbers; one longer than
 * the buffer is malformed. */
#define PROC_MAPS_SCAN_BUF 16384
struct proc_maps_scan {
    char buf[PROC_MAPS_SCAN_BUF];
    size_t have; /* bytes of an unfinished line at the start of buf */
};

/* The caller has put `n` more bytes at s->buf + s->have (at most PROC_MAPS_SCAN_BUF - s->have);
 * n == 0 marks the end, where a last line without its newline counts too. Returns 1 when a
 * whole line so far names `name`, 0 when none did yet, -EPROTO for a line longer than the
 * buffer, -EINVAL for more bytes than there was room for. */
int proc_maps_scan_feed(struct proc_maps_scan *s, size_t n, const char *name);

/* The shared objects mapped (absolute paths whose last component holds ".so"; " (deleted)" ones
 * skipped), each once, in order of first mapping, packed NUL-terminated into `out`. Stops at
 * `max` paths or when `out` is full. Returns how many were stored. The paths are the target's
 * text: for lookups in its root, never for printing raw. */
size_t proc_maps_libraries(const char *buf, size_t len, char *out, size_t size, size_t max);

/* The path of the mapped CoreCLR runtime library (last component exactly "libcoreclr.so"), the
 * first one mapped, into `out` (NUL-terminated). Returns 1 when found, 0 when none is mapped or
 * its path does not fit `size`. The target's text, as above. */
int proc_maps_runtime_library(const char *buf, size_t len, char *out, size_t size);

#endif
