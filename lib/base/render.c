/* SPDX-License-Identifier: Apache-2.0 */
/* The escaping of render.h: a strict UTF-8 decoder, the class of each code point, and the
 * renderings of text, command lines and messages built on them. */
#include "base/render.h"

#include <stdbool.h>
#include <string.h>

#define F_CMDLINE        1u /* NUL separates arguments: rendered as a space */
#define F_KEEP_BACKSLASH 2u /* already-rendered text passes unchanged */

static const char cut_mark[] = "...";

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) with its code point, or 0 when the bytes there do not
 * start one. */
static size_t utf8_decode(const unsigned char *s, size_t avail, uint32_t *ret_cp)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c < 0x80) {
        *ret_cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* U+D800..U+DFFF are surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong lead), or F5..FF */
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    *ret_cp = cp;
    return n;
}

enum render_class render_class_of(uint32_t cp)
{
    if (cp < 0x20)
        return RENDER_C0;
    if (cp == 0x7F)
        return RENDER_DEL;
    if (cp >= 0x80 && cp <= 0x9F)
        return RENDER_C1;
    /* Trojan Source (CVE-2021-42574): these reorder what a terminal or editor shows. */
    if (cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
        (cp >= 0x2066 && cp <= 0x2069))
        return RENDER_BIDI;
    /* Zero-width and invisible operators hide text or make two names look the same. */
    if ((cp >= 0x200B && cp <= 0x200D) || (cp >= 0x2060 && cp <= 0x2064) ||
        (cp >= 0x206A && cp <= 0x206F) || cp == 0xFEFF)
        return RENDER_INVISIBLE;
    /* Line breaks to a log viewer or a JSON-in-JavaScript reader: they forge log lines. */
    if (cp == 0x2028 || cp == 0x2029)
        return RENDER_SEPARATOR;
    return RENDER_SAFE;
}

const char *render_class_name(enum render_class c)
{
    switch (c) {
    case RENDER_SAFE: return "nothing to escape";
    case RENDER_C0: return "a control character";
    case RENDER_DEL: return "a control character";
    case RENDER_C1: return "a C1 control character";
    case RENDER_BIDI: return "a bidi control";
    case RENDER_INVISIBLE: return "an invisible character";
    case RENDER_SEPARATOR: return "a line or paragraph separator";
    case RENDER_INVALID: return "invalid UTF-8";
    }
    return "an unknown class";
}

/* One unit of input: `in` bytes consumed, and either copied (`esc` empty) or replaced by the
 * escape in `esc`. */
struct piece {
    size_t in;
    char esc[12];
    size_t esc_len;
};

static void put_hex(char *p, uint32_t v, int digits)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; i--) {
        p[i] = hex[v & 0xF];
        v >>= 4;
    }
}

/* Classifies the unit at s and fills *pc. Returns its class (RENDER_SAFE for a copied one). */
static enum render_class next_piece(const unsigned char *s, size_t avail, unsigned flags,
                                    struct piece *pc)
{
    uint32_t cp;
    size_t n = utf8_decode(s, avail, &cp);
    pc->esc_len = 0;
    if (n == 0) {
        pc->in = 1;
        memcpy(pc->esc, "\\x", 2);
        put_hex(pc->esc + 2, s[0], 2);
        pc->esc_len = 4;
        return RENDER_INVALID;
    }
    pc->in = n;
    if (cp == 0 && (flags & F_CMDLINE)) {
        pc->esc[0] = ' ';
        pc->esc_len = 1;
        return RENDER_SAFE;
    }
    if (cp == '\\') {
        if (!(flags & F_KEEP_BACKSLASH)) {
            memcpy(pc->esc, "\\\\", 2);
            pc->esc_len = 2;
        }
        return RENDER_SAFE;
    }
    enum render_class c = render_class_of(cp);
    if (c == RENDER_SAFE)
        return c;
    if (n == 1) {
        memcpy(pc->esc, "\\x", 2);
        put_hex(pc->esc + 2, cp, 2);
        pc->esc_len = 4;
    } else {
        memcpy(pc->esc, "\\u{", 3);
        put_hex(pc->esc + 3, cp, 4);
        pc->esc[7] = '}';
        pc->esc_len = 8;
    }
    return c;
}

enum render_class render_find(const char *buf, size_t len, size_t *ret_offset, uint32_t *ret_cp)
{
    const unsigned char *s = (const unsigned char *)buf;
    for (size_t i = 0; i < len;) {
        struct piece pc;
        enum render_class c = next_piece(s + i, len - i, F_KEEP_BACKSLASH, &pc);
        if (c != RENDER_SAFE) {
            uint32_t cp = s[i];
            if (c != RENDER_INVALID)
                (void)utf8_decode(s + i, len - i, &cp);
            *ret_offset = i;
            *ret_cp = cp;
            return c;
        }
        i += pc.in;
    }
    return RENDER_SAFE;
}

/* Bytes the whole rendering of s[0..len) takes, without the NUL. */
static size_t rendered_len(const unsigned char *s, size_t len, unsigned flags)
{
    size_t total = 0;
    for (size_t i = 0; i < len;) {
        struct piece pc;
        (void)next_piece(s + i, len - i, flags, &pc);
        total += pc.esc_len ? pc.esc_len : pc.in;
        i += pc.in;
    }
    return total;
}

static size_t render(const char *buf, size_t len, char *out, size_t size, unsigned flags)
{
    if (size == 0)
        return 0;
    const unsigned char *s = (const unsigned char *)buf;
    if (flags & F_CMDLINE) {
        /* A trailing NUL ends the last argument; it is not a separator. */
        while (len > 0 && s[len - 1] == '\0')
            len--;
    }
    /* Whether it all fits decides, before the first byte, whether room is kept for the mark. */
    size_t room = size - 1;
    bool cut = rendered_len(s, len, flags) > room;
    size_t mark = cut ? (room < sizeof(cut_mark) - 1 ? room : sizeof(cut_mark) - 1) : 0;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        struct piece pc;
        (void)next_piece(s + i, len - i, flags, &pc);
        size_t w = pc.esc_len ? pc.esc_len : pc.in;
        if (w > room - mark - o)
            break; /* never half a character or half an escape */
        memcpy(out + o, pc.esc_len ? pc.esc : (const char *)s + i, w);
        o += w;
        i += pc.in;
    }
    memcpy(out + o, cut_mark, mark);
    o += mark;
    out[o] = '\0';
    return o;
}

size_t render_text(const char *buf, size_t len, char *out, size_t size)
{
    return render(buf, len, out, size, 0);
}

size_t render_cmdline(const char *buf, size_t len, char *out, size_t size)
{
    return render(buf, len, out, size, F_CMDLINE);
}

size_t render_message(const char *buf, size_t len, char *out, size_t size)
{
    return render(buf, len, out, size, F_KEEP_BACKSLASH);
}
