/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_SHA256_H
#define CLRATTACH_SHA256_H

/*
 * SHA-256 (FIPS 180-4), pure and allocation-free. Names the delivered profiler file by its
 * content, so a re-attach never rewrites a library the target may still have mapped.
 */

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE  64
#define SHA256_HEX_SIZE    65 /* 64 hex digits and the NUL */

/* Running state; plain data, may live on the stack and be copied. */
struct sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes fed so far */
    size_t used;    /* bytes waiting in `block` */
    uint8_t block[SHA256_BLOCK_SIZE];
};

/* Starts a new digest. */
void sha256_init(struct sha256_ctx *ctx);

/* Feeds `len` bytes; `buf` may be NULL when `len` is 0. Any split of the input gives the same
 * digest. */
void sha256_update(struct sha256_ctx *ctx, const void *buf, size_t len);

/* Writes the 32-byte digest and wipes the context; call sha256_init() before reusing it. */
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]);

/* Lower-case hex of a digest, NUL-terminated. */
void sha256_hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE]);

/* One-shot convenience: init, update, final. */
void sha256_buf(const void *buf, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

#endif
