/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 (FIPS 180-4), pure and allocation-free. Names the delivered profiler file by its
 * content, so a re-attach never rewrites a library the target may still have mapped.
 */
#ifndef CLRATTACH_SHA256_H
#define CLRATTACH_SHA256_H

#include <stdbool.h>
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

/* Which code compresses the blocks. AUTO (the default, decided at the first digest): the CPU's
 * SHA-256 instructions when it has them (x86-64: SHA extensions with SSSE3 and SSE4.1, found by
 * CPUID), else PORTABLE, plain C. Both give the same digests (tests/unit/test_sha256.c). */
enum sha256_impl { SHA256_IMPL_AUTO, SHA256_IMPL_PORTABLE, SHA256_IMPL_CPU };

/* Tests and measurements: forces an implementation for the whole process. Returns 0, or
 * -ENOTSUP for SHA256_IMPL_CPU on a CPU (or architecture) without the instructions. */
int sha256_select(enum sha256_impl which);

/* "x86-sha" or "portable": what the next digest uses. */
const char *sha256_impl_name(void);

/* One-shot convenience: init, update, final. */
void sha256_buf(const void *buf, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

#endif
