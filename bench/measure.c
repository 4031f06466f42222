/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs a command and prints "wall_ms maxrss_kb status" on stderr's last line (fd 3 if open,
 * so the command's own stderr stays apart): wall time on CLOCK_MONOTONIC from just before fork
 * to the child's exit, and its peak RSS from wait4's rusage. Used by bench/run.sh in place of
 * /usr/bin/time, whose %e has only centisecond resolution.
 * Usage: measure CMD [ARG...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: measure CMD [ARG...]\n", stderr);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("measure: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("measure: exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("measure: wait4");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *out = fcntl(3, F_GETFD) >= 0 ? fdopen(3, "w") : stderr;
    fprintf(out ? out : stderr, "%.3f %ld %d\n", ms, ru.ru_maxrss, code);
    return code;
}
