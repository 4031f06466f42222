/* SPDX-License-Identifier: Apache-2.0 */
#include "sha256.h"

#include <string.h>

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

/* FIPS 180-4 §6.2.2, one 512-bit block. */
static void compress(uint32_t h[8], const uint8_t blk[SHA256_BLOCK_SIZE])
{
    uint32_t w[64];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];

    for (int t = 0; t < 16; t++)
        w[t] = load_be32(blk + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
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
        compress(ctx->h, ctx->block);
        ctx->used = 0;
    }
    /* Whole blocks straight from the caller's buffer, no copy. */
    while (len >= SHA256_BLOCK_SIZE) {
        compress(ctx->h, p);
        p += SHA256_BLOCK_SIZE;
        len -= SHA256_BLOCK_SIZE;
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
        compress(ctx->h, ctx->block);
        ctx->used = 0;
    }
    memset(ctx->block + ctx->used, 0, SHA256_BLOCK_SIZE - 8 - ctx->used);
    store_be32(ctx->block + 56, (uint32_t)(bits >> 32));
    store_be32(ctx->block + 60, (uint32_t)bits);
    compress(ctx->h, ctx->block);

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
