/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resolving a delivered profiler's DT_NEEDED in a target's view (lib/profset/depcheck.c): a
 * helper found through RUNPATH $ORIGIN/lib inside the delivered directory, libc through a link in
 * the root's multiarch directory or because it is mapped, and a missing library named with who
 * needs it. A library the target has loaded counts under the name its loader would reuse it by:
 * for glibc the mapped file's DT_SONAME (libstdc++.so.6 is the mapped libstdc++.so.6.0.30), for
 * musl the file name only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <limits.h>

#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profset/depcheck.h"
#include "profset/profdir_read.h"
#include "base/util.h"

static char base[64];
static int rootfd = -1;

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-depcheck-XXXXXX");
    assert_non_null(mkdtemp(base));
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    /* The "delivered" tree in the target's /tmp: entry-gnu.so needs libfxhelper.so (RUNPATH
     * $ORIGIN/lib) and libc.so.6. */
    sh("mkdir -p %s/root/tmp/prof/lib %s/root/lib/x86_64-linux-gnu && cp %s/tests/fixtures/elf/"
       "entry-gnu.so %s/root/tmp/prof/libentry.so",
       base, base, cwd, base);
    char p[256];
    snprintf(p, sizeof(p), "%s/root", base);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(rootfd);
    sh("rm -rf %s", base);
    return 0;
}

/* The maps the "target" shows, and how often depcheck asked for them; its LD_LIBRARY_PATH. */
static const char *maps_text, *llp_text;
static int maps_asked;

static const char *maps_of(void *arg, size_t *ret_len)
{
    (void)arg;
    maps_asked++;
    *ret_len = maps_text ? strlen(maps_text) : 0;
    return maps_text;
}

/* What the last check said of names it could not look for everywhere ("not checked: ..."). */
static char note[256];

static int check(const char *maps, struct cla_error *e)
{
    maps_text = maps;
    maps_asked = 0;
    char p[256];
    snprintf(p, sizeof(p), "%s/root/tmp/prof", base);
    _cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct profdir pd;
    assert_int_equal(profdir_read(dfd, p, "libentry.so", &pd, e), 0);
    assert_int_equal(profdir_choose_entry(&pd, "libentry.so", "prof", e), 0);
    struct profset_build b = {.dir = &pd, .elf = *pd.files[pd.entry].elf};
    struct depcheck_input in = {.rootfd = rootfd,
                                .libc = RID_LIBC_GLIBC,
                                .arch = RID_ARCH_X64,
                                .ld_library_path = llp_text,
                                .ld_library_path_len = llp_text ? strlen(llp_text) : 0,
                                .maps = maps_of,
                                .procfd = -1,
                                .build = &b,
                                .delivered = "/tmp/prof"};
    int r = depcheck_run(&in, note, sizeof(note), e);
    profdir_free(&pd);
    return r;
}

