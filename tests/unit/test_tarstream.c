/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tar reader behind `--profiler -` (lib/profset/tarstream.c): archives made by the real tar in
 * its gnu, ustar and pax formats, and hand-made hostile headers (links, devices, absolute and ".."
 * names, control bytes, bad checksums, sizes past the stream).
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

#include "profset/tarstream.h"
#include "base/util.h"

#define LONG_DIR "a-directory-name-long-enough-to-need-more-than-one-hundred-bytes-in-the-header"

/* Makes a small tree and archives it with the system tar in `format`. */
static uint8_t *make_archive(const char *format, size_t *ret_len)
{
    char dir[] = "/tmp/clrattach-tar-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd %s && mkdir -p sub/" LONG_DIR " && printf 'ELF' >libentry.so && chmod 755 "
             "libentry.so && printf 'conf' >sub/" LONG_DIR "/vendor.conf && "
             "tar --format=%s -cf ../%s.tar . && cd / && rm -rf %s",
             dir, format, dir + 5, dir);
    assert_int_equal(system(cmd), 0);
    char path[128];
    snprintf(path, sizeof(path), "/tmp/%s.tar", dir + 5);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    char *buf;
    assert_int_equal(util_read_all(fd, 1 << 20, &buf, ret_len), 0);
    close(fd);
    unlink(path);
    return (uint8_t *)buf;
}

static void check_real(const char *format)
{
    size_t len, off = 0;
    _cleanup_free_ uint8_t *buf = make_archive(format, &len);
    assert_true(tar_detect(buf, len));
    struct tar_entry en;
    struct cla_error e = {0};
    bool saw_entry = false, saw_conf = false;
    int n = 0, r;
    while ((r = tar_next(buf, len, &off, &en, &e)) == 1) {
        n++;
        if (strcmp(en.path, "libentry.so") == 0) {
            saw_entry = true;
            assert_false(en.is_dir);
            assert_true(en.executable);
            assert_int_equal(en.size, 3);
            assert_memory_equal(en.data, "ELF", 3);
        } else if (strcmp(en.path, "sub/" LONG_DIR "/vendor.conf") == 0) {
            saw_conf = true;
            assert_false(en.executable);
            assert_memory_equal(en.data, "conf", 4);
        } else {
            assert_true(en.is_dir);
        }
    }
    if (r != 0)
        fail_msg("%s: %d %s", format, r, e.msg);
    assert_true(saw_entry && saw_conf);
    assert_int_equal(n, 4); /* sub/, sub/LONG/, and the two files; "./" is skipped */
}

static void test_real_gnu(void **state)
{
    (void)state;
    check_real("gnu");
}

static void test_real_ustar(void **state)
{
    (void)state;
    check_real("ustar");
}

static void test_real_pax(void **state)
{
    (void)state;
    check_real("pax");
}

/* The end of a real archive, as its bytes arrive in any pieces: never found before the two zero
 * blocks, always right after them. */
static void check_end(const char *format)
{
    size_t len, off = 0;
    _cleanup_free_ uint8_t *buf = make_archive(format, &len);
    struct tar_entry en;
    struct cla_error e = {0};
    int r;
    while ((r = tar_next(buf, len, &off, &en, &e)) == 1)
        ;
    assert_int_equal(r, 0);
    size_t want = off + 2 * TAR_BLOCK; /* tar_next() stops at the first zero block */
    assert_true(want <= len);
    static const size_t steps[] = {1, 7, 512, 1000, 4096};
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        struct tar_end s = {0};
        size_t n = 0;
        for (r = 0; r == 0 && n < len;) {
            n = n + steps[k] > len ? len : n + steps[k];
            r = tar_find_end(buf, n, &s);
            if (r == 0 && n >= want)
                fail_msg("%s, step %zu: no end at %zu bytes (want %zu)", format, steps[k], n, want);
        }
        assert_int_equal(r, 1);
        assert_int_equal(s.off, want);
        assert_true(n >= want);
        /* A fresh look at the whole says the same. */
        struct tar_end whole = {0};
        assert_int_equal(tar_find_end(buf, len, &whole), 1);
        assert_int_equal(whole.off, want);
    }
}

