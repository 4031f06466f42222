/* SPDX-License-Identifier: Apache-2.0 */
/* Finding and expanding {dir} and {entry} in client data ("{{" a literal brace), within the
 * output's size. Pure: no I/O. */
#include "deliver/placeholders.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* ASCII only, by byte: client data may be UTF-16 or binary, and a locale-dependent isalnum()
 * could call a byte of a multi-byte character a letter. */
static bool is_word(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* At in[i] == '{': the length of a `{word}` token (word non-empty), or 0 when it is not one. */
static size_t token_len(const uint8_t *in, size_t len, size_t i)
{
    size_t j = i + 1;
    while (j < len && is_word(in[j]))
        j++;
    return j > i + 1 && j < len && in[j] == '}' ? j - i + 1 : 0;
}

static bool token_is(const uint8_t *in, size_t i, size_t tlen, const char *name)
{
    return tlen == strlen(name) + 2 && memcmp(in + i + 1, name, tlen - 2) == 0;
}

/* Scans with the same tokenizer as placeholders_expand, so "present" never disagrees with what
 * expansion would substitute; unknown {word}s are not reported here (expansion refuses them). */
int placeholders_present(const uint8_t *in, size_t len)
{
    return placeholders_has(in, len, "dir") || placeholders_has(in, len, "entry");
}

int placeholders_has(const uint8_t *in, size_t len, const char *name)
{
    for (size_t i = 0; in && i < len; i++) {
        if (in[i] == '{' && i + 1 < len && in[i + 1] == '{') {
            /* Both braces skipped: "{{dir}" is a literal "{dir}", not a placeholder. */
            i++;
            continue;
        }
        if (in[i] != '{')
            continue;
        size_t t = token_len(in, len, i);
        if (t && token_is(in, i, t, name))
            return 1;
    }
    return 0;
}

int placeholders_expand(const uint8_t *in, size_t len, const char *dir, const char *entry,
                        uint8_t *out, size_t cap, size_t *ret_len, struct cla_error *e)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const char *sub = NULL;
        size_t skip = 1, sublen = 1;
        uint8_t c = in[i];
        if (c == '{' && i + 1 < len && in[i + 1] == '{') {
            skip = 2; /* "{{" is one literal brace; '}' needs no escape (JSON ends in "}}") */
        } else if (c == '{') {
            size_t t = token_len(in, len, i);
            if (t) {
                if (token_is(in, i, t, "dir"))
                    sub = dir;
                else if (token_is(in, i, t, "entry"))
                    sub = entry;
                else
                    return err_set(e, -EINVAL,
                                   "client data: unknown placeholder '%.*s' at byte %zu: the "
                                   "placeholders are {dir} and {entry}; write {{ for a "
                                   "literal brace",
                                   (int)(t > 40 ? 40 : t), (const char *)in + i, i);
                /* A NULL value: the caller has no delivered directory to name, and a guessed
                 * path in the client data would send the profiler to the wrong files. */
                if (!sub)
                    return err_set(e, -EINVAL,
                                   "client data: '%.*s' has no value here (no profiler "
                                   "directory is delivered)",
                                   (int)t, (const char *)in + i);
                skip = t;
                sublen = strlen(sub);
            }
        }
        /* n <= cap always holds, so cap - n cannot wrap; checked before each copy so a long
         * {dir} repeated many times fails with -E2BIG instead of writing past `out`. */
        if (sublen > cap - n)
            return err_set(e, -E2BIG, "client data: %zu bytes or more after expansion exceed %zu",
                           n + sublen, cap);
        if (!out)
            ; /* measuring only */
        else if (sub)
            memcpy(out + n, sub, sublen);
        else
            out[n] = c;
        n += sublen;
        i += skip;
    }
    *ret_len = n;
    return 0;
}
