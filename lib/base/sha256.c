/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256: the portable compression function and, where the CPU has the x86 SHA extensions,
 * the hardware one, chosen at run time. */
#include "base/sha256.h"

#include <errno.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HAVE_X86 1
#endif

/* FIPS 180-4 §4.2.2: first 32 bits of the fractional parts of the cube roots of the first 64
 * primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* Explicit big-endian loads and stores: the spec's word order, whatever the host's. */
static inline uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/*
 * FIPS 180-4 §6.2.2, one 512-bit block, in portable C. Unrolled: the eight working variables
 * rotate by naming instead of by moves, and the message schedule is a ring of 16 words kept up
 * to date as the rounds go (W[t] for t >= 16 replaces W[t-16]).
 */
#define S0(x)        (rotr((x), 2) ^ rotr((x), 13) ^ rotr((x), 22))
#define S1(x)        (rotr((x), 6) ^ rotr((x), 11) ^ rotr((x), 25))
#define s0(x)        (rotr((x), 7) ^ rotr((x), 18) ^ ((x) >> 3))
#define s1(x)        (rotr((x), 17) ^ rotr((x), 19) ^ ((x) >> 10))
#define CH(x, y, z)  ((z) ^ ((x) & ((y) ^ (z))))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define ROUND(a, b, c, d, e, f, g, h, i, wi)                                                       \
    do {                                                                                           \
        uint32_t t1_ = (h) + S1(e) + CH(e, f, g) + K[(i)] + (wi);                                  \
        (d) += t1_;                                                                                \
        (h) = t1_ + S0(a) + MAJ(a, b, c);                                                          \
    } while (0)
#define SCHED_W(j) (w[(j)&15] += s1(w[((j) + 14) & 15]) + w[((j) + 9) & 15] + s0(w[((j) + 1) & 15]))
/* Rounds i..i+7, whose message words are ring slots r..r+7 (r a constant: 0 or 8). */
#define EIGHT(i, r, W)                                                                             \
    do {                                                                                           \
        ROUND(a, b, c, d, e, f, g, hh, (i) + 0, W((r) + 0));                                       \
        ROUND(hh, a, b, c, d, e, f, g, (i) + 1, W((r) + 1));                                       \
        ROUND(g, hh, a, b, c, d, e, f, (i) + 2, W((r) + 2));                                       \
        ROUND(f, g, hh, a, b, c, d, e, (i) + 3, W((r) + 3));                                       \
        ROUND(e, f, g, hh, a, b, c, d, (i) + 4, W((r) + 4));                                       \
        ROUND(d, e, f, g, hh, a, b, c, (i) + 5, W((r) + 5));                                       \
        ROUND(c, d, e, f, g, hh, a, b, (i) + 6, W((r) + 6));                                       \
        ROUND(b, c, d, e, f, g, hh, a, (i) + 7, W((r) + 7));                                       \
    } while (0)
#define LOAD_W(j) (w[(j)] = load_be32(blk + 4 * (j)))

static void compress_one(uint32_t h[8], const uint8_t blk[SHA256_BLOCK_SIZE])
{
    uint32_t w[16];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];

    EIGHT(0, 0, LOAD_W);
    EIGHT(8, 8, LOAD_W);
    for (int t = 16; t < 64; t += 16) {
        EIGHT(t, 0, SCHED_W);
        EIGHT(t + 8, 8, SCHED_W);
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}
#undef S0
#undef S1
#undef s0
#undef s1
#undef CH
#undef MAJ
#undef ROUND
#undef SCHED_W
#undef EIGHT
#undef LOAD_W

static void compress_portable(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
    for (; nblocks > 0; nblocks--, p += SHA256_BLOCK_SIZE)
        compress_one(h, p);
}

#ifdef SHA256_HAVE_X86
/*
 * The same rounds with the x86 SHA extensions (Intel's "SHA-NI", on AMD since Zen and Intel
 * since Goldmont/Ice Lake): SHA256RNDS2 does two rounds, SHA256MSG1/MSG2 the message schedule.
 * The state lives in two registers as ABEF and CDGH; four message words are in flight per
 * register, four rounds per QROUND. Chosen at run time only when CPUID reports SHA, SSSE3
 * (pshufb) and SSE4.1 (pblendw).
 */
#define QROUND(w, k)                                                                               \
    do {                                                                                           \
        __m128i t_ = _mm_add_epi32((w), _mm_loadu_si128((const __m128i *)(K + (k))));              \
        s1 = _mm_sha256rnds2_epu32(s1, s0, t_);                                                    \
        s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(t_, 0x0e));                           \
    } while (0)
/* W[j] from W[j-4] (w0, replaced), W[j-3], W[j-2], W[j-1], four words each. */
#define SCHED(w0, w1, w2, w3)                                                                      \
    w0 = _mm_sha256msg2_epu32(                                                                     \
        _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8(w3, w2, 4)), w3)

