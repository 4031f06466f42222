/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_GUARDS_H
#define CLRATTACH_TEST_GUARDS_H

/*
 * Guards for tests that build a hostile target's traps.
 *
 * BOUNDED(): a deadline for a statement that might block (an open of a FIFO planted by a hostile target):
 * past `secs` seconds SIGALRM jumps out of it and the test fails with the statement's text,
 * instead of hanging the suite. Include after cmocka.h. The statement's results must live in
 * variables declared before BOUNDED() (and `volatile` where the compiler asks).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf bounded_jmp;

static inline void bounded_on_alarm(int sig)
{
    (void)sig;
    siglongjmp(bounded_jmp, 1);
}

#define BOUNDED(secs, stmt)                                                                        \
    do {                                                                                           \
        struct sigaction bounded_sa;                                                               \
        memset(&bounded_sa, 0, sizeof(bounded_sa));                                               \
        bounded_sa.sa_handler = bounded_on_alarm;                                                  \
        sigaction(SIGALRM, &bounded_sa, NULL);                                                     \
        if (sigsetjmp(bounded_jmp, 1)) {                                                           \
            fail_msg("blocked for %d s: %s", (int)(secs), #stmt);                                  \
        } else {                                                                                   \
            alarm(secs);                                                                           \
            stmt;                                                                                  \
            alarm(0);                                                                              \
        }                                                                                          \
    } while (0)

/* tty_nr, field 7 of /proc/self/stat: 0 while the process has no controlling terminal, -1 when
 * unreadable. */
static inline long own_tty_nr(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* comm may hold anything: count from its closing parenthesis. ") S ppid pgrp sid tty_nr" */
    const char *p = strrchr(buf, ')');
    char state;
    long ppid, pgrp, sid, tty;
    if (!p || sscanf(p + 1, " %c %ld %ld %ld %ld", &state, &ppid, &pgrp, &sid, &tty) != 5)
        return -1;
    return tty;
}

#endif
