/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor of a polling watcher's idle cost: a process that does nothing but wake every
 * INTERVAL_MS (ppoll with no descriptor, as watch's pid tick) and read /proc/loadavg once with
 * pread (as the tick does), for SECONDS. No seccomp filter, no table, no scan: what any watcher
 * that polls at that interval costs at the least on this machine. Usage: tick INTERVAL_MS
 * SECONDS. Prints "INTERVAL_MS WAKEUPS CPU_NS": its time on a CPU during the loop only
 * (/proc/self/schedstat, read before and after).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* This process's time on a CPU so far (ns), from /proc/self/schedstat. */
static int read_cpu(unsigned long long *ns)
{
    FILE *f = fopen("/proc/self/schedstat", "re");
    int ok = f && fscanf(f, "%llu", ns) == 1;
    if (f)
        fclose(f);
    if (!ok)
        fputs("tick: /proc/self/schedstat unreadable\n", stderr);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    long ms = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
    long secs = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
    if (ms <= 0 || ms > 10000 || secs <= 0 || secs > 3600) {
        fputs("usage: tick INTERVAL_MS SECONDS (1-10000 ms, 1-3600 s)\n", stderr);
        return 2;
    }
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror("tick: /proc/loadavg");
        return 1;
    }
    unsigned long long cpu0 = 0, cpu1 = 0;
    if (read_cpu(&cpu0) < 0)
        return 1;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    long n = secs * 1000 / ms;
    char buf[128];
    for (long i = 0; i < n; i++) {
        ppoll(NULL, 0, &ts, NULL);
        if (pread(fd, buf, sizeof(buf), 0) < 0) {
            perror("tick: pread");
            return 1;
        }
    }
    close(fd);
    if (read_cpu(&cpu1) < 0)
        return 1;
    printf("%ld %ld %llu\n", ms, n, cpu1 - cpu0);
    return 0;
}