__attribute__((target("sha,ssse3,sse4.1"))) static void
compress_x86(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
    /* Big-endian words to the register's little-endian lanes. */
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1);  /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                        /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xf0);                                             /* CDGH */

    for (; nblocks > 0; nblocks--, p += SHA256_BLOCK_SIZE) {
        __m128i abef = s0, cdgh = s1;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
        QROUND(m0, 0);
        QROUND(m1, 4);
        QROUND(m2, 8);
        QROUND(m3, 12);
        for (int k = 16; k < 64; k += 16) {
            SCHED(m0, m1, m2, m3);
            QROUND(m0, k);
            SCHED(m1, m2, m3, m0);
            QROUND(m1, k + 4);
            SCHED(m2, m3, m0, m1);
            QROUND(m2, k + 8);
            SCHED(m3, m0, m1, m2);
            QROUND(m3, k + 12);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }

    t = _mm_shuffle_epi32(s0, 0x1b);                                  /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xb1);                                 /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, s1, 0xf0)); /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, t, 8));    /* HGFE */
}
#undef QROUND
#undef SCHED

/* Three CPUID instructions, once per process: each one traps to the hypervisor in a VM. */
static bool cpu_has_sha(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7)
        return false;
    __cpuid(1, a, b, c, d);
    if (!(c & bit_SSSE3) || !(c & bit_SSE4_1))
        return false;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & bit_SHA) != 0;
}
#else
static bool cpu_has_sha(void)
{
    return false;
}
#endif

typedef void compress_fn(uint32_t h[8], const uint8_t *p, size_t nblocks);

/* NULL until the first digest looks at the CPU; a race only makes two threads look. */
static compress_fn *compress_impl;

static compress_fn *impl_for(enum sha256_impl which)
{
#ifdef SHA256_HAVE_X86
    if (which != SHA256_IMPL_PORTABLE && cpu_has_sha())
        return compress_x86;
#endif
    (void)which;
    return compress_portable;
}

int sha256_select(enum sha256_impl which)
{
    if (which == SHA256_IMPL_CPU && !cpu_has_sha())
        return -ENOTSUP;
    __atomic_store_n(&compress_impl, impl_for(which), __ATOMIC_RELAXED);
    return 0;
}

const char *sha256_impl_name(void)
{
#ifdef SHA256_HAVE_X86
    compress_fn *f = __atomic_load_n(&compress_impl, __ATOMIC_RELAXED);
    if (f ? f == compress_x86 : impl_for(SHA256_IMPL_AUTO) == compress_x86)
        return "x86-sha";
#endif
    return "portable";
}

static void compress(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
    compress_fn *f = __atomic_load_n(&compress_impl, __ATOMIC_RELAXED);
    if (!f) {
        f = impl_for(SHA256_IMPL_AUTO);
        __atomic_store_n(&compress_impl, f, __ATOMIC_RELAXED);
    }
    f(h, p, nblocks);
}

void sha256_init(struct sha256_ctx *ctx)
{
    /* §5.3.3: fractional parts of the square roots of the first 8 primes. */
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    memcpy(ctx->h, iv, sizeof(iv));
    ctx->total = 0;
    ctx->used = 0;
    memset(ctx->block, 0, sizeof(ctx->block));
}

void sha256_update(struct sha256_ctx *ctx, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    if (len == 0)
        return; /* memcpy() from a NULL `buf` would be undefined even for 0 bytes */
    /* The length field of the padding counts bits in 64 bits; inputs here are capped far below
     * 2^61 bytes (PROFILER_MAX_SIZE), so `total` cannot wrap in practice. */
    ctx->total += len;
    if (ctx->used > 0) {
        size_t take = SHA256_BLOCK_SIZE - ctx->used;
        if (take > len)
            take = len;
        memcpy(ctx->block + ctx->used, p, take);
        ctx->used += take;
        p += take;
        len -= take;
        if (ctx->used < SHA256_BLOCK_SIZE)
            return;
        compress(ctx->h, ctx->block, 1);
        ctx->used = 0;
    }
    /* Whole blocks straight from the caller's buffer, no copy, in one call. */
    size_t whole = len / SHA256_BLOCK_SIZE;
    if (whole > 0) {
        compress(ctx->h, p, whole);
        p += whole * SHA256_BLOCK_SIZE;
        len -= whole * SHA256_BLOCK_SIZE;
    }
    if (len > 0) {
        memcpy(ctx->block, p, len);
        ctx->used = len;
    }
}

void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE])
{
    uint64_t bits = ctx->total * 8;

    /* §5.1.1: a 1 bit, zeros up to 56 mod 64, then the bit length big-endian. With 56..63 bytes
     * already waiting the length does not fit, so one more block is needed. */
    ctx->block[ctx->used++] = 0x80;
    if (ctx->used > SHA256_BLOCK_SIZE - 8) {
        memset(ctx->block + ctx->used, 0, SHA256_BLOCK_SIZE - ctx->used);
        compress(ctx->h, ctx->block, 1);
        ctx->used = 0;
    }
    memset(ctx->block + ctx->used, 0, SHA256_BLOCK_SIZE - 8 - ctx->used);
    store_be32(ctx->block + 56, (uint32_t)(bits >> 32));
    store_be32(ctx->block + 60, (uint32_t)bits);
    compress(ctx->h, ctx->block, 1);

    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, ctx->h[i]);
    /* A final context holds no secret here, but wiping makes reuse without init visible (all
     * zero state) instead of silently continuing a digest. */
    memset(ctx, 0, sizeof(*ctx));
}

void sha256_hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE])
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 0x0f];
    }
    out[2 * SHA256_DIGEST_SIZE] = '\0';
}

void sha256_buf(const void *buf, size_t len, uint8_t out[SHA256_DIGEST_SIZE])
{
    struct sha256_ctx ctx;

    sha256_init(&ctx);
    sha256_update(&ctx, buf, len);
    sha256_final(&ctx, out);
}
