/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deliver.h"

static char base[256];
static int rootfd = -1;
static const uint8_t payload[] = "\x7f" "ELF pretend shared object bytes";

static void path_of(char *out, size_t size, const char *rel)
{
    snprintf(out, size, "%s/%s", base, rel);
}

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-deliver.XXXXXX");
    assert_non_null(mkdtemp(base));
    char p[512];
    path_of(p, sizeof(p), "root");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "root/tmp");
    assert_int_equal(mkdir(p, 01777), 0);
    path_of(p, sizeof(p), "root/trap");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "helper-own");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "root");
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(rootfd);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
    return 0;
}

static int count_entries(const char *rel)
{
    char p[512];
    path_of(p, sizeof(p), rel);
    DIR *d = opendir(p);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static struct deliver_opts opts(const char *dir, const uint8_t *data, size_t len)
{
    struct deliver_opts o = {.data = data, .len = len, .basename = "libclrprobe.so",
                             .dir = dir, .uid = 1000};
    return o;
}

static void test_final_name(void **state)
{
    (void)state;
    char out[128];
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_int_equal(deliver_final_name("libclrprobe.so", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "libclrprobe-0123456789abcdef.so");
    assert_int_equal(deliver_final_name("../../evil name;.so", hex, out, sizeof(out)), 0);
    assert_null(strchr(out, '/'));
    assert_null(strchr(out, ' '));
    assert_int_equal(deliver_final_name(".so", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "p-0123456789abcdef.so");
    assert_int_equal(deliver_final_name("x", hex, out, 10), -ENAMETOOLONG);
}

static void test_deliver_and_reuse(void **state)
{
    (void)state;
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    assert_false(r.reused);
    assert_true(strncmp(r.path, "/tmp/libclrprobe-", 17) == 0);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0444);
    assert_int_equal(st.st_uid, 1000);
    assert_int_equal((size_t)st.st_size, sizeof(payload));
    /* No temporary file is left behind. */
    assert_int_equal(count_entries("root/tmp"), 1);

    struct deliver_result r2;
    assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), 0);
    assert_true(r2.reused);
    assert_string_equal(r.path, r2.path);
    assert_int_equal(count_entries("root/tmp"), 1);
    assert_int_equal(unlink(p), 0);
}

static void test_never_overwrites(void **state)
{
    (void)state;
    struct deliver_opts o = opts("/tmp", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    /* Another file under our content-addressed name: different bytes. */
    assert_int_equal(chmod(p, 0644), 0);
    FILE *f = fopen(p, "w");
    fputs("different", f);
    fclose(f);
    assert_int_equal(chmod(p, 0444), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "different content"));
    assert_true(e.hint[0] != '\0');
    f = fopen(p, "r");
    char buf[32] = {0};
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "different"); /* untouched */
    /* Same bytes but writable by others: not trusted for reuse either. */
    f = fopen(p, "w");
    fwrite(payload, 1, sizeof(payload), f);
    fclose(f);
    assert_int_equal(chmod(p, 0666), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EEXIST);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(count_entries("root/tmp"), 0);
}

static void test_symlink_traps(void **state)
{
    (void)state;
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    /* Learn the final name, then plant a link there pointing into OUR root. */
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    char p[5000], victim[600];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    assert_int_equal(unlink(p), 0);
    path_of(victim, sizeof(victim), "helper-own/victim.so");
    assert_int_equal(symlink(victim, p), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -ELOOP);
    assert_int_equal(access(victim, F_OK), -1); /* nothing created through the link */
    assert_int_equal(unlink(p), 0);

    /* The directory itself is a link (a target whose /tmp points elsewhere). */
    char link[600];
    path_of(link, sizeof(link), "root/linked");
    char dest[600];
    path_of(dest, sizeof(dest), "helper-own");
    assert_int_equal(symlink(dest, link), 0);
    struct deliver_opts o2 = opts("/linked/", payload, sizeof(payload));
    int rc = deliver_profiler(rootfd, &o2, &r, &e);
    assert_true(rc == -ELOOP || rc == -ENOTDIR);
    assert_int_equal(count_entries("helper-own"), 0);
    struct deliver_opts o3 = opts("/linked/sub/", payload, sizeof(payload));
    rc = deliver_profiler(rootfd, &o3, &r, &e);
    assert_true(rc == -ELOOP || rc == -ENOTDIR);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(count_entries("helper-own"), 0);
    assert_int_equal(count_entries("root/tmp"), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct deliver_result r;
    struct cla_error e = {0};
    struct deliver_opts o = opts("/tmp/", payload, 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EFBIG);
    o = opts("tmp/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EINVAL);
    o = opts("/missing/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -ENOENT);
    o = opts("/tmp/../trap/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EINVAL);
    assert_int_equal(count_entries("root/trap"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_final_name),       cmocka_unit_test(test_deliver_and_reuse),
        cmocka_unit_test(test_never_overwrites), cmocka_unit_test(test_symlink_traps),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