static void test_resolution(void **state)
{
    (void)state;
    struct cla_error e = {0};
    /* Nothing yet: the helper is the first miss, named with who needs it and where we looked. */
    assert_int_equal(check(NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "libentry.so needs libfxhelper.so"));
    assert_non_null(strstr(e.msg, "/tmp/prof/lib"));
    assert_non_null(strstr(e.msg, "/usr/lib/x86_64-linux-gnu"));
    assert_non_null(strstr(e.hint, "--skip-dependency-check"));
    /* The helper beside it, through RUNPATH $ORIGIN/lib: now libc is missing. */
    sh("cp tests/fixtures/elf/glibc-x64.so %s/root/tmp/prof/lib/libfxhelper.so", base);
    assert_int_equal(check(NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "needs libc.so.6"));
    /* libc mapped in the target is enough. */
    assert_int_equal(check("1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e), 0);
    assert_int_equal(maps_asked, 1);
    /* Or a link to it in the multiarch directory of the target's root. */
    sh("touch %s/root/lib/x86_64-linux-gnu/libc-2.36.so && ln -s libc-2.36.so "
       "%s/root/lib/x86_64-linux-gnu/libc.so.6",
       base, base);
    assert_int_equal(check(NULL, &e), 0);
    /* Found in the directories, the maps are never read (they are the dearest file to ask the
     * kernel for); a name the directories lack asked for them, once for the whole check. */
    assert_int_equal(check("1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e), 0);
    assert_int_equal(maps_asked, 0);
    /* An absolute link resolves in the target's root, as its loader sees it: present while the
     * file it names exists there, whatever our own root holds under that name. */
    sh("rm %s/root/lib/x86_64-linux-gnu/libc.so.6 && ln -s /lib/x86_64-linux-gnu/libc-2.36.so "
       "%s/root/lib/x86_64-linux-gnu/libc.so.6",
       base, base);
    assert_int_equal(check(NULL, &e), 0);
    sh("rm %s/root/lib/x86_64-linux-gnu/libc-2.36.so", base);
    assert_int_equal(check(NULL, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "needs libc.so.6"));
    assert_int_equal(maps_asked, 1);
    /* A library that is only beside a mapped one (a self-contained app's own directory). */
    sh("mkdir -p %s/root/app && touch %s/root/app/libc.so.6", base, base);
    assert_int_equal(check("1-2 r-xp 0 08:01 9 /app/libcoreclr.so\n", &e), 0);
    assert_int_equal(maps_asked, 1);
}

/* An LD_LIBRARY_PATH longer than the caps (Nix, conda: an entry per package) is checked as far
 * as they go, never refused for its length: the run path and the default directories after it
 * are still searched, and a miss says how many entries were not checked. */
static void test_long_ld_library_path(void **state)
{
    (void)state;
    struct cla_error e = {0};
    char llp[4096];
    size_t n = 0;
    for (int i = 0; i < LDSEARCH_MAX_DIRS + 6; i++)
        n += (size_t)snprintf(llp + n, sizeof(llp) - n, "%s/nix/store/%d-pkg/lib", i ? ":" : "", i);
    /* libc in the first entry; the helper through RUNPATH, which comes after every entry. */
    sh("cp tests/fixtures/elf/glibc-x64.so %s/root/tmp/prof/lib/libfxhelper.so && "
       "rm -f %s/root/lib/x86_64-linux-gnu/libc.so.6 && "
       "mkdir -p %s/root/nix/store/0-pkg/lib %s/root/nix/store/69-pkg/lib && "
       "touch %s/root/nix/store/0-pkg/lib/libc.so.6",
       base, base, base, base, base);
    llp_text = llp;
    if (check(NULL, &e) != 0)
        fail_msg("refused: %s", e.msg);
    assert_int_equal(maps_asked, 0);
    assert_string_equal(note, "");
    /* Only in an entry past the caps: it may be there, so not a refusal; told as "not
     * checked", naming the library and how many entries were not looked in. */
    sh("mv %s/root/nix/store/0-pkg/lib/libc.so.6 %s/root/nix/store/69-pkg/lib/", base, base);
    assert_int_equal(check(NULL, &e), 1);
    assert_int_equal(e.code, 0);
    assert_int_equal(strncmp(note, "not checked: ", 13), 0);
    assert_non_null(strstr(note, "needs libc.so.6"));
    if (!strstr(note, "in none of the places checked (6 LD_LIBRARY_PATH entries not checked"))
        fail_msg("no word of the entries not checked: %s", note);
    /* With every entry checked, the same miss is a refusal. */
    llp_text = "/nix/store/0-pkg/lib";
    assert_int_equal(check(NULL, &e), -ENOENT);
    assert_non_null(strstr(e.hint, "--skip-dependency-check"));
    assert_string_equal(note, "");
    llp_text = llp;
    /* Mapped in the target, as libc is in every .NET app: found, whatever was not checked. */
    assert_int_equal(check("1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e), 0);
    llp_text = NULL;
}

/* The system's C++ runtime as its loader maps it: the versioned file behind the
 * libstdc++.so.6 link (libstdc++.so.6.0.30 or whichever is installed). */
static char cxx_real[PATH_MAX];

/* A single-file profiler built here, whose DT_NEEDED holds libstdc++.so.6 (and no other name
 * the fake root would lack but libc.so.6), delivered at /tmp/cxx/libcxxprof.so. */
static int check_cxx(enum rid_libc libc, int procfd, const char *maps, struct cla_error *e)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/root/tmp/cxx/libcxxprof.so", base);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    char *buf = NULL;
    size_t len;
    assert_int_equal(util_read_all(fd, 1 << 20, &buf, &len), 0);
    struct profset_build b = {0};
    assert_int_equal(elfinfo_parse((const uint8_t *)buf, len, &b.elf, e), 0);
    free(buf);
    assert_string_equal(elfinfo_needed(&b.elf, 0), "libstdc++.so.6");
    maps_text = maps;
    maps_asked = 0;
    struct depcheck_input in = {.rootfd = rootfd,
                                .libc = libc,
                                .arch = RID_ARCH_X64,
                                .maps = maps_of,
                                .procfd = procfd,
                                .build = &b,
                                .delivered = "/tmp/cxx/libcxxprof.so"};
    return depcheck_run(&in, note, sizeof(note), e);
}

static void test_loaded_by_soname(void **state)
{
    (void)state;
    struct cla_error e = {0};
    if (!realpath("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", cxx_real))
        skip();
    const char *cxx_base = strrchr(cxx_real, '/') + 1;
    assert_string_not_equal(cxx_base, "libstdc++.so.6");
    sh("mkdir -p %s/root/tmp/cxx %s/root/usr/lib/x86_64-linux-gnu && "
       "printf 'int cxxprof(void) { return 1; }\\n' > %s/cxxprof.c && "
       "cc -shared -fPIC -o %s/root/tmp/cxx/libcxxprof.so %s/cxxprof.c "
       "-Wl,--no-as-needed -lstdc++ -lc && cp %s %s/root/usr/lib/x86_64-linux-gnu/",
       base, base, base, base, base, cxx_real, base);
    char maps[PATH_MAX + 128];
    snprintf(maps, sizeof(maps),
             "1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
             "3-4 r--p 0 08:01 7 %s\n",
             cxx_real);
    /* Not mapped under that name, no libstdc++.so.6 in any directory: a miss by file name. */
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1,
                               "1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e),
                     -ENOENT);
    assert_non_null(strstr(e.msg, "needs libstdc++.so.6"));
    /* glibc reuses the mapped libstdc++.so.6.0.30: its SONAME is libstdc++.so.6. */
    if (check_cxx(RID_LIBC_GLIBC, -1, maps, &e) != 0)
        fail_msg("refused: %s", e.msg);
    assert_int_equal(maps_asked, 1);
    /* musl knows a loaded DSO by the name it was loaded under, never by DT_SONAME. */
    assert_int_equal(check_cxx(RID_LIBC_MUSL, -1, maps, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "needs libstdc++.so.6"));
    /* ... so on musl a file mapped under the needed name itself is what counts. */
    assert_int_equal(check_cxx(RID_LIBC_MUSL, -1,
                               "1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                               "3-4 r--p 0 08:01 7 /opt/lib/libstdc++.so.6\n",
                               &e),
                     0);
    /* A mapped file whose SONAME is another name (or none) is not it, whatever its file name. */
    sh("mkdir -p %s/root/opt/other && cp tests/fixtures/elf/glibc-x64.so "
       "%s/root/opt/other/libstdc++.so.6.0.30",
       base, base);
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1,
                               "1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                               "3-4 r--p 0 08:01 7 /opt/other/libstdc++.so.6.0.30\n",
                               &e),
                     -ENOENT);
    /* Past the cap on mapped files examined, the SONAME is not read: a miss, as before. */
    size_t cap = DEPCHECK_SONAME_FILES_MAX, n = 0, size = cap * 48 + PATH_MAX + 256;
    char *many = malloc(size);
    assert_non_null(many);
    for (size_t i = 0; i < cap; i++)
        n += (size_t)snprintf(many + n, size - n, "1-2 r--p 0 08:01 7 /opt/m/lib%zu.so\n", i);
    snprintf(many + n, size - n,
             "3-4 r--p 0 08:01 7 %s\n1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n",
             cxx_real);
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1, many, &e), -ENOENT);
    /* One fewer before it: read, and found. */
    char *second = strchr(many, '\n') + 1;
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1, second, &e), 0);
    free(many);
}