static void test_end_gnu(void **state)
{
    (void)state;
    check_end("gnu");
}

static void test_end_pax(void **state)
{
    (void)state;
    check_end("pax");
}

/* One hand-made ustar header (and its data) at `h`; returns the bytes used. */
static size_t header(uint8_t *h, const char *name, char type, const char *data, size_t size)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011zo", size);
    memcpy(h + 136, "00000000000", 12);
    h[156] = (uint8_t)type;
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    unsigned sum = 0;
    memset(h + 148, ' ', 8);
    for (size_t i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    size_t padded = (size + 511) / 512 * 512;
    if (data)
        memcpy(h + 512, data, size);
    return 512 + padded;
}

static int one(const char *name, char type, const char *data, size_t size, char *msg)
{
    static uint8_t buf[8192];
    memset(buf, 0, sizeof(buf));
    size_t len = header(buf, name, type, data, size) + 1024;
    size_t off = 0;
    struct tar_entry en;
    struct cla_error e = {0};
    int r = tar_next(buf, len, &off, &en, &e);
    snprintf(msg, CLA_ERR_MSG_MAX, "%s", e.msg);
    return r;
}

static void test_refused(void **state)
{
    (void)state;
    char msg[CLA_ERR_MSG_MAX];
    assert_int_equal(one("ok.so", '0', "x", 1, msg), 1);
    assert_int_equal(one("link.so", '2', NULL, 0, msg), -EPERM);
    assert_non_null(strstr(msg, "symbolic link"));
    assert_int_equal(one("hard.so", '1', NULL, 0, msg), -EPERM);
    assert_non_null(strstr(msg, "hard link"));
    assert_int_equal(one("fifo", '6', NULL, 0, msg), -EPERM);
    assert_int_equal(one("dev", '3', NULL, 0, msg), -EPERM);
    assert_int_equal(one("../evil.so", '0', "x", 1, msg), -EPERM);
    assert_non_null(strstr(msg, "'..'"));
    assert_int_equal(one("a/../../evil.so", '0', "x", 1, msg), -EPERM);
    assert_int_equal(one("/etc/passwd", '0', "x", 1, msg), -EPERM);
    assert_non_null(strstr(msg, "absolute"));
    assert_int_equal(one("bad\033[2J.so", '0', "x", 1, msg), -EPERM);
    assert_non_null(strstr(msg, "0x1b"));
    assert_int_equal(one("a/b/c/d/e/f/g/h/i/j/k.so", '0', "x", 1, msg), -EPERM);
    assert_non_null(strstr(msg, "deep"));
}

static void test_malformed(void **state)
{
    (void)state;
    uint8_t buf[2048] = {0};
    size_t len = header(buf, "f.so", '0', "abc", 3), off = 0;
    struct tar_entry en;
    struct cla_error e = {0};
    /* Bad checksum. */
    buf[0] ^= 1;
    assert_int_equal(tar_next(buf, len, &off, &en, &e), -EPROTO);
    assert_false(tar_detect(buf, len));
    buf[0] ^= 1;
    /* Data cut short, and a header cut short. */
    assert_int_equal(tar_next(buf, 600, &off, &en, &e), -EPROTO);
    assert_int_equal(tar_next(buf, 100, &off, &en, &e), -EPROTO);
    /* A size far past the stream. */
    header(buf, "f.so", '0', NULL, 0);
    snprintf((char *)buf + 124, 12, "%011o", 07777777777);
    unsigned sum = 0;
    memset(buf + 148, ' ', 8);
    for (size_t i = 0; i < 512; i++)
        sum += buf[i];
    snprintf((char *)buf + 148, 8, "%06o", sum);
    off = 0;
    assert_int_equal(tar_next(buf, sizeof(buf), &off, &en, &e), -EPROTO);
    /* The end: a zero block, or the end of the buffer on a block boundary. */
    memset(buf, 0, sizeof(buf));
    off = 0;
    assert_int_equal(tar_next(buf, sizeof(buf), &off, &en, &e), 0);
    off = 0;
    assert_int_equal(tar_next(buf, 0, &off, &en, &e), 0);
}

