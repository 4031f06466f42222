/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placeholders in profiler client data. A vendor profiler's client data names its own files
 * (CLRIE's <AddInstrumentationMethod ConfigPath="..."/>), and those paths exist only once
 * clrattach has chosen where the profiler goes in the target's view. So the operator writes
 *   {dir}    the delivered profiler directory, as the target sees it (no trailing '/')
 *   {entry}  the entry library's path there
 * and `{{` for a literal '{' (only '{' starts a placeholder, so '}' needs no escape). Any other
 * brace is kept as it is (JSON and XML client data need no escaping: neither ever has "{{"), but
 * `{word}` made of letters, digits and '_' that is not a placeholder is refused as a likely typo.
 * Pure: no I/O.
 */
#ifndef CLRATTACH_PLACEHOLDERS_H
#define CLRATTACH_PLACEHOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Expands `len` bytes of `in` into `out` (at most `cap` bytes). Returns 0 with *ret_len set;
 * -E2BIG when the result exceeds `cap`; -EINVAL for an unknown {word}. `dir` and `entry` may be
 * NULL when the caller has none (then {dir}/{entry} are refused with -EINVAL). A NULL `out`
 * writes nothing: the same checks, and the length the expansion needs. */
int placeholders_expand(const uint8_t *in, size_t len, const char *dir, const char *entry,
                        uint8_t *out, size_t cap, size_t *ret_len, struct cla_error *e);

/* Whether `len` bytes of `in` hold any placeholder ({dir}, {entry}); "{{dir}" is not one. */
int placeholders_present(const uint8_t *in, size_t len);

/* Whether `len` bytes of `in` (NULL: none) hold the placeholder {name} ("dir", "entry"). */
int placeholders_has(const uint8_t *in, size_t len, const char *name);

#endif
