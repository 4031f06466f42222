/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The env loader's settings file (profiler/envload_conf.c), as any bytes beside the loader: a
 * success must honour the format's rules and give spans the loader may cut into C strings.
 */
#include <errno.h>

#include "../profiler/envload_conf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct envload_conf c;
    struct envload_error e = {0, NULL};
    memset(&c, 0xA5, sizeof(c));
    int r = envload_conf_parse(size ? buf : NULL, size, &c, &e);
    FUZZ_CHECK(r == 0 || r == -E2BIG || r == -EINVAL);
    if (r < 0) {
        /* *ret is left alone on failure, and the refusal says why. */
        const unsigned char *p = (const unsigned char *)&c;
        for (size_t i = 0; i < sizeof(c); i++)
            FUZZ_CHECK(p[i] == 0xA5);
        FUZZ_CHECK(e.why != NULL);
        return 0;
    }
    FUZZ_CHECK(size <= ENVLOAD_CONF_MAX && memcmp(buf, ENVLOAD_MAGIC "\n", 13) == 0);
    FUZZ_CHECK(c.profiler.len > 0 && c.profiler.len <= ENVLOAD_PATH_MAX);
    FUZZ_CHECK(c.profiler.off + c.profiler.len < size &&
               buf[c.profiler.off + c.profiler.len] == '\n');
    FUZZ_CHECK(fuzz_no_controls(buf + c.profiler.off, c.profiler.len));
    FUZZ_CHECK(buf[c.profiler.off + c.profiler.len - 1] != '/');
    FUZZ_CHECK(c.nvars <= ENVLOAD_VARS_MAX);
    for (size_t i = 0; i < c.nvars; i++) {
        struct envload_span n = c.name[i], v = c.value[i];
        FUZZ_CHECK(n.len > 0 && v.off == n.off + n.len + 1 && v.off + v.len < size);
        FUZZ_CHECK(buf[n.off + n.len] == '=' && buf[v.off + v.len] == '\n');
        FUZZ_CHECK(!memchr(buf + n.off, '=', n.len));
        FUZZ_CHECK(n.len + 1 + v.len <= ENVLOAD_VAR_BYTES_MAX);
        FUZZ_CHECK(fuzz_no_controls(buf + n.off, n.len + 1 + v.len));
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(c.name[j].len != n.len || memcmp(buf + c.name[j].off, buf + n.off, n.len));
    }
    return 0;
}
