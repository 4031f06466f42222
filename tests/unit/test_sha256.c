/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "base/sha256.h"

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

#if defined(__x86_64__)
/* Does /proc/cpuinfo list the x86 SHA extensions (flag "sha_ni")? The kernel's word, checked
 * apart from the CPUID test in sha256.c. */
static bool cpuinfo_has_sha_ni(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    bool found = false;

    if (!f)
        return false;
    while (!found && fgets(line, sizeof(line), f))
        found = strncmp(line, "flags", 5) == 0 && strstr(line, " sha_ni") != NULL;
    fclose(f);
    return found;
}
#endif

static void test_cpu_detection(void **state)
{
    (void)state;
    int r = sha256_select(SHA256_IMPL_CPU);
#if defined(__x86_64__)
    if (cpuinfo_has_sha_ni()) {
        assert_int_equal(r, 0);
        assert_string_equal(sha256_impl_name(), "x86-sha");
    } else {
        assert_int_equal(r, -ENOTSUP);
    }
#else
    assert_int_equal(r, -ENOTSUP);
#endif
    assert_int_equal(sha256_select(SHA256_IMPL_PORTABLE), 0);
    assert_string_equal(sha256_impl_name(), "portable");
    assert_int_equal(sha256_select(SHA256_IMPL_AUTO), 0);
    assert_string_equal(sha256_impl_name(), r == 0 ? "x86-sha" : "portable");
}

/* Both implementations agree on every length from 0 to 1100 bytes (1..17 blocks with every
 * tail), at every alignment of the input, one-shot and fed in pieces. */
static void test_implementations_agree(void **state)
{
    static uint8_t msg[1200];
    (void)state;

    if (sha256_select(SHA256_IMPL_CPU) < 0) {
        print_message("no SHA instructions on this CPU: the portable code alone is tested\n");
        return;
    }
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 131 + (i >> 7));
    for (size_t len = 0; len <= 1100; len++) {
        size_t off = len % 8;
        uint8_t port[SHA256_DIGEST_SIZE], cpu[SHA256_DIGEST_SIZE], split[SHA256_DIGEST_SIZE];
        struct sha256_ctx ctx;

        assert_int_equal(sha256_select(SHA256_IMPL_PORTABLE), 0);
        sha256_buf(msg + off, len, port);
        assert_int_equal(sha256_select(SHA256_IMPL_CPU), 0);
        sha256_buf(msg + off, len, cpu);
        sha256_init(&ctx);
        sha256_update(&ctx, msg + off, len / 3);
        sha256_update(&ctx, msg + off + len / 3, len - len / 3);
        sha256_final(&ctx, split);
        if (memcmp(port, cpu, sizeof(cpu)) != 0 || memcmp(port, split, sizeof(cpu)) != 0)
            fail_msg("implementations differ at %zu bytes (offset %zu)", len, off);
    }
    sha256_select(SHA256_IMPL_AUTO);
}

static int use_portable(void **state)
{
    (void)state;
    return sha256_select(SHA256_IMPL_PORTABLE);
}

/* The CPU's instructions where it has them; else the portable code again (said once). */
static int use_cpu(void **state)
{
    (void)state;
    if (sha256_select(SHA256_IMPL_CPU) == 0)
        return 0;
    print_message("no SHA instructions on this CPU: the vectors run on the portable code\n");
    return sha256_select(SHA256_IMPL_PORTABLE);
}

int main(void)
{
    /* Every vector through each implementation. */
    const struct CMUnitTest vectors[] = {
        cmocka_unit_test(test_nist_short),     cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_padding_edges),  cmocka_unit_test(test_split_every_offset),
        cmocka_unit_test(test_byte_at_a_time), cmocka_unit_test(test_hex_format),
    };
    const struct CMUnitTest choice[] = {
        cmocka_unit_test(test_cpu_detection),
        cmocka_unit_test(test_implementations_agree),
    };
    int failed = cmocka_run_group_tests_name("portable", vectors, use_portable, NULL);
    failed += cmocka_run_group_tests_name("cpu", vectors, use_cpu, NULL);
    failed += cmocka_run_group_tests_name("choice", choice, NULL, NULL);
    return failed;
}
