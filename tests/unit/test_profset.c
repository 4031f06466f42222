/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layouts --profiler accepts (lib/profset/profset.c): a single .so, a profiler directory, a
 * bundle of single files or of directories per RID, a NuGet package root or its runtimes/ folder,
 * a home (RID folders beside other files, read whole), and a .so or tar stream on stdin; the entry
 * chosen in each (--entry's forms), and the choice by the target's RID.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profset/profset.h"
#include "base/util.h"

#define FIX "tests/fixtures/elf/"

static char base[64];

/* A NuGet-shaped package: two exporters per RID (engine and plugin, as CLRIE ships them), a
 * config; and other layouts made from the same fixtures. */
static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-profset-XXXXXX");
    assert_non_null(mkdtemp(base));
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    sh("cd %s && for r in linux-x64 linux-musl-x64 win-x64; do mkdir -p pkg/runtimes/$r/native "
       "&& cp %s/" FIX "entry-gnu.so pkg/runtimes/$r/native/libEngine.so && cp %s/" FIX
       "entry-sysv.so pkg/runtimes/$r/native/libPlugin.so && echo c "
       ">pkg/runtimes/$r/native/x.config; done && mkdir -p pkg/lib/net8.0 && "
       "mkdir -p bundle/linux-x64 bundle/linux-musl-x64 && cp %s/" FIX
       "glibc-x64.so bundle/linux-x64/p.so && cp %s/" FIX "musl-x64.so bundle/linux-musl-x64/p.so",
       base, cwd, cwd, cwd, cwd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", base);
    return 0;
}

static int load(const char *rel, const char *entry, struct profset *ps, struct cla_error *e)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    return profset_load(p, entry, ps, e);
}

static const struct profset_build *choose(const struct profset *ps, const char *rid)
{
    struct rid r;
    assert_int_equal(rid_parse(rid, &r), 0);
    const struct profset_build *b = NULL;
    struct cla_error e = {0};
    if (profset_choose(ps, &r, &b, &e) < 0)
        return NULL;
    return b;
}

static void test_nuget_root_and_runtimes(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    /* Two exporters: --entry decides; without it the candidates are named. */
    assert_int_equal(load("pkg", NULL, &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "libEngine.so, libPlugin.so"));
    assert_non_null(strstr(e.hint, "--entry"));
    assert_int_equal(load("pkg", "libEngine.so", &ps, &e), 0);
    assert_string_equal(ps.layout, "nuget");
    assert_int_equal(ps.n, 2); /* linux-x64 and linux-musl-x64; win-x64 is not Linux */
    const struct profset_build *b = choose(&ps, "linux-x64");
    assert_non_null(b);
    assert_string_equal(b->variant, "linux-x64");
    assert_non_null(b->dir);
    assert_string_equal(b->dir->files[b->dir->entry].path, "libEngine.so");
    assert_int_equal(b->dir->n, 3);
    assert_non_null(choose(&ps, "alpine.3.19-x64"));
    assert_null(choose(&ps, "linux-arm64"));
    profset_free(&ps);
    /* Its runtimes/ folder is the same thing. */
    assert_int_equal(load("pkg/runtimes", "libEngine.so", &ps, &e), 0);
    assert_string_equal(ps.layout, "nuget");
    assert_int_equal(ps.n, 2);
    profset_free(&ps);
    /* One RID's native/ folder: a plain profiler directory. */
    assert_int_equal(load("pkg/runtimes/linux-x64/native", "libEngine.so", &ps, &e), 0);
    assert_string_equal(ps.layout, "directory");
    assert_false(ps.bundle);
    profset_free(&ps);
}

static void test_bundle_and_single(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    /* A bundle of lone .so files stays single files (compatible with earlier bundles). */
    assert_int_equal(load("bundle", NULL, &ps, &e), 0);
    assert_string_equal(ps.layout, "bundle");
    const struct profset_build *b = choose(&ps, "linux-musl-x64");
    assert_non_null(b);
    assert_null(b->dir);
    assert_string_equal(b->name, "p.so");
    profset_free(&ps);
    assert_int_equal(load("bundle/linux-x64/p.so", NULL, &ps, &e), 0);
    assert_string_equal(ps.layout, "file");
    assert_string_equal(ps.builds[0].name, "p.so");
    profset_free(&ps);
    assert_int_equal(load("bundle/linux-x64/p.so", "p.so", &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "--entry"));
}

