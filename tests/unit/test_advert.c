/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/advert.h"

/* What a .NET 8 runtime sent (pid 4242 in its namespace), laid out by hand from ds-protocol.c
 * rather than by advert_encode, so that a mistake in the encoder is not mirrored here. */
static const uint8_t real[ADVERT_SIZE] = {
    'A',  'D',  'V',  'R',  '_',  'V',  '1',  0x00, /* magic and its NUL */
    0x9c, 0x1f, 0x55, 0x3e, 0x02, 0xa7, 0x4b, 0x41, /* cookie */
    0x8e, 0x6d, 0x31, 0x0b, 0xc2, 0x77, 0x10, 0xfe, /* */
    0x92, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* pid 0x1092 = 4242 */
    0x00, 0x00,                                     /* reserved */
};

static void test_decodes_real(void **state)
{
    struct advert a;
    struct cla_error e = {0};
    (void)state;

    assert_int_equal(advert_decode(real, sizeof(real), &a, &e), 0);
    assert_int_equal(a.pid, 4242);
    assert_memory_equal(a.cookie.b, real + 8, 16);
}

static void test_round_trip(void **state)
{
    struct advert a = {.pid = 4194304}, b;
    uint8_t buf[ADVERT_SIZE + 4];
    (void)state;

    for (int i = 0; i < 16; i++)
        a.cookie.b[i] = (uint8_t)(i * 17 + 1);
    assert_int_equal(advert_encode(&a, buf, ADVERT_SIZE - 1), -ENOBUFS);
    assert_int_equal(advert_encode(&a, buf, sizeof(buf)), ADVERT_SIZE);
    assert_int_equal(advert_decode(buf, ADVERT_SIZE, &b, NULL), 0);
    assert_int_equal(b.pid, a.pid);
    assert_memory_equal(b.cookie.b, a.cookie.b, 16);
}

/* Decodes a copy of `real` changed at one byte; returns the result and keeps *out untouched on
 * failure (checked by the caller through a sentinel). */
static int decode_changed(size_t off, uint8_t val, struct cla_error *e)
{
    uint8_t buf[ADVERT_SIZE];
    struct advert a = {.pid = 77};
    memcpy(buf, real, sizeof(buf));
    buf[off] = val;
    int r = advert_decode(buf, sizeof(buf), &a, e);
    if (r < 0)
        assert_int_equal(a.pid, 77); /* never written on failure */
    return r;
}

static void test_refuses_each_field(void **state)
{
    struct cla_error e = {0};
    (void)state;

    /* The magic, its NUL included: "ADVR_V1X" is not the magic. */
    assert_int_equal(decode_changed(0, 'a', &e), -EPROTO);
    assert_non_null(strstr(e.msg, "magic"));
    assert_int_equal(decode_changed(7, 'X', &e), -EPROTO);
    assert_non_null(strstr(e.msg, "magic"));
    /* The reserved field, either byte. */
    assert_int_equal(decode_changed(32, 1, &e), -EPROTO);
    assert_non_null(strstr(e.msg, "reserved"));
    assert_int_equal(decode_changed(33, 0x80, &e), -EPROTO);
    /* The pid: a high byte makes it far past pid_max. */
    assert_int_equal(decode_changed(31, 1, &e), -EPROTO);
    assert_non_null(strstr(e.msg, "pid"));
    /* A cookie byte changed is just another instance. */
    assert_int_equal(decode_changed(8, 0, &e), 0);
}

static void test_refuses_pid_bounds(void **state)
{
    struct advert a = {.pid = 0}, b;
    uint8_t buf[ADVERT_SIZE];
    struct cla_error e = {0};
    (void)state;

    memset(a.cookie.b, 0xab, sizeof(a.cookie.b));
    advert_encode(&a, buf, sizeof(buf));
    assert_int_equal(advert_decode(buf, sizeof(buf), &b, &e), -EPROTO);
    a.pid = ADVERT_PID_MAX + 1ull;
    advert_encode(&a, buf, sizeof(buf));
    assert_int_equal(advert_decode(buf, sizeof(buf), &b, &e), -EPROTO);
    a.pid = ADVERT_PID_MAX;
    advert_encode(&a, buf, sizeof(buf));
    assert_int_equal(advert_decode(buf, sizeof(buf), &b, &e), 0);
    a.pid = 1;
    advert_encode(&a, buf, sizeof(buf));
    assert_int_equal(advert_decode(buf, sizeof(buf), &b, &e), 0);
}

static void test_refuses_zero_cookie(void **state)
{
    uint8_t buf[ADVERT_SIZE];
    struct advert a;
    struct cla_error e = {0};
    (void)state;

    memcpy(buf, real, sizeof(buf));
    memset(buf + 8, 0, 16);
    assert_int_equal(advert_decode(buf, sizeof(buf), &a, &e), -EPROTO);
    assert_non_null(strstr(e.msg, "cookie"));
    /* One non-zero byte anywhere in it is enough. */
    buf[23] = 1;
    assert_int_equal(advert_decode(buf, sizeof(buf), &a, &e), 0);
}

static void test_refuses_length(void **state)
{
    uint8_t buf[ADVERT_SIZE + 1];
    struct advert a;
    struct cla_error e = {0};
    (void)state;

    memcpy(buf, real, sizeof(real));
    buf[ADVERT_SIZE] = 0;
    /* Every shorter prefix, the empty one included, and one byte more. */
    for (size_t n = 0; n < ADVERT_SIZE; n++)
        assert_int_equal(advert_decode(buf, n, &a, &e), -EPROTO);
    assert_int_equal(advert_decode(buf, ADVERT_SIZE + 1, &a, &e), -EPROTO);
    assert_non_null(strstr(e.msg, "35 bytes"));
    /* An IPC header is not an advertisement. */
    assert_int_equal(advert_decode((const uint8_t *)"DOTNET_IPC_V1\0\x22\0\x04\x00\0\0"
                                                    "\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
                                   ADVERT_SIZE, &a, &e),
                     -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decodes_real),        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refuses_each_field),  cmocka_unit_test(test_refuses_pid_bounds),
        cmocka_unit_test(test_refuses_zero_cookie), cmocka_unit_test(test_refuses_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
