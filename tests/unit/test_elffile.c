/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elffile: an ELF file read piecewise gives what the whole file gives, for a fraction of its
 * bytes, and a file the target made huge and hollow (a sparse 64 MiB ".so") costs a few pages;
 * the caps on bytes and rounds and the deadline each stop a parse that would go on.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "profset/elffile.h"
#include "base/util.h"

#define FIXTURES "tests/fixtures/elf/" /* tests run from the repo root */
#define PAGE     (1u << ELFFILE_CHUNK_SHIFT)

static const char *const so_fixtures[] = {"glibc-x64.so",  "musl-x64.so", "entry-gnu.so",
                                          "entry-sysv.so", "importer.so", "glibc-x64-pie"};

static int open_fixture(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), FIXTURES "%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open %s", path);
    return fd;
}

/* What the file gives read whole. */
static void parse_whole(int fd, struct elf_info *ret)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    struct cla_error e = {0};
    assert_int_equal(util_read_all(fd, ELF_READ_MAX, &buf, &len), 0);
    assert_int_equal(elfinfo_parse((const uint8_t *)buf, len, ret, &e), 0);
}

static const struct elffile_limits roomy = {.max_bytes = ELF_READ_MAX};

static void test_fixtures_piecewise(void **state)
{
    (void)state;
    for (size_t f = 0; f < ARRAY_SIZE(so_fixtures); f++) {
        _cleanup_close_ int fd = open_fixture(so_fixtures[f]);
        struct elf_info whole, part;
        struct elffile_stats st;
        struct cla_error e = {0};
        struct stat sb;
        assert_int_equal(fstat(fd, &sb), 0);
        parse_whole(fd, &whole);

        /* Small chunks: only the parts the parser asks for are read. */
        struct elffile_limits small = {.max_bytes = ELF_READ_MAX, .chunk_shift = 6};
        if (elffile_parse(fd, &small, &part, &st, &e) != 0)
            fail_msg("%s: %s", so_fixtures[f], e.msg);
        assert_true(elfinfo_equal(&part, &whole));
        assert_true(st.bytes_read < (uint64_t)sb.st_size / 2);
        assert_int_equal(st.rounds, st.bytes_read / 64 + (st.bytes_read % 64 != 0) + 1);

        /* The default: pages. */
        assert_int_equal(elffile_parse(fd, &roomy, &part, &st, &e), 0);
        assert_true(elfinfo_equal(&part, &whole));
        assert_true(st.bytes_read <= (uint64_t)sb.st_size);
    }
}

/* A large real library, this test's own executable: a handful of pages of it. */
static void test_large_file_few_pages(void **state)
{
    (void)state;
    _cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_info whole, part;
    struct elffile_stats st;
    struct cla_error e = {0};
    parse_whole(fd, &whole);
    assert_int_equal(elffile_parse(fd, &roomy, &part, &st, &e), 0);
    assert_true(elfinfo_equal(&part, &whole));
    assert_true(st.bytes_read <= 8 * PAGE);
}

/* A temporary file holding `head` and then a hole up to `size` bytes. */
static int sparse_file(const char *head, off_t size)
{
    char path[] = "/tmp/clrattach-test-elffile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    if (head) {
        _cleanup_close_ int src = open_fixture(head);
        _cleanup_free_ char *buf = NULL;
        size_t len;
        assert_int_equal(util_read_all(src, 1 << 20, &buf, &len), 0);
        assert_int_equal(util_write_all(fd, buf, len), 0);
    }
    assert_int_equal(ftruncate(fd, size), 0);
    return fd;
}

/* The target's trick: a library of 64 MiB, nearly all hole. Only its first pages are read. */
static void test_sparse_64mib(void **state)
{
    (void)state;
    struct elf_info info;
    struct elffile_stats st;
    struct cla_error e = {0};

    _cleanup_close_ int fd = sparse_file("entry-gnu.so", 64 << 20);
    assert_int_equal(elffile_parse(fd, &roomy, &info, &st, &e), 0);
    assert_true(info.exports_class_factory);
    assert_true(st.bytes_read <= 2 * PAGE);

    /* All hole: not ELF, known from its first page. */
    _cleanup_close_ int zero = sparse_file(NULL, 64 << 20);
    assert_int_equal(elffile_parse(zero, &roomy, &info, &st, &e), -ENOEXEC);
    assert_int_equal(st.bytes_read, PAGE);
    assert_int_equal(st.rounds, 2);

    /* Past ELF_READ_MAX: the image at its start is read as for a shorter file. */
    _cleanup_close_ int big = sparse_file("entry-gnu.so", (off_t)ELF_READ_MAX * 3);
    assert_int_equal(elffile_parse(big, &roomy, &info, &st, &e), 0);
    assert_true(info.exports_class_factory);
    assert_true(st.bytes_read <= 2 * PAGE);
}

static void test_caps(void **state)
{
    (void)state;
    _cleanup_close_ int fd = open_fixture("entry-gnu.so");
    struct elf_info info = {.arch = RID_ARCH_ARM};
    struct elffile_stats st;
    struct cla_error e = {0};

    /* Bytes: 64-byte chunks, room for two. */
    struct elffile_limits lim = {.max_bytes = 128, .chunk_shift = 6};
    assert_int_equal(elffile_parse(fd, &lim, &info, &st, &e), -E2BIG);
    assert_int_equal(st.bytes_read, 128);
    assert_int_equal(info.arch, RID_ARCH_ARM); /* untouched on failure */

    /* Rounds: two-byte chunks need far more than ELFFILE_ROUNDS_MAX parses. */
    lim = (struct elffile_limits){.max_bytes = ELF_READ_MAX, .chunk_shift = 1};
    assert_int_equal(elffile_parse(fd, &lim, &info, &st, &e), -E2BIG);
    assert_int_equal(st.rounds, ELFFILE_ROUNDS_MAX);
    assert_int_equal(st.bytes_read, 2 * (ELFFILE_ROUNDS_MAX - 1));

    /* The deadline: passed already, nothing is read. */
    lim = (struct elffile_limits){.max_bytes = ELF_READ_MAX, .deadline_ms = 1};
    assert_int_equal(elffile_parse(fd, &lim, &info, &st, &e), -ETIMEDOUT);
    assert_int_equal(st.bytes_read, 0);

    lim = (struct elffile_limits){.max_bytes = ELF_READ_MAX, .chunk_shift = 31};
    assert_int_equal(elffile_parse(fd, &lim, &info, &st, &e), -EINVAL);
}

static void test_not_a_file(void **state)
{
    (void)state;
    struct elf_info info;
    struct elffile_stats st;
    struct cla_error e = {0};
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_int_equal(elffile_parse(p[0], &roomy, &info, &st, &e), -ENOEXEC);
    assert_int_equal(st.bytes_read, 0);
    close(p[0]);
    close(p[1]);

    _cleanup_close_ int empty = sparse_file(NULL, 0);
    assert_int_equal(elffile_parse(empty, &roomy, &info, NULL, &e), -ENOEXEC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_piecewise), cmocka_unit_test(test_large_file_few_pages),
        cmocka_unit_test(test_sparse_64mib),       cmocka_unit_test(test_caps),
        cmocka_unit_test(test_not_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