static void test_stdin(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    char p[256];
    snprintf(p, sizeof(p), "%s/t.tar", base);
    sh("tar -C %s/pkg/runtimes/linux-x64/native -cf %s .", base, p);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_int_equal(profset_load_fd(fd, "libPlugin.so", &ps, &e), 0);
    close(fd);
    assert_string_equal(ps.layout, "stdin");
    assert_non_null(ps.builds[0].dir);
    assert_string_equal(ps.builds[0].dir->files[ps.builds[0].dir->entry].path, "libPlugin.so");
    profset_free(&ps);
    fd = open(FIX "glibc-x64.so", O_RDONLY | O_CLOEXEC);
    assert_int_equal(profset_load_fd(fd, NULL, &ps, &e), 0);
    close(fd);
    assert_null(ps.builds[0].dir);
    profset_free(&ps);
    fd = open("tests/fixtures/elf/gen.sh", O_RDONLY | O_CLOEXEC);
    assert_int_equal(profset_load_fd(fd, NULL, &ps, &e), -EINVAL);
    close(fd);
    assert_non_null(strstr(e.msg, "neither an ELF shared object nor a tar stream"));
}

/* A pipe whose writer stays open, as a `kubectl debug -i` container's stdin does after kubectl's
 * input ends: a child writes `path` in `step`-byte pieces and then waits to be killed, and the
 * test holds its own copy of the write end too. Returns the read end. */
static int open_pipe_never_closed(const char *path, size_t step, pid_t *ret_child, int *ret_wfd)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* Gone with the test, even when the runner's timeout kills it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *buf;
        size_t len;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || util_read_all(fd, 1 << 24, &buf, &len) < 0)
            _exit(1);
        for (size_t off = 0; off < len;) {
            size_t n = len - off < step ? len - off : step;
            if (write(p[1], buf + off, n) != (ssize_t)n)
                _exit(1);
            off += n;
            usleep(100);
        }
        for (;;)
            pause();
    }
    *ret_child = child;
    *ret_wfd = p[1];
    return p[0];
}

static void close_pipe(int rfd, int wfd, pid_t child)
{
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(rfd);
    close(wfd);
}

/* `--profiler -` returns at the end of the archive or the ELF file: the unit runner's timeout
 * fails this test if the read waits for an EOF that never comes. */
static void test_stdin_never_closed(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    char p[256];
    pid_t child;
    int wfd;
    snprintf(p, sizeof(p), "%s/t.tar", base);
    sh("tar -C %s/pkg/runtimes/linux-x64/native -cf %s .", base, p);
    static const size_t steps[] = {100, 512, 65536};
    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        int fd = open_pipe_never_closed(p, steps[i], &child, &wfd);
        assert_int_equal(profset_load_fd(fd, "libPlugin.so", &ps, &e), 0);
        assert_string_equal(ps.builds[0].dir->files[ps.builds[0].dir->entry].path, "libPlugin.so");
        assert_int_equal(ps.builds[0].dir->n, 3);
        profset_free(&ps);
        close_pipe(fd, wfd, child);

        fd = open_pipe_never_closed(FIX "glibc-x64.so", steps[i], &child, &wfd);
        assert_int_equal(profset_load_fd(fd, NULL, &ps, &e), 0);
        assert_null(ps.builds[0].dir);
        /* All of it, not a prefix that happened to parse. */
        struct stat st;
        assert_int_equal(stat(FIX "glibc-x64.so", &st), 0);
        assert_int_equal(ps.builds[0].len, st.st_size);
        profset_free(&ps);
        close_pipe(fd, wfd, child);

        /* Neither format: refused as soon as a tar header's worth shows it. */
        fd = open_pipe_never_closed("tests/fixtures/elf/gen.sh", steps[i], &child, &wfd);
        assert_int_equal(profset_load_fd(fd, NULL, &ps, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "neither an ELF shared object nor a tar stream"));
        close_pipe(fd, wfd, child);
    }
}

