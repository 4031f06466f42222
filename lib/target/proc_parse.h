/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsers for /proc/<pid>/stat and status, namespace links and diagnostic socket names, on
 * buffers only. Everything here reads bytes a target controls (its comm, the names in its
 * TMPDIR), so every parser takes an explicit length, checks every field and rejects the rest
 * with -EPROTO. The target's maps, mountinfo and environ have parsers of their own
 * (proc_maps.h, proc_mounts.h, proc_environ.h).
 */
#ifndef CLRATTACH_PROC_PARSE_H
#define CLRATTACH_PROC_PARSE_H

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
    pid_t tgid;      /* its thread group (the process a thread's pid belongs to) */
    bool have_tgid;
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

/* Parses /proc/<pid>/status for Uid, Gid, Tgid, NSpid, CapEff and Groups. Uid and Gid are required.
 * Returns 0 or -EPROTO. */
int proc_parse_status(const char *buf, size_t len, struct proc_status *ret_status,
                      struct cla_error *e);

/* The namespace a /proc/<pid>/ns/<type> link names, from its readlink() text ("mnt:[4026531841]"):
 * its inode number, which is what stat() through the link reports as st_ino. readlink() costs
 * the kernel a third of stat(), which builds a dentry for the namespace and drops it again.
 * Returns 0, or -EPROTO for any other text (another type, no brackets, not a decimal number). */
int proc_ns_link_parse(const char *buf, size_t len, const char *type, uint64_t *ret_ino);

/* Parses "dotnet-diagnostic-<pid>-<key>-socket". Returns 1 with pid and key, 0 when the name is
 * not exactly of that form (a dsrouter socket, another file, leading zeros, overflow). */
int proc_socket_name_parse(const char *name, size_t len, pid_t *ret_pid, uint64_t *ret_key);

#endif
