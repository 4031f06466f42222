/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON from outside loaded under a byte cap, strictly: the one way the agent's decoders turn
 * bytes into a jansson tree. Pure: no I/O.
 */
#ifndef CLRATTACH_JSON_BOUNDED_H
#define CLRATTACH_JSON_BOUNDED_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"

/* Decodes the tree of a JSON document: called with the root, which is released after. */
typedef int (*json_bounded_fn)(json_t *root, void *ctx, struct cla_error *e);

/* Loads `len` bytes (no NUL needed; trailing bytes are an error) and returns what `fn` returns
 * for the root. Duplicate keys are refused: {"a":1,"a":2} means different things to different
 * parsers, and input that is ambiguous is not input to act on. -E2BIG above `cap`, else
 * `bad_code` (-EPROTO for a peer's bytes, -EINVAL for a configuration) for what is not JSON;
 * e's message then starts with `what`. */
int json_bounded_decode(const char *buf, size_t len, size_t cap, const char *what, int bad_code,
                        json_bounded_fn fn, void *ctx, struct cla_error *e);

#endif