/* The build a target gets, and the refusals before anything is sent: a single file built for
 * another libc or machine, a bundle without the target's RID or for a target whose RID is not
 * known. Each message names both sides and the hint the way out. */
static void test_choose_refusals(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    const struct profset_build *b = NULL;
    struct rid r;

    assert_int_equal(load("bundle/linux-x64/p.so", NULL, &ps, &e), 0);
    assert_non_null(choose(&ps, "linux-x64"));
    assert_null(choose(&ps, "linux-musl-x64"));
    assert_null(choose(&ps, "linux-arm64"));
    assert_int_equal(rid_parse("linux-musl-x64", &r), 0);
    assert_int_equal(profset_choose(&ps, &r, &b, &e), -EXDEV);
    assert_non_null(strstr(e.msg, "musl"));
    assert_non_null(strstr(e.hint, "linux-musl-x64"));
    assert_null(b);
    /* A target whose RID is unknown gets the single file: nothing says it cannot load it. */
    struct rid unknown = {.libc = RID_LIBC_UNKNOWN, .arch = RID_ARCH_UNKNOWN};
    assert_int_equal(profset_choose(&ps, &unknown, &b, &e), 0);
    assert_ptr_equal(b, &ps.builds[0]);
    profset_free(&ps);

    assert_int_equal(load("bundle", NULL, &ps, &e), 0);
    assert_non_null(choose(&ps, "linux-x64"));
    b = NULL;
    assert_int_equal(rid_parse("linux-arm64", &r), 0);
    assert_int_equal(profset_choose(&ps, &r, &b, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "no build for linux-arm64"));
    assert_non_null(strstr(e.msg, "linux-x64"));
    assert_non_null(strstr(e.hint, "linux-arm64/"));
    assert_int_equal(profset_choose(&ps, &unknown, &b, &e), -ENOENT);
    assert_non_null(strstr(e.hint, "--rid"));
    assert_null(b);
    profset_free(&ps);
}

/* A home (OpenTelemetry's release layout): RID folders beside net/ and LICENSE, read whole; the
 * entry is the library in the target's RID folder, or --entry as a path inside the home. */
