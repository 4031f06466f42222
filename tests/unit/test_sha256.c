/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

/* Expected digests: NIST FIPS 180-4 example vectors, and `sha256sum` outputs for the rest. */
static const char HEX_EMPTY[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char HEX_ABC[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
static const char MSG_448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
static const char HEX_448[] = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
static const char MSG_896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                              "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
static const char HEX_896[] = "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1";
static const char HEX_MILLION_A[] =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
/* 200 bytes, byte i = (i * 7 + 3) & 0xff. */
static const char HEX_PATTERN200[] =
    "2c7e18c942ef065b526a2d4e5546283749cd3ddfb51d8fc71f42717363685f46";

static void hex_of(const void *buf, size_t len, char out[SHA256_HEX_SIZE])
{
    uint8_t d[SHA256_DIGEST_SIZE];

    sha256_buf(buf, len, d);
    sha256_hex(d, out);
}

static void test_nist_short(void **state)
{
    char hex[SHA256_HEX_SIZE];
    (void)state;

    hex_of("", 0, hex);
    assert_string_equal(hex, HEX_EMPTY);
    hex_of(NULL, 0, hex);
    assert_string_equal(hex, HEX_EMPTY);
    hex_of("abc", 3, hex);
    assert_string_equal(hex, HEX_ABC);
    assert_int_equal(strlen(MSG_448), 56);
    hex_of(MSG_448, strlen(MSG_448), hex);
    assert_string_equal(hex, HEX_448);
    assert_int_equal(strlen(MSG_896), 112);
    hex_of(MSG_896, strlen(MSG_896), hex);
    assert_string_equal(hex, HEX_896);
}

static void test_million_a(void **state)
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    char *big;
    char chunk[1000];
    (void)state;

    /* One shot... */
    big = malloc(1000000);
    assert_non_null(big);
    memset(big, 'a', 1000000);
    hex_of(big, 1000000, hex);
    free(big);
    assert_string_equal(hex, HEX_MILLION_A);

    /* ...and in chunks of an odd size that straddles block boundaries. */
    memset(chunk, 'a', sizeof(chunk));
    sha256_init(&ctx);
    for (size_t left = 1000000; left > 0;) {
        size_t n = left < 997 ? left : 997;
        sha256_update(&ctx, chunk, n);
        left -= n;
    }
    sha256_final(&ctx, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, HEX_MILLION_A);
}

static void test_padding_edges(void **state)
{
    /* 55 bytes: padding and length fit in the one block; 56 and 63: they do not, an extra
     * block follows; 64: a whole block, padding alone in the second one. */
    static const struct {
        size_t len;
        const char *hex;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    char buf[128];
    char hex[SHA256_HEX_SIZE];
    (void)state;

    memset(buf, 'a', sizeof(buf));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        hex_of(buf, cases[i].len, hex);
        assert_string_equal(hex, cases[i].hex);
    }
}

static void fill_pattern(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7 + 3);
}

static void test_split_every_offset(void **state)
{
    uint8_t msg[200];
    uint8_t one[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    (void)state;

    fill_pattern(msg, sizeof(msg));
    sha256_buf(msg, sizeof(msg), one);
    sha256_hex(one, hex);
    assert_string_equal(hex, HEX_PATTERN200);

    /* Two pieces split at every offset, and three pieces split at every pair of offsets: every
     * way the buffered tail and whole-block path can meet. */
    for (size_t i = 0; i <= sizeof(msg); i++) {
        for (size_t j = i; j <= sizeof(msg); j++) {
            struct sha256_ctx ctx;
            uint8_t d[SHA256_DIGEST_SIZE];

            sha256_init(&ctx);
            sha256_update(&ctx, msg, i);
            sha256_update(&ctx, msg + i, j - i);
            sha256_update(&ctx, msg + j, sizeof(msg) - j);
            sha256_final(&ctx, d);
            if (memcmp(d, one, sizeof(d)) != 0)
                fail_msg("split at %zu,%zu differs from one-shot", i, j);
        }
    }
}

static void test_byte_at_a_time(void **state)
{
    uint8_t msg[200];
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    (void)state;

    fill_pattern(msg, sizeof(msg));
    sha256_init(&ctx);
    for (size_t i = 0; i < sizeof(msg); i++) {
        sha256_update(&ctx, msg + i, 1);
        sha256_update(&ctx, NULL, 0);
    }
    sha256_final(&ctx, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, HEX_PATTERN200);
}

static void test_hex_format(void **state)
{
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE + 1];
    (void)state;

    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        d[i] = (uint8_t)(i * 8 + (i & 1 ? 0xf : 0));
    memset(hex, 'X', sizeof(hex));
    sha256_hex(d, hex);
    assert_int_equal(hex[64], '\0');
    assert_int_equal(hex[65], 'X'); /* nothing written past the 65 bytes */
    assert_string_equal(hex, "00171027203730474057506760777087809790a7a0b7b0c7c0d7d0e7e0f7f007");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nist_short),     cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_padding_edges),  cmocka_unit_test(test_split_every_offset),
        cmocka_unit_test(test_byte_at_a_time), cmocka_unit_test(test_hex_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
