/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_FIXTURE_H
#define CLRATTACH_TEST_FIXTURE_H

/*
 * slurp(): a captured file of tests/fixtures/ (a /proc file as a kernel wrote it), read whole
 * into a static buffer that the next call reuses, NUL-terminated. Paths are relative to the
 * repository's root, where the unit suite runs. Include after cmocka.h.
 */
#include <stddef.h>
#include <stdio.h>

static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[65536];
    *len = fread(buf, 1, sizeof(buf) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

#endif
