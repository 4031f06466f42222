/* SPDX-License-Identifier: Apache-2.0 */
/* Scans of /proc/<pid>/maps text: which loader (musl or glibc), whether a library is mapped
 * (also on text read in pieces), the libraries listed, the runtime's own library and its
 * map_files name. Pure: no I/O. */
#include "target/proc_maps.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Iterates the path column of maps lines: the text after the 5th field, left-trimmed. */
static const char *maps_path(const char *line, const char *le)
{
    const char *p = line;
    for (int f = 0; f < 5; f++) {
        while (p < le && *p != ' ')
            p++;
        while (p < le && *p == ' ')
            p++;
    }
    return p < le ? p : NULL;
}

int proc_maps_libc(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        if (path) {
            const char *slash = path;
            for (const char *q = path; q < le; q++)
                if (*q == '/')
                    slash = q + 1;
            size_t bl = (size_t)(le - slash);
            if (bl > 7 && memcmp(slash, "ld-musl-", 8) == 0)
                return 1;
            if (bl > 8 && memcmp(slash, "ld-linux-", 9) == 0)
                return 2;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

int proc_maps_has(const char *buf, size_t len, const char *name)
{
    size_t nl_len = strlen(name);
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        if (path && (size_t)(le - path) > nl_len && le[-(ptrdiff_t)nl_len - 1] == '/' &&
            memcmp(le - nl_len, name, nl_len) == 0)
            return 1;
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

int proc_maps_scan_feed(struct proc_maps_scan *s, size_t n, const char *name)
{
    /* The caller reads into buf + have, at most the room left: more is a caller bug. */
    if (n > sizeof(s->buf) - s->have)
        return -EINVAL;
    if (n == 0) {
        int r = s->have > 0 ? proc_maps_has(s->buf, s->have, name) : 0;
        s->have = 0;
        return r;
    }
    s->have += n;
    const char *nl = memrchr(s->buf, '\n', s->have);
    if (!nl)
        return s->have == sizeof(s->buf) ? -EPROTO : 0;
    size_t whole = (size_t)(nl - s->buf) + 1;
    if (proc_maps_has(s->buf, whole, name) == 1)
        return 1;
    memmove(s->buf, s->buf + whole, s->have - whole);
    s->have -= whole;
    return 0;
}

/* proc_maps_libraries() and proc_maps_loaded(): `deleted_too` keeps unlinked files' lines. */
static size_t scan_libraries(const char *buf, size_t len, char *out, size_t size, size_t max,
                             bool deleted_too)
{
    size_t n = 0, used = 0;
    const char *p = buf, *end = buf + len;
    while (p < end && n < max) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        p = nl ? nl + 1 : end;
        if (!path || *path != '/' || memchr(path, '\0', (size_t)(le - path)))
            continue;
        size_t plen = (size_t)(le - path);
        const char *base = path;
        for (const char *q = path; q < le; q++)
            if (*q == '/')
                base = q + 1;
        /* The kernel appends " (deleted)" to an unlinked file's path: no such file exists
         * under that name, so nothing could be found beside it; but the loader still holds it. */
        bool deleted = plen > 10 && memcmp(le - 10, " (deleted)", 10) == 0;
        if (deleted && !deleted_too)
            continue;
        if (!memmem(base, (size_t)(le - base) - (deleted ? 10 : 0), ".so", 3))
            continue;
        bool seen = false;
        for (const char *q = out; q < out + used; q += strlen(q) + 1)
            if (strlen(q) == plen && memcmp(q, path, plen) == 0) {
                seen = true;
                break;
            }
        if (seen)
            continue;
        /* Out of room: stop rather than store a path cut short. */
        if (plen + 1 > size - used)
            break;
        memcpy(out + used, path, plen);
        out[used + plen] = '\0';
        used += plen + 1;
        n++;
    }
    return n;
}

size_t proc_maps_libraries(const char *buf, size_t len, char *out, size_t size, size_t max)
{
    return scan_libraries(buf, len, out, size, max, false);
}

size_t proc_maps_loaded(const char *buf, size_t len, char *out, size_t size, size_t max)
{
    return scan_libraries(buf, len, out, size, max, true);
}

/* Copies hex digits [p, end) to out without leading zeros ("0" stays); false for a non-hex or
 * empty run, or one longer than a 64-bit address. */
static bool hex_unpadded(const char *p, const char *end, char *out, size_t *used, size_t size)
{
    if (p == end || end - p > 16)
        return false;
    for (const char *q = p; q < end; q++)
        if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
            return false;
    while (end - p > 1 && *p == '0')
        p++;
    size_t n = (size_t)(end - p);
    if (n + 1 > size - *used)
        return false;
    memcpy(out + *used, p, n);
    *used += n;
    return true;
}

int proc_maps_map_files_name(const char *buf, size_t len, const char *path, char *out, size_t size)
{
    size_t plen = strlen(path);
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *col = maps_path(p, le);
        const char *line = p;
        p = nl ? nl + 1 : end;
        if (!col || (size_t)(le - col) != plen || memcmp(col, path, plen) != 0)
            continue;
        const char *dash = memchr(line, '-', (size_t)(le - line));
        const char *sp = memchr(line, ' ', (size_t)(le - line));
        size_t used = 0;
        if (!dash || !sp || dash > sp || size < 1 || !hex_unpadded(line, dash, out, &used, size))
            return 0;
        if (used + 1 >= size)
            return 0;
        out[used++] = '-';
        if (!hex_unpadded(dash + 1, sp, out, &used, size))
            return 0;
        out[used] = '\0';
        return 1;
    }
    return 0;
}

int proc_maps_runtime_library(const char *buf, size_t len, char *out, size_t size)
{
    static const char name[] = "libcoreclr.so";
    const size_t nlen = sizeof(name) - 1;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        p = nl ? nl + 1 : end;
        if (!path || *path != '/' || memchr(path, '\0', (size_t)(le - path)))
            continue;
        size_t plen = (size_t)(le - path);
        if (plen <= nlen || le[-(ptrdiff_t)nlen - 1] != '/' || memcmp(le - nlen, name, nlen) != 0)
            continue;
        /* A path that does not fit is not reported at all: a cut one would name another file. */
        if (plen + 1 > size)
            return 0;
        memcpy(out, path, plen);
        out[plen] = '\0';
        return 1;
    }
    return 0;
}
