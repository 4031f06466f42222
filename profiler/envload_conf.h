/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The env loader's settings file (clrenvload.conf, beside libclrenvload.so): which profiler to
 * load and the variables to setenv() first, parsed on a buffer. Pure: no I/O, no allocation.
 */
#ifndef CLRATTACH_ENVLOAD_CONF_H
#define CLRATTACH_ENVLOAD_CONF_H

#include <stddef.h>

/*
 * The format, every line ending in '\n' (the last one too: a file cut short is refused):
 *
 *     clrenvload 1
 *     profiler=<path of the real profiler: absolute, or relative to the loader's directory>
 *     NAME=VALUE
 *     ...
 *
 * Line 1 is exactly "clrenvload 1" (the format's version). Line 2 names the profiler: 1 to
 * ENVLOAD_PATH_MAX bytes, no control byte (below 0x20, DEL), no empty, "." or ".." component,
 * no trailing '/'. Every further line is one variable: a non-empty NAME up to the first '=',
 * then the VALUE (may be empty); the whole line within ENVLOAD_VAR_BYTES_MAX bytes, no control
 * byte, each NAME once, at most ENVLOAD_VARS_MAX lines. The caps are clrattach's own for --env
 * (lib/base/bounds.h: ENV_VARS_MAX, ENV_VAR_BYTES_MAX), so whatever it sends fits. No comments,
 * no empty lines, no NUL; the file is at most ENVLOAD_CONF_MAX bytes.
 *
 * A VALUE is set with its placeholders expanded as clrattach expands --env (lib/deliver/
 * placeholders.h), against where the loader was loaded from: "{dir}" is the loader's directory,
 * "{entry}" the profiler's path (line 2 joined to that directory, or as given when absolute),
 * "{{" a literal '{'; any other brace stays as it is. So clrattach writes the file before it
 * knows where the directory lands, and the profiler's getenv() sees the very values the runtime
 * was sent with SetEnvironmentVariable.
 */
#define ENVLOAD_CONF_NAME     "clrenvload.conf"
#define ENVLOAD_MAGIC         "clrenvload 1"
#define ENVLOAD_PATH_MAX      4095
#define ENVLOAD_VARS_MAX      32
#define ENVLOAD_VAR_BYTES_MAX 4096
#define ENVLOAD_CONF_MAX                                                                           \
    (sizeof(ENVLOAD_MAGIC) + sizeof("profiler=") + ENVLOAD_PATH_MAX +                              \
     ENVLOAD_VARS_MAX * (ENVLOAD_VAR_BYTES_MAX + 1))

/* A piece of the parsed buffer: bytes [off, off + len). The byte right after each span is the
 * line's '\n' or, after a name, its '=': a caller may overwrite it with a NUL to get C strings. */
struct envload_span {
    size_t off, len;
};

struct envload_conf {
    struct envload_span profiler;
    size_t nvars;
    struct envload_span name[ENVLOAD_VARS_MAX], value[ENVLOAD_VARS_MAX];
};

/* Why a file was refused: the 1-based line (0 for the file as a whole) and a static phrase. */
struct envload_error {
    unsigned line;
    const char *why;
};

/* Parses buf[0, len). Returns 0 and fills *ret, or -E2BIG (over ENVLOAD_CONF_MAX or a cap) or
 * -EINVAL (malformed) and fills *ret_err; *ret is never written on failure. */
int envload_conf_parse(const char *buf, size_t len, struct envload_conf *ret,
                       struct envload_error *ret_err);

/* Expands the placeholders of the `len` bytes of `v` (above) into `out` (`cap` bytes, NULL to
 * measure), `dir` and `entry` the loader's directory and the profiler's path. Returns the
 * expanded length (without the NUL written after it when it fits: out[cap - 1] at most). */
size_t envload_expand(const char *v, size_t len, const char *dir, const char *entry, char *out,
                      size_t cap);

#endif
