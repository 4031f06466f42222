/* SPDX-License-Identifier: Apache-2.0 */
/* The loader's search list, built as glibc and musl build it: LD_LIBRARY_PATH, run paths with
 * $ORIGIN expanded, musl's path file and the defaults, each directory once, within caps. Pure:
 * no I/O. */
#include "profset/ldsearch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

const char *ldsearch_musl_arch(enum rid_arch arch)
{
    switch (arch) {
    case RID_ARCH_X64: return "x86_64";
    case RID_ARCH_ARM64: return "aarch64";
    case RID_ARCH_ARM: return "armhf";
    case RID_ARCH_X86: return "i386";
    default: return NULL;
    }
}

/* Debian's multiarch triplet, where glibc systems keep most libraries. */
static const char *multiarch_triplet(enum rid_arch arch)
{
    switch (arch) {
    case RID_ARCH_X64: return "x86_64-linux-gnu";
    case RID_ARCH_ARM64: return "aarch64-linux-gnu";
    case RID_ARCH_ARM: return "arm-linux-gnueabihf";
    case RID_ARCH_X86: return "i386-linux-gnu";
    default: return NULL;
    }
}

/* What one list (LD_LIBRARY_PATH, a run path, a path file, the defaults) has added so far:
 * each is capped on its own, so a long LD_LIBRARY_PATH cannot crowd out the run path and the
 * default directories that come after it. */
struct budget {
    size_t dirs, bytes;
};

/* Appends one directory of `len` bytes unless already listed. -E2BIG past the caps. */
static int add(struct ld_search *s, size_t *used, struct budget *b, const char *dir, size_t len,
               const char *why)
{
    while (len > 1 && dir[len - 1] == '/')
        len--;
    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->dir[i]) == len && memcmp(s->dir[i], dir, len) == 0)
            return 0;
    if (b->dirs == LDSEARCH_MAX_DIRS || len + 1 > LDSEARCH_BUF - b->bytes ||
        s->n == ARRAY_SIZE(s->dir) || len + 1 > sizeof(s->buf) - *used)
        return -E2BIG;
    char *slot = s->buf + *used;
    memcpy(slot, dir, len);
    slot[len] = '\0';
    *used += len + 1;
    b->dirs++;
    b->bytes += len + 1;
    s->dir[s->n] = slot;
    s->why[s->n] = why;
    s->n++;
    return 0;
}

/* An entry past the caps: counted, and the first list that had one named, for the message. */
static void not_checked(struct ld_search *s, const char *why)
{
    if (!s->unchecked++)
        s->unchecked_why = why;
}

/* Expands $ORIGIN / ${ORIGIN} in one entry into out. Returns the length, 0 to skip the entry
 * (relative, or another token), or -E2BIG. */
static int expand(const char *in, size_t len, const char *origin, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const char *sub = NULL;
        size_t skip = 0;
        if (in[i] == '$') {
            if (len - i >= 7 && memcmp(in + i, "$ORIGIN", 7) == 0)
                sub = origin, skip = 7;
            else if (len - i >= 9 && memcmp(in + i, "${ORIGIN}", 9) == 0)
                sub = origin, skip = 9;
            else
                return 0;
            /* "$ORIGINAL" is not the token: the name must end there. */
            if (skip == 7 && i + 7 < len &&
                ((in[i + 7] >= 'A' && in[i + 7] <= 'Z') || (in[i + 7] >= 'a' && in[i + 7] <= 'z') ||
                 (in[i + 7] >= '0' && in[i + 7] <= '9') || in[i + 7] == '_'))
                return 0;
            size_t sl = strlen(sub);
            if (sl >= size - n)
                return -E2BIG;
            memcpy(out + n, sub, sl);
            n += sl;
            i += skip;
            continue;
        }
        if (n + 1 >= size)
            return -E2BIG;
        out[n++] = in[i++];
    }
    out[n] = '\0';
    return out[0] == '/' ? (int)n : 0;
}

/* Adds every entry of a list split at any of `seps` (musl splits every list at ':' and '\n',
 * glibc LD_LIBRARY_PATH at ':' and ';'), as many as fit the caps. */
static void add_list(struct ld_search *s, size_t *used, const char *list, size_t len,
                     const char *origin, const char *seps, const char *why)
{
    struct budget b = {0};
    size_t i = 0;
    while (i <= len) {
        size_t j = i;
        while (j < len && !strchr(seps, list[j]) && list[j] != '\0')
            j++;
        if (j > i) {
            char one[TARGET_PATH_MAX];
            int n = expand(list + i, j - i, origin ? origin : "", one, sizeof(one));
            /* Without an origin (LD_LIBRARY_PATH) $ORIGIN has no meaning here: skipped. */
            if (n < 0 || (n > 0 && (origin || !memchr(list + i, '$', j - i)) &&
                          add(s, used, &b, one, (size_t)n, why) < 0))
                not_checked(s, why);
        }
        i = j + 1;
    }
}

void ldsearch_dirs(const struct ld_request *rq, struct ld_search *ret)
{
    struct ld_search *s = ret;
    size_t used = 0;
    const char *rp = rq->runpath ? rq->runpath : "";
    const char *rp_why = rq->runpath_is_rpath ? "RPATH" : "RUNPATH";
    s->n = 0;
    s->unchecked = 0;
    s->unchecked_why = NULL;

    if (rq->libc == RID_LIBC_MUSL) {
        if (rq->ld_library_path)
            add_list(s, &used, rq->ld_library_path, rq->ld_library_path_len, NULL, ":\n",
                     "LD_LIBRARY_PATH");
        add_list(s, &used, rp, strlen(rp), rq->origin, ":\n", rp_why);
        if (rq->musl_path)
            add_list(s, &used, rq->musl_path, rq->musl_path_len, NULL, ":\n", "default");
        else
            add_list(s, &used, "/lib:/usr/local/lib:/usr/lib", 28, NULL, ":", "default");
        return;
    }
    if (rq->runpath_is_rpath)
        add_list(s, &used, rp, strlen(rp), rq->origin, ":", rp_why);
    if (rq->ld_library_path)
        add_list(s, &used, rq->ld_library_path, rq->ld_library_path_len, NULL, ":;",
                 "LD_LIBRARY_PATH");
    if (!rq->runpath_is_rpath)
        add_list(s, &used, rp, strlen(rp), rq->origin, ":", rp_why);
    /* What ld.so.cache holds on the common distributions, then the trusted directories. */
    const char *triplet = multiarch_triplet(rq->arch);
    if (triplet) {
        char d[64];
        int w = snprintf(d, sizeof(d), "/lib/%s:/usr/lib/%s", triplet, triplet);
        add_list(s, &used, d, (size_t)w, NULL, ":", "default");
    }
    if (rq->arch == RID_ARCH_X64 || rq->arch == RID_ARCH_ARM64)
        add_list(s, &used, "/lib64:/usr/lib64", 17, NULL, ":", "default");
    add_list(s, &used, "/lib:/usr/lib:/usr/local/lib", 28, NULL, ":", "default");
}
