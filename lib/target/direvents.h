/* SPDX-License-Identifier: Apache-2.0 */
/* What a read of the discovery inotify queue says (the names in it are the target's): whether a
 * diagnostic socket name came, a watch ended, the queue overflowed, or a runtime's file was
 * opened (the hints: an exec of a .NET host, a load of libcoreclr.so). Pure: no I/O. */
#ifndef CLRATTACH_DIREVENTS_H
#define CLRATTACH_DIREVENTS_H

#include <stdbool.h>
#include <stddef.h>

/* The watches (directories) a socket name came in that a read tells apart; past that many, a
 * name in any of them (wds_lost). */
#define DIREVENTS_WDS_MAX 16

struct direvents {
    unsigned records; /* records walked */
    unsigned sockets; /* IN_CREATE / IN_MOVED_TO of a dotnet-diagnostic-<pid>-<key>-socket name */
    int wds[DIREVENTS_WDS_MAX]; /* ... in these watches (each once) */
    unsigned nwds;
    bool wds_lost;  /* ... and in more than DIREVENTS_WDS_MAX of them */
    bool gone;      /* a watched directory went away (deleted, moved, unmounted, watch ended) */
    bool overflow;  /* IN_Q_OVERFLOW, or a record that does not fit: only a scan can tell */
    unsigned opens; /* IN_OPEN of a watched runtime file (procindex_hints.h): a hint only */
};

/* Adds what the bytes of one read() of an inotify fd hold to *ret (not cleared: several reads
 * add up). A record cut short or with a length past the buffer ends the walk as an overflow.
 * Returns true when a scan is owed (a socket name, a watch gone, an overflow); an open alone
 * owes none (the caller decides whether a new process came with it). */
bool direvents_parse(const void *buf, size_t len, struct direvents *ret);

#endif