/* The end of hand-made streams: a pax size moves the next header; a zero block and anything
 * after it ends the stream for tar_next() too; a bad header stops the search. */
static void test_end_made(void **state)
{
    (void)state;
    static uint8_t buf[16384];
    memset(buf, 0, sizeof(buf));
    const char *rec = "13 size=1000\n";
    size_t n = header(buf, "PaxHeaders/x", 'x', rec, strlen(rec));
    /* The ustar size says 0; the pax size puts the next header 1024 bytes on. */
    size_t big = n;
    n += header(buf + n, "big.so", '0', NULL, 0) + 1024;
    memset(buf + big + 512, 'A', 1000);
    n += header(buf + n, "small.so", '0', "x", 1);
    struct tar_end s = {0};
    assert_int_equal(tar_find_end(buf, n, &s), 0);
    assert_int_equal(s.off, n);
    assert_int_equal(tar_find_end(buf, n + 512, &s), 0);
    assert_int_equal(tar_find_end(buf, n + 1024, &s), 1);
    assert_int_equal(s.off, n + 1024);
    /* The pax header cut short: wait for its record before going on. */
    struct tar_end cut = {0};
    assert_int_equal(tar_find_end(buf, 600, &cut), 0);
    assert_int_equal(cut.off, 0);
    /* A zero block then a non-zero one: the end, after the first. */
    memset(buf, 0, sizeof(buf));
    n = header(buf, "a.so", '0', "x", 1);
    buf[n + 512] = 1;
    struct tar_end z = {0};
    assert_int_equal(tar_find_end(buf, n + 1024, &z), 1);
    assert_int_equal(z.off, n + 512);
    /* A bad checksum: no use reading on. */
    memset(buf, 0, sizeof(buf));
    n = header(buf, "a.so", '0', "x", 1);
    buf[0] ^= 1;
    struct tar_end bad = {0};
    assert_int_equal(tar_find_end(buf, n, &bad), -EPROTO);
}

/* A pax header's path replaces the ustar name, so the checks apply to what tar would create. */
static void test_pax_path_checked(void **state)
{
    (void)state;
    uint8_t buf[4096] = {0};
    const char *rec = "23 path=../../etc/x.so\n";
    size_t n = header(buf, "PaxHeaders/x", 'x', rec, strlen(rec));
    n += header(buf + n, "innocent.so", '0', "x", 1);
    size_t off = 0;
    struct tar_entry en;
    struct cla_error e = {0};
    assert_int_equal(tar_next(buf, n + 1024, &off, &en, &e), -EPERM);
    assert_non_null(strstr(e.msg, "'..'"));

    const char *bad = "99 path=x\n";
    n = header(buf, "PaxHeaders/x", 'x', bad, strlen(bad));
    off = 0;
    assert_int_equal(tar_next(buf, n + 1024, &off, &en, &e), -EPROTO);
}

static void test_normalise(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(tar_normalise_path("./a//b/./c/", 11, out, sizeof(out), NULL), 0);
    assert_string_equal(out, "a/b/c");
    assert_int_equal(tar_normalise_path("./", 2, out, sizeof(out), NULL), -EPERM);
    assert_int_equal(tar_normalise_path("..a/b..", 7, out, sizeof(out), NULL), 0);
    assert_string_equal(out, "..a/b..");
    assert_int_equal(tar_normalise_path("abcdefgh", 8, out, 8, NULL), -EPERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_gnu),  cmocka_unit_test(test_real_ustar),
        cmocka_unit_test(test_real_pax),  cmocka_unit_test(test_refused),
        cmocka_unit_test(test_malformed), cmocka_unit_test(test_pax_path_checked),
        cmocka_unit_test(test_normalise), cmocka_unit_test(test_end_gnu),
        cmocka_unit_test(test_end_pax),   cmocka_unit_test(test_end_made),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
