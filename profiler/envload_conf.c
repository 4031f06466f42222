/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The env loader's settings file parsed on a buffer (format and caps: envload_conf.h). Strict:
 * anything the format does not name is refused, with the line and the reason.
 */
#include "envload_conf.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

static int refuse(struct envload_error *ret_err, int code, unsigned line, const char *why)
{
    if (ret_err) {
        ret_err->line = line;
        ret_err->why = why;
    }
    return code;
}

static bool has_control(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return true;
    return false;
}

/* No empty, "." or ".." component (a leading '/' aside), no trailing '/'. */
static bool path_clean(const char *p, size_t n)
{
    if (n == 0)
        return false;
    size_t i = p[0] == '/' ? 1 : 0;
    if (i == n)
        return false;
    while (i <= n) {
        const char *slash = memchr(p + i, '/', n - i);
        size_t c = slash ? (size_t)(slash - (p + i)) : n - i;
        if (c == 0 || (c == 1 && p[i] == '.') || (c == 2 && p[i] == '.' && p[i + 1] == '.'))
            return false;
        i += c + 1;
    }
    return true;
}

int envload_conf_parse(const char *buf, size_t len, struct envload_conf *ret,
                       struct envload_error *ret_err)
{
    struct envload_conf c = {.nvars = 0};
    if (len > ENVLOAD_CONF_MAX)
        return refuse(ret_err, -E2BIG, 0, "larger than the format's cap");
    if (!buf || len == 0)
        return refuse(ret_err, -EINVAL, 0, "empty");
    if (memchr(buf, '\0', len))
        return refuse(ret_err, -EINVAL, 0, "holds a NUL byte");
    if (buf[len - 1] != '\n')
        return refuse(ret_err, -EINVAL, 0, "the last line does not end in a newline");

    unsigned line = 0;
    for (size_t off = 0; off < len;) {
        const char *p = buf + off;
        size_t n = (size_t)((const char *)memchr(p, '\n', len - off) - p);
        line++;
        if (has_control(p, n))
            return refuse(ret_err, -EINVAL, line, "a control character");
        if (line == 1) {
            if (n != strlen(ENVLOAD_MAGIC) || memcmp(p, ENVLOAD_MAGIC, n) != 0)
                return refuse(ret_err, -EINVAL, line, "not \"" ENVLOAD_MAGIC "\"");
        } else if (line == 2) {
            const size_t k = strlen("profiler=");
            if (n < k || memcmp(p, "profiler=", k) != 0)
                return refuse(ret_err, -EINVAL, line, "not profiler=PATH");
            if (n - k > ENVLOAD_PATH_MAX)
                return refuse(ret_err, -E2BIG, line, "the profiler's path is too long");
            if (!path_clean(p + k, n - k))
                return refuse(ret_err, -EINVAL, line,
                              "the profiler's path is empty or has an empty, . or .. component");
            c.profiler = (struct envload_span){off + k, n - k};
        } else {
            const char *eq = memchr(p, '=', n);
            if (!eq)
                return refuse(ret_err, -EINVAL, line, "not NAME=VALUE");
            if (eq == p)
                return refuse(ret_err, -EINVAL, line, "an empty name");
            if (n > ENVLOAD_VAR_BYTES_MAX)
                return refuse(ret_err, -E2BIG, line,
                              "NAME=VALUE is over " STR(ENVLOAD_VAR_BYTES_MAX) " bytes");
            if (c.nvars == ENVLOAD_VARS_MAX)
                return refuse(ret_err, -E2BIG, line,
                              "more than " STR(ENVLOAD_VARS_MAX) " variables");
            size_t nl = (size_t)(eq - p);
            for (size_t j = 0; j < c.nvars; j++)
                if (c.name[j].len == nl && memcmp(buf + c.name[j].off, p, nl) == 0)
                    return refuse(ret_err, -EINVAL, line, "a name given twice");
            c.name[c.nvars] = (struct envload_span){off, nl};
            c.value[c.nvars] = (struct envload_span){off + nl + 1, n - nl - 1};
            c.nvars++;
        }
        off += n + 1;
    }
    if (line < 2)
        return refuse(ret_err, -EINVAL, line + 1, "no profiler=PATH line");
    *ret = c;
    return 0;
}

/* Appends `n` bytes of `s` at `*at` when they fit below cap - 1 (the NUL's room). */
static void put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
    if (out && *at + n < cap)
        memcpy(out + *at, s, n);
    *at += n;
}

size_t envload_expand(const char *v, size_t len, const char *dir, const char *entry, char *out,
                      size_t cap)
{
    size_t at = 0;
    for (size_t i = 0; i < len;) {
        if (v[i] == '{' && i + 1 < len && v[i + 1] == '{') {
            put(out, cap, &at, "{", 1);
            i += 2;
        } else if (v[i] == '{' && len - i >= 5 && memcmp(v + i, "{dir}", 5) == 0) {
            put(out, cap, &at, dir, strlen(dir));
            i += 5;
        } else if (v[i] == '{' && len - i >= 7 && memcmp(v + i, "{entry}", 7) == 0) {
            put(out, cap, &at, entry, strlen(entry));
            i += 7;
        } else {
            put(out, cap, &at, v + i, 1);
            i++;
        }
    }
    if (out && cap)
        out[at < cap ? at : cap - 1] = '\0';
    return at;
}
