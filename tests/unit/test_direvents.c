/* SPDX-License-Identifier: Apache-2.0 */
/* The walk over an inotify read (direvents.h): socket names counted, other names not, a watch
 * gone, an overflow, and records cut short or lying about their length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>

#include <cmocka.h>

#include "target/direvents.h"

/* Appends one record of watch `wd` (name padded with NULs to `padded` bytes) to buf at *off. */
static void put_wd(unsigned char *buf, size_t *off, int wd, uint32_t mask, const char *name,
                   uint32_t padded)
{
    struct inotify_event ev = {.wd = wd, .mask = mask, .len = padded};
    memcpy(buf + *off, &ev, sizeof(ev));
    *off += sizeof(ev);
    memset(buf + *off, 0, padded);
    if (name)
        memcpy(buf + *off, name, strlen(name));
    *off += padded;
}

static void put(unsigned char *buf, size_t *off, uint32_t mask, const char *name, uint32_t padded)
{
    put_wd(buf, off, 1, mask, name, padded);
}

static void test_socket_names_counted(void **state)
{
    (void)state;
    _Alignas(8) unsigned char buf[1024];
    size_t off = 0;
    put(buf, &off, IN_CREATE, "dotnet-diagnostic-12-345-socket", 32);
    put(buf, &off, IN_MOVED_TO, "dotnet-diagnostic-1-9-socket", 32);
    put(buf, &off, IN_CREATE, "notes.txt", 16);
    put(buf, &off, IN_CREATE, "dotnet-diagnostic-x-1-socket", 32);
    put(buf, &off, IN_DELETE, "dotnet-diagnostic-2-3-socket", 32); /* not asked for: ignored */
    struct direvents d = {0};
    assert_true(direvents_parse(buf, off, &d));
    assert_int_equal(d.records, 5);
    assert_int_equal(d.sockets, 2);
    assert_false(d.gone);
    assert_false(d.overflow);
    assert_int_equal(d.nwds, 1); /* both in watch 1, kept once */
    assert_int_equal(d.wds[0], 1);
    assert_false(d.wds_lost);
}

/* The watches socket names came in, each once; other names name none; past the bound, any. */
static void test_watches_named(void **state)
{
    (void)state;
    _Alignas(8) unsigned char buf[4096];
    size_t off = 0;
    put_wd(buf, &off, 7, IN_CREATE, "dotnet-diagnostic-12-345-socket", 32);
    put_wd(buf, &off, 3, IN_CREATE, "notes.txt", 16);
    put_wd(buf, &off, 9, IN_MOVED_TO, "dotnet-diagnostic-1-9-socket", 32);
    put_wd(buf, &off, 7, IN_CREATE, "dotnet-diagnostic-13-345-socket", 32);
    struct direvents d = {0};
    assert_true(direvents_parse(buf, off, &d));
    assert_int_equal(d.nwds, 2);
    assert_int_equal(d.wds[0], 7);
    assert_int_equal(d.wds[1], 9);
    assert_false(d.wds_lost);

    off = 0;
    for (int wd = 1; wd <= DIREVENTS_WDS_MAX + 1; wd++)
        put_wd(buf, &off, wd, IN_CREATE, "dotnet-diagnostic-12-345-socket", 32);
    struct direvents m = {0};
    assert_true(direvents_parse(buf, off, &m));
    assert_int_equal(m.nwds, DIREVENTS_WDS_MAX);
    assert_true(m.wds_lost);
}

static void test_other_names_owe_nothing(void **state)
{
    (void)state;
    _Alignas(8) unsigned char buf[256];
    size_t off = 0;
    put(buf, &off, IN_CREATE, "tmp.abc", 16);
    struct direvents d = {0};
    assert_false(direvents_parse(buf, off, &d));
    assert_false(direvents_parse(buf, 0, &d)); /* nothing read: nothing owed */
    assert_int_equal(d.records, 1);
}

/* One record without a name, parsed alone. */
static struct direvents only(uint32_t mask)
{
    _Alignas(8) unsigned char buf[64];
    size_t off = 0;
    struct direvents d = {0};
    put(buf, &off, mask, NULL, 0);
    assert_true(direvents_parse(buf, off, &d));
    return d;
}

static void test_gone_and_overflow(void **state)
{
    (void)state;
    assert_true(only(IN_IGNORED).gone);
    assert_true(only(IN_DELETE_SELF).gone);
    assert_true(only(IN_UNMOUNT).gone);
    struct direvents o = only(IN_Q_OVERFLOW);
    assert_true(o.overflow);
    assert_false(o.gone);
    assert_int_equal(o.sockets, 0);
}

/* A runtime file opened (a hint): counted, and owes no scan by itself; an open with a name
 * (a directory's child, not a file watched for itself) is not one. */
static void test_opens_counted_owe_nothing(void **state)
{
    (void)state;
    _Alignas(8) unsigned char buf[256];
    size_t off = 0;
    put(buf, &off, IN_OPEN, NULL, 0);
    put(buf, &off, IN_OPEN, NULL, 0);
    put(buf, &off, IN_OPEN, "libcoreclr.so", 16);
    struct direvents d = {0};
    assert_false(direvents_parse(buf, off, &d));
    assert_int_equal(d.opens, 2);
    assert_int_equal(d.records, 3);
    put(buf, &off, IN_CREATE, "dotnet-diagnostic-7-8-socket", 32);
    struct direvents b = {0};
    assert_true(direvents_parse(buf, off, &b)); /* with a socket name: owed, opens still told */
    assert_int_equal(b.opens, 2);
    assert_int_equal(b.sockets, 1);
}

/* A name without a NUL within its length is no name; a length past the buffer, or a header
 * cut short, ends the walk as an overflow (a scan tells what the bytes cannot). */
static void test_malformed(void **state)
{
    (void)state;
    _Alignas(8) unsigned char buf[256];
    size_t off = 0;
    const char *name = "dotnet-diagnostic-12-345-socket"; /* 31 bytes, given a length of 31 */
    struct inotify_event ev = {.wd = 1, .mask = IN_CREATE, .len = 31};
    memcpy(buf, &ev, sizeof(ev));
    memcpy(buf + sizeof(ev), name, 31);
    off = sizeof(ev) + 31;
    struct direvents d = {0};
    assert_false(direvents_parse(buf, off, &d));
    assert_int_equal(d.sockets, 0);

    struct direvents l = {0};
    assert_true(direvents_parse(buf, off - 1, &l)); /* the name cut short */
    assert_true(l.overflow);
    assert_int_equal(l.records, 0);

    struct direvents h = {0};
    assert_true(direvents_parse(buf, sizeof(ev) - 1, &h)); /* the header cut short */
    assert_true(h.overflow);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socket_names_counted),      cmocka_unit_test(test_watches_named),
        cmocka_unit_test(test_other_names_owe_nothing),   cmocka_unit_test(test_gone_and_overflow),
        cmocka_unit_test(test_opens_counted_owe_nothing), cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
