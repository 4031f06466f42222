/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files the operator names (--profiler, --client-data @FILE): only a regular file is read. A FIFO
 * is refused at once (an open for reading would wait for a writer forever), a tty never becomes
 * our controlling terminal, and every refusal names what was found.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guards.h"
#include "root.h"
#include "profset/profset.h"
#include "profset/userfile.h"

static char base[256];

static void path_of(char *out, size_t size, const char *rel)
{
    snprintf(out, size, "%s/%s", base, rel);
}

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-userfile.XXXXXX");
    assert_non_null(mkdtemp(base));
    char p[512];
    path_of(p, sizeof(p), "data");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("out=/tmp/r.json", f);
    fclose(f);
    path_of(p, sizeof(p), "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    /* Only root may make a device node; the checks that need it skip without. */
    path_of(p, sizeof(p), "null");
    if (geteuid() == 0)
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
    path_of(p, sizeof(p), "dir");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "link");
    assert_int_equal(symlink("data", p), 0);
    /* A bundle whose linux-x64 build is a FIFO. */
    path_of(p, sizeof(p), "bundle");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "bundle/linux-x64");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "bundle/linux-x64/libprobe.so");
    assert_int_equal(mkfifo(p, 0600), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *rel[] = {
        "data",   "fifo", "null", "dir", "link", "bundle/linux-x64/libprobe.so", "bundle/linux-x64",
        "bundle", ""};
    char p[512];
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        path_of(p, sizeof(p), rel[i]);
        if (remove(p) < 0 && errno != ENOENT)
            fprintf(stderr, "cleanup %s: %s\n", p, strerror(errno));
    }
    return 0;
}

static void test_regular(void **state)
{
    (void)state;
    char p[512], *buf = NULL;
    size_t len = 0;
    struct cla_error e = {0};
    path_of(p, sizeof(p), "data");
    assert_int_equal(userfile_read(p, 4096, "--client-data", &buf, &len, &e), 0);
    assert_int_equal(len, 15);
    assert_string_equal(buf, "out=/tmp/r.json");
    free(buf);
    /* The operator's own links are followed. */
    path_of(p, sizeof(p), "link");
    assert_int_equal(userfile_read(p, 4096, "--client-data", &buf, &len, &e), 0);
    free(buf);
    path_of(p, sizeof(p), "data");
    assert_int_equal(userfile_read(p, 10, "--client-data", &buf, &len, &e), -E2BIG);
    assert_non_null(strstr(e.msg, "exceeds 10 bytes"));
    path_of(p, sizeof(p), "missing");
    assert_int_equal(userfile_read(p, 10, "--client-data", &buf, &len, &e), -ENOENT);
}

/* One allocation from fstat's size when the file keeps to it; the cap holds whatever the size
 * says, and files whose size says nothing (a pipe, /proc) are read whole all the same. */
static void test_read_fd_sized(void **state)
{
    (void)state;
    char p[512], *buf = NULL;
    size_t len = 0;
    path_of(p, sizeof(p), "data");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(userfile_read_fd(fd, 15, &buf, &len), 0); /* exactly the cap */
    assert_int_equal(len, 15);
    assert_string_equal(buf, "out=/tmp/r.json");
    free(buf);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    assert_int_equal(userfile_read_fd(fd, 14, &buf, &len), -E2BIG);
    close(fd);

    fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC); /* st_size 0 */
    assert_true(fd >= 0);
    assert_int_equal(userfile_read_fd(fd, 1 << 20, &buf, &len), 0);
    assert_true(len > 100);
    assert_non_null(strstr(buf, "Name:"));
    assert_int_equal(buf[len], '\0');
    free(buf);
    close(fd);

    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    static char chunk[20000];
    memset(chunk, 'x', sizeof(chunk));
    pid_t w = fork();
    if (w == 0) {
        close(pfd[0]);
        _exit(write(pfd[1], chunk, sizeof(chunk)) == (ssize_t)sizeof(chunk) ? 0 : 1);
    }
    close(pfd[1]);
    assert_int_equal(userfile_read_fd(pfd[0], 1 << 20, &buf, &len), 0);
    assert_int_equal(len, sizeof(chunk));
    assert_int_equal(memcmp(buf, chunk, sizeof(chunk)), 0);
    free(buf);
    close(pfd[0]);
    int status;
    assert_int_equal(waitpid(w, &status, 0), w);
    assert_int_equal(status, 0);
}

static void expect_refused(const char *rel, int code, const char *found)
{
    char p[512], *buf = NULL;
    size_t len = 0;
    struct cla_error e = {0};
    volatile int r = 0;
    path_of(p, sizeof(p), rel);
    BOUNDED(5, r = userfile_read(p, 4096, "--client-data", &buf, &len, &e));
    assert_int_equal(r, code);
    char want[600];
    snprintf(want, sizeof(want), "'%s' given to --client-data is a %s, not a regular file", p,
             found);
    if (!strstr(e.msg, want))
        fail_msg("message: %s", e.msg);
    assert_true(e.hint[0] != '\0');
}

static void test_not_regular(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a character device made with mknod()");
    expect_refused("fifo", -ENXIO, "FIFO");
    expect_refused("null", -ENXIO, "character device");
    expect_refused("dir", -EISDIR, "directory");
}

/* --profiler: a FIFO as the single file or as a bundle's build is a usage error, at once. */
static void test_profiler_fifo(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("a character device made with mknod()");
    char p[512];
    struct profset ps = {0};
    struct cla_error e = {0};
    volatile int r = 0;
    path_of(p, sizeof(p), "fifo");
    BOUNDED(5, r = profset_load(p, NULL, &ps, &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "given to --profiler is a FIFO, not a regular file"));
    assert_non_null(strstr(e.hint, ".so itself"));
    path_of(p, sizeof(p), "bundle");
    BOUNDED(5, r = profset_load(p, NULL, &ps, &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "linux-x64/libprobe.so' is a FIFO"));
    path_of(p, sizeof(p), "null");
    BOUNDED(5, r = profset_load(p, NULL, &ps, &e));
    assert_int_equal(r, -ENXIO);
    assert_non_null(strstr(e.msg, "character device"));
}

/* A session leader without a terminal, handed a pty slave: refused, and still no terminal. */
static int pty_scenario(const char *slave)
{
    alarm(10);
    if (setsid() < 0 || own_tty_nr() != 0)
        return 10;
    char *buf = NULL;
    size_t len = 0;
    struct cla_error e = {0};
    int r = userfile_read(slave, 4096, "--client-data", &buf, &len, &e);
    if (r != -ENXIO || !strstr(e.msg, "character device")) {
        fprintf(stderr, "pty: %d: %s\n", r, e.msg);
        return 20;
    }
    return own_tty_nr() == 0 ? 0 : 21;
}

static void test_pty_never_ctty(void **state)
{
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    char slave[64];
    snprintf(slave, sizeof(slave), "%s", ptsname(master));
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(pty_scenario(slave));
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    close(master);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("pty scenario: %s %d", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular),        cmocka_unit_test(test_read_fd_sized),
        cmocka_unit_test(test_not_regular),    cmocka_unit_test(test_profiler_fifo),
        cmocka_unit_test(test_pty_never_ctty),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