/* A mapped file hidden from its path in the target (removed, replaced or overmounted after
 * start) is still read through /proc/<pid>/map_files/, the very inode mapped: here this
 * process, which maps the C++ runtime, is the target, and its root holds no copy of it. */
static void test_loaded_hidden_read_through_map_files(void **state)
{
    (void)state;
    struct cla_error e = {0};
    if (!cxx_real[0] || geteuid() != 0)
        skip(); /* map_files needs CAP_SYS_ADMIN */
    /* Under qemu-user the library is loaded from the emulator's prefix for the guest
     * architecture, not at the path the guest's maps are checked against, and map_files would
     * show the emulator's own mappings: the kernel path can only be proven natively. */
    const char *emu = getenv("CLRATTACH_TEST_EMULATOR");
    if (emu && *emu) {
        printf("n/a: test_loaded_hidden_read_through_map_files: under %s the maps are the "
               "emulator's\n",
               emu);
        return;
    }
    sh("rm -f %s/root%s", base, cxx_real);
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    _cleanup_close_ int self = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_close_ int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    char *maps = NULL;
    size_t len;
    assert_int_equal(util_read_all(mfd, 4 << 20, &maps, &len), 0);
    char *z = realloc(maps, len + 1);
    assert_non_null(z);
    maps = z;
    maps[len] = '\0';
    assert_non_null(strstr(maps, cxx_real));
    /* By path in the root: nothing there to read, and its versioned name stands for it. */
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1, maps, &e), 0);
    if (check_cxx(RID_LIBC_GLIBC, self, maps, &e) != 0)
        fail_msg("refused: %s", e.msg);
    free(maps);
    dlclose(h);
}

