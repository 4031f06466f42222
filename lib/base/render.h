/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rendering text a target controls (comm, command line, environment values, paths, the runtime's
 * ProcessInfo strings) for terminals, logs, JSON and Events. Pure: no I/O.
 *
 * Escaped visibly, so what a person reads is what the target holds and nothing in it can act on
 * a terminal or a log viewer:
 *   - a C0 control (U+0000..U+001F), DEL, and every byte that does not start a well-formed UTF-8
 *     sequence (overlong forms, surrogates, past U+10FFFF, truncated, a raw C1 byte 0x80..0x9F)
 *     as \xHH, one escape per byte;
 *   - a well-formed code point that is a C1 control (U+0080..U+009F), a bidi control (U+061C,
 *     U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), an invisible format character (U+200B..
 *     U+200D, U+2060..U+2064, U+206A..U+206F, U+FEFF) or a line/paragraph separator (U+2028,
 *     U+2029) as \u{hhhh};
 *   - the backslash itself as \\, so every rendering reads back one way only.
 * Hex digits are lower case. Everything else, other UTF-8 included, is copied as it is.
 */
#ifndef CLRATTACH_RENDER_H
#define CLRATTACH_RENDER_H

#include <stddef.h>
#include <stdint.h>

enum render_class {
    RENDER_SAFE = 0,
    RENDER_C0,        /* U+0000..U+001F */
    RENDER_DEL,       /* U+007F */
    RENDER_C1,        /* U+0080..U+009F, well-formed as UTF-8 */
    RENDER_BIDI,      /* bidi embedding, override, isolate and mark characters */
    RENDER_INVISIBLE, /* zero-width and other invisible format characters */
    RENDER_SEPARATOR, /* U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR */
    RENDER_INVALID,   /* bytes that are not well-formed UTF-8 */
};

/* The class of code point `cp` (never RENDER_INVALID). */
enum render_class render_class_of(uint32_t cp);

/* "a control character", "a bidi control", "invalid UTF-8", ... for messages. */
const char *render_class_name(enum render_class c);

/* Finds the first sequence of buf[0..len) that rendering escapes (the backslash aside).
 * Returns its class, RENDER_SAFE when there is none; on a find, its byte offset goes to
 * *ret_offset and its code point to *ret_cp (the byte value for RENDER_INVALID). */
enum render_class render_find(const char *buf, size_t len, size_t *ret_offset, uint32_t *ret_cp);

/* Renders buf[0..len) (which may hold NULs: they are escaped) into out as described above.
 * Always NUL-terminates when size > 0. When the rendering does not fit in size - 1 bytes it is
 * cut after a whole character or escape and ends in "..." (as much of it as fits). Returns the
 * bytes written, without the NUL. */
size_t render_text(const char *buf, size_t len, char *out, size_t size);

/* A NUL-separated command line as one line: arguments joined by single spaces (trailing NULs
 * end the last argument), each rendered as with render_text. Cut and terminated the same way. */
size_t render_cmdline(const char *buf, size_t len, char *out, size_t size);

/* The last line of defence for a message of ours that may embed target text: the classes above
 * are escaped, but a backslash is kept as it is, so text that is already rendered comes out
 * unchanged (rendering it again would double every backslash). Our own UTF-8 (an ellipsis, an
 * arrow) is kept. Cut and terminated as with render_text. */
size_t render_message(const char *buf, size_t len, char *out, size_t size);

/* Bytes render_text needs, the NUL included, for input of `len` bytes in the worst case. */
#define RENDER_SIZE_MAX(len) ((len)*4 + 1)

#endif