static void test_home(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    sh("cd %s && mkdir -p home/linux-x64 home/linux-musl-x64 home/net && cp %s/" FIX
       "entry-gnu.so home/linux-x64/Native.so && cp %s/" FIX
       "entry-sysv.so home/linux-musl-x64/Native.so && echo m > home/net/Managed.dll && "
       "echo l > home/LICENSE && mkdir -p ridonly/linux-x64 ridonly/win-x64 && cp %s/" FIX
       "glibc-x64.so ridonly/linux-x64/p.so && cp %s/" FIX "glibc-x64.so ridonly/win-x64/p.so",
       base, cwd, cwd, cwd, cwd);
    static const char *const entries[] = {NULL, "Native.so", "./Native.so"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(load("home", entries[i], &ps, &e), 0);
        assert_string_equal(ps.layout, "home");
        assert_true(ps.bundle);
        assert_int_equal(ps.n, 2);
        const struct profset_build *b = choose(&ps, "linux-x64");
        assert_non_null(b);
        assert_string_equal(b->variant, "linux-x64");
        /* The whole tree: 3 folders and 4 files, names kept. */
        assert_int_equal(b->dir->n, 7);
        assert_string_equal(b->dir->files[b->dir->entry].path, "linux-x64/Native.so");
        b = choose(&ps, "alpine.3.19-x64");
        assert_non_null(b);
        assert_string_equal(b->dir->files[b->dir->entry].path, "linux-musl-x64/Native.so");
        assert_ptr_equal(b->dir->files, ps.builds[0].dir->files);
        assert_null(choose(&ps, "linux-arm64"));
        profset_free(&ps);
    }
    const struct profset_build *b = NULL;
    struct rid r;
    assert_int_equal(load("home", NULL, &ps, &e), 0);
    assert_int_equal(rid_parse("linux-arm64", &r), 0);
    assert_int_equal(profset_choose(&ps, &r, &b, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "the home has no build for linux-arm64"));
    assert_non_null(strstr(e.hint, "linux-arm64/ folder"));
    profset_free(&ps);
    /* A path inside the home: one build, whatever the RID, checked as a single file is. */
    static const char *const paths[] = {"linux-x64/Native.so", "./linux-x64/Native.so",
                                        ".//linux-x64/./Native.so"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(load("home", paths[i], &ps, &e), 0);
        assert_string_equal(ps.layout, "home");
        assert_false(ps.bundle);
        assert_int_equal(ps.n, 1);
        assert_string_equal(ps.builds[0].variant, "linux-x64");
        assert_int_equal(ps.builds[0].dir->n, 7);
        assert_string_equal(ps.builds[0].dir->files[ps.builds[0].dir->entry].path,
                            "linux-x64/Native.so");
        assert_non_null(choose(&ps, "linux-x64"));
        assert_null(choose(&ps, "linux-musl-x64")); /* a glibc build */
        profset_free(&ps);
    }
    /* Never outside the home, and never a file that is not a profiler. */
    static const char *const bad[] = {"../home/linux-x64/Native.so",
                                      "/linux-x64/Native.so",
                                      "linux-x64/../linux-x64/Native.so",
                                      "linux-x64/nope.so",
                                      "net/Managed.dll",
                                      "nope.so",
                                      "."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (load("home", bad[i], &ps, &e) != -EINVAL)
            fail_msg("--entry %s taken", bad[i]);
        assert_non_null(strstr(e.msg, "--entry"));
    }
    assert_int_equal(load("home", "../x.so", &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "'..'"));
    assert_non_null(strstr(e.hint, "./"));
    /* A RID folder with no profiler library in a home: refused, naming the folder. */
    sh("cd %s && echo x > home/linux-arm64-readme && mkdir -p home/linux-arm64 && echo t > "
       "home/linux-arm64/notes.txt",
       base);
    assert_int_equal(load("home", NULL, &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "linux-arm64/ folder"));
    /* Its RID folders empty: nothing to load. */
    sh("cd %s && mkdir -p emptyhome/linux-x64 && echo l > emptyhome/LICENSE", base);
    assert_int_equal(load("emptyhome", NULL, &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "no file in its Linux RID folders"));
    /* Nothing but RID folders (another OS's among them): a bundle, as before. */
    assert_int_equal(load("ridonly", NULL, &ps, &e), 0);
    assert_string_equal(ps.layout, "bundle");
    assert_int_equal(ps.n, 1);
    assert_null(ps.builds[0].dir);
    profset_free(&ps);
    /* "./" leads --entry in a plain profiler directory too. */
    assert_int_equal(load("pkg/runtimes/linux-x64/native", "./libEngine.so", &ps, &e), 0);
    assert_string_equal(ps.layout, "directory");
    profset_free(&ps);
    sh("rm -rf %s/home %s/ridonly %s/emptyhome", base, base, base);
}

/* What is not a profiler at all: refused with the documented codes, nothing left to free. */
static void test_load_refusals(void **state)
{
    (void)state;
    struct profset ps;
    struct cla_error e = {0};
    assert_int_equal(load("missing.so", NULL, &ps, &e), -ENOENT);
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    sh("cd %s && printf 'not elf' > text.so && cp %s/" FIX "glibc-x64-pie exe && cp %s/" FIX
       "truncated.so truncated.so && mkdir -p empty",
       base, cwd, cwd);
    assert_int_equal(load("text.so", NULL, &ps, &e), -EINVAL);
    assert_int_equal(load("truncated.so", NULL, &ps, &e), -EINVAL);
    /* A PIE executable is ET_DYN too, yet the runtime cannot dlopen it. */
    assert_int_equal(load("exe", NULL, &ps, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "an executable"));
    assert_int_equal(load("empty", NULL, &ps, &e), -EINVAL);
    sh("rm -rf %s/text.so %s/exe %s/truncated.so %s/empty", base, base, base, base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nuget_root_and_runtimes),
        cmocka_unit_test(test_bundle_and_single),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_stdin_never_closed),
        cmocka_unit_test(test_choose_refusals),
        cmocka_unit_test(test_home),
        cmocka_unit_test(test_load_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
