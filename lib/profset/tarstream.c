/* SPDX-License-Identifier: Apache-2.0 */
/* A profiler directory streamed as tar, read entry by entry on a buffer: ustar headers, their pax
 * and GNU long-name extensions, and where the stream ends. Pure: no I/O. */
#include "profset/tarstream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define BLOCK TAR_BLOCK

/* ustar header fields: offset and length (name at 0/100, prefix at 345/155, magic at 257). */
#define F_MODE   100, 8
#define F_SIZE   124, 12
#define F_CHKSUM 148, 8
#define F_TYPE   156

/* An octal field: digits with optional leading spaces, ended by NUL or space. -1 when malformed
 * (GNU's base-256 form included: no file we accept is that large). */
static int64_t octal(const uint8_t *h, size_t off, size_t len)
{
    size_t i = off, end = off + len;
    /* Leading spaces: older writers right-align the digits with spaces instead of zeros. */
    while (i < end && h[i] == ' ')
        i++;
    int64_t v = 0;
    size_t digits = 0;
    for (; i < end && h[i] >= '0' && h[i] <= '7'; i++, digits++) {
        /* Unreachable for the 8- and 12-byte fields read here; octal() does not rely on it. */
        if (v > (INT64_MAX >> 3))
            return -1;
        v = v * 8 + (h[i] - '0');
    }
    if (digits == 0)
        return -1;
    for (; i < end; i++)
        if (h[i] != '\0' && h[i] != ' ')
            return -1;
    return v;
}

static bool zero_block(const uint8_t *h)
{
    for (size_t i = 0; i < BLOCK; i++)
        if (h[i])
            return false;
    return true;
}

/* The header checksum: the sum of all bytes with the checksum field counted as spaces. */
static bool checksum_ok(const uint8_t *h)
{
    int64_t want = octal(h, F_CHKSUM);
    if (want < 0)
        return false;
    /* Bytes summed unsigned, as POSIX says (some historic writers summed signed chars; their
     * headers are refused, which is safe). */
    int64_t sum = 0;
    for (size_t i = 0; i < BLOCK; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    return sum == want;
}

/* The checksum is what tells a tar stream from a single library on stdin: an ELF file's first
 * block will not hold octal digits at byte 148 that match the sum of its bytes. */
bool tar_detect(const uint8_t *buf, size_t len)
{
    return len >= BLOCK && !zero_block(buf) && checksum_ok(buf);
}

int tar_normalise_path(const char *in, size_t len, char *out, size_t size, struct cla_error *e)
{
    size_t n = 0, depth = 0;
    if (len > 0 && in[0] == '/')
        return err_set(e, -EPERM, "'%.*s' is an absolute name", (int)(len > 80 ? 80 : len), in);
    for (size_t i = 0; i < len;) {
        while (i < len && in[i] == '/')
            i++;
        size_t s = i;
        while (i < len && in[i] != '/')
            i++;
        size_t clen = i - s;
        if (clen == 0 || (clen == 1 && in[s] == '.'))
            continue;
        /* Any ".." is refused, not resolved: no profiler directory needs one, and a name that
         * climbs is the classic way out of an extraction directory. */
        if (clen == 2 && in[s] == '.' && in[s + 1] == '.')
            return err_set(e, -EPERM, "'%.*s' has a '..' component", (int)(len > 80 ? 80 : len),
                           in);
        /* As in the directory reader: control bytes would forge the one-line-per-entry manifest
         * and the messages that print names. */
        for (size_t k = s; k < i; k++) {
            unsigned char c = (unsigned char)in[k];
            if (c < 0x20 || c == 0x7f)
                return err_set(e, -EPERM, "a name holds the control byte 0x%02x", c);
        }
        /* "+ 1": the last component is the entry itself, not a directory level. */
        if (++depth > PROFDIR_DEPTH_MAX + 1)
            return err_set(e, -EPERM, "'%.*s' is more than %d directories deep",
                           (int)(len > 80 ? 80 : len), in, PROFDIR_DEPTH_MAX);
        /* ">=" keeps one byte for the terminating NUL. */
        if (n + (n ? 1 : 0) + clen >= size)
            return err_set(e, -EPERM, "a name is longer than %zu bytes", size - 1);
        if (n)
            out[n++] = '/';
        memcpy(out + n, in + s, clen);
        n += clen;
    }
    if (n == 0)
        return err_set(e, -EPERM, "an empty name");
    out[n] = '\0';
    return 0;
}

/* Finds "path" (and "size") in a pax extended header: records "<len> <key>=<value>\n". */
static int parse_pax(const uint8_t *p, size_t len, char *path, size_t path_size, bool *have_path,
                     int64_t *size, struct cla_error *e)
{
    size_t i = 0;
    while (i < len) {
        if (p[i] == '\0')
            break; /* padding */
        /* The length counts the whole record, its own digits and the newline included. At most
         * 8 digits (records are within TAR_PAX_MAX), and it must reach past "<digits> ": a
         * length of 0 would never advance `i`. */
        size_t rlen = 0, j = i;
        while (j < len && p[j] >= '0' && p[j] <= '9' && j - i < 8)
            rlen = rlen * 10 + (size_t)(p[j++] - '0');
        if (j == i || j >= len || p[j] != ' ' || rlen <= j - i + 1 || rlen > len - i ||
            p[i + rlen - 1] != '\n')
            return err_set(e, -EPROTO, "tar: malformed pax record at byte %zu", i);
        const uint8_t *kv = p + j + 1, *end = p + i + rlen - 1;
        const uint8_t *eq = memchr(kv, '=', (size_t)(end - kv));
        if (!eq)
            return err_set(e, -EPROTO, "tar: pax record without '='");
        size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            /* A NUL inside the value would cut the name we use short of what tar tools show. */
            if (vlen >= path_size || memchr(eq + 1, '\0', vlen))
                return err_set(e, -EPERM, "tar: a pax path of %zu bytes", vlen);
            memcpy(path, eq + 1, vlen);
            path[vlen] = '\0';
            *have_path = true;
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            int64_t v = 0;
            /* 12 decimal digits cannot overflow int64; the caller caps the value itself. */
            if (vlen == 0 || vlen > 12)
                return err_set(e, -EPROTO, "tar: pax size of %zu digits", vlen);
            for (size_t k = 0; k < vlen; k++) {
                if (eq[1 + k] < '0' || eq[1 + k] > '9')
                    return err_set(e, -EPROTO, "tar: pax size is not a number");
                v = v * 10 + (eq[1 + k] - '0');
            }
            *size = v;
        }
        /* Other keys (owner, times, xattrs) are ignored: the delivery sets its own. */
        i += rlen;
    }
    return 0;
}

