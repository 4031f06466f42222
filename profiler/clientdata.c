/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client-data parser of the sample profiler. Pure: no I/O, no allocation, so it can be unit
 * tested and fuzzed on a buffer. The bytes come from whoever could reach the target's
 * diagnostic socket, so every length is checked against a cap before it is used.
 */
#include <errno.h>
#include <string.h>

#include "clientdata.h"

/* Which keys were seen, to reject repeats: "out=/a;out=/b" has no obvious meaning. */
enum {
    SEEN_OUT = 1u << 0,
    SEEN_DETACH = 1u << 1,
    SEEN_MASK = 1u << 2,
};

static bool key_is(const char *key, size_t key_len, const char *name)
{
    size_t n = strlen(name);
    return key_len == n && memcmp(key, name, n) == 0;
}

/* Decimal, digits only (no sign, no spaces, no "0x"), at most `max`. */
static int parse_dec(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
    uint64_t v = 0;

    if (len == 0)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(s[i] - '0');
        /* Checked per digit so a 30-digit value cannot wrap around into range. */
        if (v > max)
            return -ERANGE;
    }
    *ret = v;
    return 0;
}

/* Hex with an optional 0x/0X prefix, 1..8 digits: the event mask is a DWORD. */
static int parse_hex32(const char *s, size_t len, uint32_t *ret)
{
    uint64_t v = 0;

    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        len -= 2;
    }
    if (len == 0)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -EINVAL;
        v = v << 4 | d;
        if (v > UINT32_MAX)
            return -ERANGE;
    }
    *ret = (uint32_t)v;
    return 0;
}

/* The report path is opened by the probe inside the target, with the target's rights. It must
 * be absolute (the target's cwd is unknown to the client), name a file rather than a directory,
 * and hold no control characters, which would only serve to confuse logs and reports. */
static int parse_path(const char *s, size_t len, char *out)
{
    if (len == 0 || s[0] != '/' || s[len - 1] == '/')
        return -EINVAL;
    if (len > CLRPROBE_OUT_PATH_MAX)
        return -E2BIG;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return -EINVAL;
    }
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

int clientdata_parse(const void *buf, size_t len, struct clientdata *ret)
{
    struct clientdata cd = {0};
    const char *s = buf;
    unsigned seen = 0;
    uint64_t v;
    int r;

    if (len > CLRPROBE_CLIENT_DATA_MAX)
        return -E2BIG;
    if (len > 0 && !s)
        return -EINVAL;
    if (len > 0 && s[len - 1] == '\0')
        len--;
    /* Any other NUL would make the C view of a value differ from the bytes we checked. */
    if (len > 0 && memchr(s, '\0', len))
        return -EINVAL;

    size_t pos = 0;
    while (pos < len) {
        const char *seg = s + pos;
        const char *semi = memchr(seg, ';', len - pos);
        size_t seg_len = semi ? (size_t)(semi - seg) : len - pos;
        pos += seg_len + (semi ? 1 : 0);

        /* Empty segments (";;", a trailing ';') carry nothing; accept them. */
        if (seg_len == 0)
            continue;
        const char *eq = memchr(seg, '=', seg_len);
        if (!eq || eq == seg)
            return -EINVAL;
        size_t key_len = (size_t)(eq - seg);
        const char *val = eq + 1;
        size_t val_len = seg_len - key_len - 1;

        if (key_is(seg, key_len, "out")) {
            if (seen & SEEN_OUT)
                return -EINVAL;
            seen |= SEEN_OUT;
            r = parse_path(val, val_len, cd.out);
        } else if (key_is(seg, key_len, "detach_after")) {
            if (seen & SEEN_DETACH)
                return -EINVAL;
            seen |= SEEN_DETACH;
            r = parse_dec(val, val_len, CLRPROBE_DETACH_AFTER_MAX, &v);
            if (r >= 0)
                cd.detach_after_s = (uint32_t)v;
        } else if (key_is(seg, key_len, "mask")) {
            if (seen & SEEN_MASK)
                return -EINVAL;
            seen |= SEEN_MASK;
            r = parse_hex32(val, val_len, &cd.mask);
            cd.has_mask = true;
        } else {
            r = 0; /* unknown key: ignored on purpose, see the header */
        }
        if (r < 0)
            return r;
    }
    *ret = cd;
    return 0;
}
