/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loader search list: the target's LD_LIBRARY_PATH and musl path file are the target's bytes,
 * a profiler's run path is the operator's. Input: one selector byte (libc, arch, RPATH or
 * RUNPATH), then run path, LD_LIBRARY_PATH and path file separated by NULs. Every directory out
 * must be absolute, listed once, inside the caps, without a trailing '/'.
 */
#include "fuzz.h"
#include "profset/ldsearch.h"

/* The next NUL-separated part of [*p, end): its start and length. */
static const char *part(const char **p, const char *end, size_t *len)
{
    const char *s = *p;
    const char *nul = memchr(s, '\0', (size_t)(end - s));
    *len = (size_t)((nul ? nul : end) - s);
    *p = nul ? nul + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    size_t rp_len, llp_len, mp_len;
    const char *rp = part(&p, end, &rp_len);
    const char *llp = part(&p, end, &llp_len);
    const char *mp = part(&p, end, &mp_len);
    char *runpath = malloc(rp_len + 1);
    if (!runpath)
        return 0;
    memcpy(runpath, rp, rp_len);
    runpath[rp_len] = '\0';

    struct ld_request rq = {
        .libc = (data[0] & 1) ? RID_LIBC_MUSL : RID_LIBC_GLIBC,
        .arch = (enum rid_arch)((data[0] >> 1) % 5),
        .runpath = runpath,
        .runpath_is_rpath = (data[0] & 0x10) != 0,
        .origin = "/tmp/profiler-0123456789abcdef",
        .ld_library_path = (data[0] & 0x20) ? llp : NULL,
        .ld_library_path_len = llp_len,
        .musl_path = (data[0] & 0x40) ? mp : NULL,
        .musl_path_len = mp_len,
    };
    struct ld_search *s = malloc(sizeof(*s));
    if (!s) {
        free(runpath);
        return 0;
    }
    ldsearch_dirs(&rq, s);
    FUZZ_CHECK(s->n <= sizeof(s->dir) / sizeof(s->dir[0]));
    FUZZ_CHECK((s->unchecked == 0) == (s->unchecked_why == NULL));
    for (size_t i = 0; i < s->n; i++) {
        size_t n = strlen(s->dir[i]);
        FUZZ_CHECK(s->dir[i] >= s->buf && s->dir[i] + n < s->buf + sizeof(s->buf));
        FUZZ_CHECK(n > 0 && s->dir[i][0] == '/');
        FUZZ_CHECK(n == 1 || s->dir[i][n - 1] != '/');
        FUZZ_CHECK(!memchr(s->dir[i], ':', n));
        FUZZ_CHECK(rq.libc != RID_LIBC_MUSL || !memchr(s->dir[i], '\n', n));
        size_t same_list = 0;
        for (size_t j = 0; j < i; j++) {
            FUZZ_CHECK(strcmp(s->dir[i], s->dir[j]) != 0);
            same_list += strcmp(s->why[i], s->why[j]) == 0;
        }
        /* Each list within its own cap: a long one cannot crowd out the next. */
        FUZZ_CHECK(same_list < LDSEARCH_MAX_DIRS);
    }
    free(s);
    free(runpath);
    return 0;
}