int tar_find_end(const uint8_t *buf, size_t len, struct tar_end *s)
{
    if (!s->started) {
        s->pax_size = -1;
        s->started = true;
    }
    while (s->off <= len && len - s->off >= BLOCK) {
        const uint8_t *h = buf + s->off;
        /* Writers end with two zero blocks; after the first, tar_next() reads nothing more, so
         * whatever follows it ends the stream as well. */
        if (s->zero_seen) {
            s->off += zero_block(h) ? BLOCK : 0;
            return 1;
        }
        if (zero_block(h)) {
            s->zero_seen = true;
            s->off += BLOCK;
            continue;
        }
        if (!checksum_ok(h))
            return -EPROTO;
        int64_t size = octal(h, F_SIZE);
        uint8_t type = h[F_TYPE];
        bool meta = type == 'x' || type == 'g' || type == 'L';
        if (size >= 0 && s->pax_size >= 0 && !meta) {
            size = s->pax_size;
            s->pax_size = -1;
        }
        if (size < 0 || size > PROFILER_MAX_SIZE || (meta && size > TAR_PAX_MAX))
            return -EPROTO;
        /* Capped above, so neither the rounding nor the sum can overflow. */
        size_t padded = ((size_t)size + BLOCK - 1) / BLOCK * BLOCK;
        if (type == 'x') {
            /* Its "size" decides where the next header is: wait for the whole record. */
            if (padded > len - s->off - BLOCK)
                return 0;
            char path[PROFDIR_PATH_MAX + 1];
            bool have_path = false;
            struct cla_error e = {0};
            int r = parse_pax(h + BLOCK, (size_t)size, path, sizeof(path), &have_path, &s->pax_size,
                              &e);
            if (r < 0)
                return r;
        }
        s->off += BLOCK + padded;
    }
    return 0;
}

static const char *type_name(uint8_t t)
{
    switch (t) {
    case '1': return "a hard link";
    case '2': return "a symbolic link";
    case '3': return "a character device";
    case '4': return "a block device";
    case '6': return "a FIFO";
    default: return "an entry of an unknown type";
    }
}

/* An extended header before an entry, `size` bytes at `data`: a pax one ('x') or a GNU long
 * name ('L') says the next entry's name (into longname, *have_long) or size (*pax_size); a
 * global one ('g') is skipped unread: nothing in it is needed for one entry. */
static int take_meta(uint8_t type, const uint8_t *data, int64_t size,
                     char longname[PROFDIR_PATH_MAX + 1], bool *have_long, int64_t *pax_size,
                     struct cla_error *e)
{
    if (size > TAR_PAX_MAX)
        return err_set(e, -EPROTO, "tar: an extended header of %lld bytes", (long long)size);
    if (type == 'x')
        return parse_pax(data, (size_t)size, longname, PROFDIR_PATH_MAX + 1, have_long, pax_size,
                         e);
    if (type == 'L') {
        size_t n = strnlen((const char *)data, (size_t)size);
        if (n >= PROFDIR_PATH_MAX + 1)
            return err_set(e, -EPERM, "tar: a long name of %zu bytes", n);
        memcpy(longname, data, n);
        longname[n] = '\0';
        *have_long = true;
    }
    return 0;
}

/* The entry's name as the stream gives it: the long name before it (`longname`, NULL when
 * none), else the header's own. Returns 0, or -EPERM when it does not fit. */
