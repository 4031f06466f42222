/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/environ: NUL-separated, entirely the target's (and cut short when the target
 * rewrote its own stack). proc_environ_get must stay inside the buffer, and the TMPDIR rule must
 * give an absolute, '/'-terminated path without "." or ".." components and without anything
 * render.h escapes (so it prints as it is), or a -EPROTO error whose text is clean too (the
 * message quotes the value and is printed to a terminal). The one-pass lookup of several names
 * finds exactly what one lookup per name finds. The same bytes as a namespace link's readlink()
 * text (as a kernel we do not trust to format it would give) parse or give -EPROTO, never more.
 */
#include <errno.h>

#include "fuzz.h"
#include "target/proc_environ.h"
#include "target/proc_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    const char *v;
    size_t vlen;
    static const char *const names[] = {"TMPDIR", "DOTNET_DiagnosticPorts", "", "=", "A"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (proc_environ_get(buf, size, names[i], &v, &vlen) == 1) {
            FUZZ_CHECK(v >= buf && v + vlen <= buf + size);
            FUZZ_CHECK(memchr(v, '\0', vlen) == NULL);
        }
    }

    const char *many[sizeof(names) / sizeof(names[0])];
    size_t many_len[sizeof(names) / sizeof(names[0])];
    proc_environ_get_many(buf, size, names, sizeof(names) / sizeof(names[0]), many, many_len);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int one = proc_environ_get(buf, size, names[i], &v, &vlen);
        FUZZ_CHECK(one == (many[i] != NULL));
        if (one)
            FUZZ_CHECK(v == many[i] && vlen == many_len[i]);
    }

    uint64_t ino = 0;
    int nr = proc_ns_link_parse(buf, size, "mnt", &ino);
    FUZZ_CHECK(nr == 0 || nr == -EPROTO);
    if (nr == 0)
        FUZZ_CHECK(ino != 0 && size > 6 && memcmp(buf, "mnt:[", 5) == 0 && buf[size - 1] == ']');

    struct cla_error e = {0};
    char out[TARGET_PATH_MAX];
    int r = proc_tmpdir_from_environ(buf, size, out, sizeof(out), &e);
    if (r == 0) {
        size_t n = strnlen(out, sizeof(out));
        FUZZ_CHECK(n > 0 && n < sizeof(out));
        FUZZ_CHECK(out[0] == '/' && out[n - 1] == '/');
        FUZZ_CHECK(fuzz_rendered_clean(out, n));
        FUZZ_CHECK(!strstr(out, "/./") && !strstr(out, "/../"));
    } else {
        FUZZ_CHECK(r == -EPROTO || r == -ENAMETOOLONG);
        FUZZ_CHECK(fuzz_rendered_clean(e.msg, strnlen(e.msg, sizeof(e.msg))));
    }

    /* A small output buffer exercises the length check at its edge. */
    char small[8];
    if (proc_tmpdir_from_environ(buf, size, small, sizeof(small), &e) == 0)
        FUZZ_CHECK(strnlen(small, sizeof(small)) < sizeof(small));
    return 0;
}