/* A mapped file that cannot be read (unlinked, or its path hidden after start under the
 * sandbox) still counts: by its name when unlinked, by its versioned real name on glibc. */
static void test_loaded_unreadable(void **state)
{
    (void)state;
    struct cla_error e = {0};
    if (!cxx_real[0])
        skip();
    static const char libc[] = "1-2 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
    char maps[512];
    /* Gone from the root: libstdc++.so.6.0.30 is what the loader opened for libstdc++.so.6. */
    sh("rm -f %s/root%s", base, cxx_real);
    snprintf(maps, sizeof(maps), "%s3-4 r--p 0 08:01 7 /opt/priv/libstdc++.so.6.0.30\n", libc);
    if (check_cxx(RID_LIBC_GLIBC, -1, maps, &e) != 0)
        fail_msg("refused: %s", e.msg);
    /* Unlinked (" (deleted)"): the same, and musl too knows it by the name it was loaded under. */
    snprintf(maps, sizeof(maps), "%s3-4 r--p 0 08:01 7 /opt/priv/libstdc++.so.6.0.30 (deleted)\n",
             libc);
    assert_int_equal(check_cxx(RID_LIBC_GLIBC, -1, maps, &e), 0);
    assert_int_equal(check_cxx(RID_LIBC_MUSL, -1, maps, &e), -ENOENT);
    snprintf(maps, sizeof(maps), "%s3-4 r--p 0 08:01 7 /opt/priv/libstdc++.so.6 (deleted)\n", libc);
    assert_int_equal(check_cxx(RID_LIBC_MUSL, -1, maps, &e), 0);
    /* Not a version after the name: not it. */
    static const char *const not_it[] = {"libstdc++.so.6x",   "libstdc++.so.6.",
                                         "libstdc++.so.6..1", "libstdc++.so.6.0a",
                                         "libstdc++.so.60",   "libstdc++.so"};
    for (size_t i = 0; i < sizeof(not_it) / sizeof(not_it[0]); i++) {
        snprintf(maps, sizeof(maps), "%s3-4 r--p 0 08:01 7 /opt/priv/%s\n", libc, not_it[i]);
        if (check_cxx(RID_LIBC_GLIBC, -1, maps, &e) != -ENOENT)
            fail_msg("%s taken for libstdc++.so.6", not_it[i]);
    }
    /* musl never reads a SONAME, and does not guess one from a name either. */
    snprintf(maps, sizeof(maps), "%s3-4 r--p 0 08:01 7 /opt/priv/libstdc++.so.6.0.30\n", libc);
    assert_int_equal(check_cxx(RID_LIBC_MUSL, -1, maps, &e), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolution),
        cmocka_unit_test(test_long_ld_library_path),
        cmocka_unit_test(test_loaded_by_soname),
        cmocka_unit_test(test_loaded_hidden_read_through_map_files),
        cmocka_unit_test(test_loaded_unreadable),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