static int raw_name(const uint8_t *h, const char *longname, char raw[PROFDIR_PATH_MAX + 1],
                    struct cla_error *e)
{
    if (longname) {
        memcpy(raw, longname, PROFDIR_PATH_MAX + 1);
        return 0;
    }
    /* ustar splits a long name into prefix (345, 155 bytes) and name (0, 100 bytes); either
     * fills its field without a NUL, hence strnlen. */
    size_t plen = strnlen((const char *)h + 345, 155);
    size_t nlen = strnlen((const char *)h, 100);
    int w = snprintf(raw, PROFDIR_PATH_MAX + 1, "%.*s%s%.*s", (int)plen, (const char *)h + 345,
                     plen ? "/" : "", (int)nlen, (const char *)h);
    if (w < 0 || (size_t)w >= PROFDIR_PATH_MAX + 1)
        return err_set(e, -EPERM, "tar: a name longer than %d bytes", PROFDIR_PATH_MAX);
    return 0;
}

int tar_next(const uint8_t *buf, size_t len, size_t *off, struct tar_entry *ret,
             struct cla_error *e)
{
    char longname[PROFDIR_PATH_MAX + 1];
    bool have_long = false;
    int64_t pax_size = -1;
    size_t cur = *off; /* committed to *off only with an entry or at the end */

    for (unsigned meta = 0;; meta++) {
        if (cur == len || (len - cur >= BLOCK && zero_block(buf + cur))) {
            *off = cur;
            return 0;
        }
        if (len - cur < BLOCK)
            return err_set(e, -EPROTO, "tar: stream ends inside a header");
        const uint8_t *h = buf + cur;
        if (!checksum_ok(h))
            return err_set(e, -EPROTO, "tar: bad header checksum at byte %zu", cur);
        if (memcmp(h + 257, "ustar", 5) != 0)
            return err_set(e, -EPROTO, "tar: not a ustar header at byte %zu", cur);
        int64_t size = octal(h, F_SIZE);
        uint8_t type = h[F_TYPE];
        if (size < 0)
            return err_set(e, -EPROTO, "tar: bad size field at byte %zu", cur);
        /* A pax size applies to the entry that follows, never to another extended header. */
        if (pax_size >= 0 && type != 'x' && type != 'L' && type != 'g')
            size = pax_size;
        if (size > PROFILER_MAX_SIZE)
            return err_set(e, -EPROTO, "tar: an entry of %lld bytes exceeds %d", (long long)size,
                           PROFILER_MAX_SIZE);
        /* Capped above, so the rounding cannot overflow; len - cur >= BLOCK was checked, so the
         * subtraction below cannot wrap. */
        uint64_t padded = ((uint64_t)size + BLOCK - 1) / BLOCK * BLOCK;
        if (padded > len - cur - BLOCK)
            return err_set(e, -EPROTO, "tar: stream ends inside an entry's data");
        const uint8_t *data = h + BLOCK;
        size_t next = cur + BLOCK + (size_t)padded;
        /* Writers put at most a global header, a pax header and a long name before an entry. */
        if (meta > 4)
            return err_set(e, -EPROTO, "tar: more than 4 extended headers before an entry");

        if (type == 'x' || type == 'g' || type == 'L') {
            int r = take_meta(type, data, size, longname, &have_long, &pax_size, e);
            if (r < 0)
                return r;
            cur = next;
            continue;
        }

        char raw[PROFDIR_PATH_MAX + 1];
        if (raw_name(h, have_long ? longname : NULL, raw, e) < 0)
            return -EPERM;
        /* "." or "./" (what `tar -C dir -c .` starts with) is the directory itself. */
        if (type == '5' && strspn(raw, "./") == strlen(raw) && !strstr(raw, "..")) {
            cur = next;
            have_long = false;
            pax_size = -1;
            meta = 0;
            continue;
        }
        struct tar_entry en = {0};
        /* Its every refusal is -EPERM with a message of its own. */
        if (tar_normalise_path(raw, strlen(raw), en.path, sizeof(en.path), e) < 0)
            return err_prefix(e, "tar");
        /* '0', V7's '\0' and '7' (contiguous) are regular files. Links are refused, not
         * followed: one could name a file outside the directory on the target's side. */
        if (type != '0' && type != '\0' && type != '7' && type != '5')
            return err_set(e, -EPERM,
                           "tar: '%s' is %s: a profiler directory holds regular files and "
                           "directories only",
                           en.path, type_name(type));
        int64_t mode = octal(h, F_MODE);
        if (mode < 0)
            return err_set(e, -EPROTO, "tar: bad mode of '%s'", en.path);
        /* Only the x bit is taken from the stream: owner, setuid and write bits are not ours to
         * copy, the delivery makes files 0555 or 0444. */
        en.is_dir = type == '5';
        en.executable = (mode & 0111) != 0;
        en.data = en.is_dir ? NULL : data;
        en.size = en.is_dir ? 0 : (size_t)size;
        *off = next;
        *ret = en;
        return 1;
    }
}
