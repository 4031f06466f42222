/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/stat of a target: the comm field is the target's own choice (prctl PR_SET_NAME),
 * with spaces, ')' and control bytes. Checks the parser's promises: comm within its buffer and
 * kept raw (no NUL inside), its rendering clean, and error messages free of control bytes (they
 * are printed).
 */
#include "fuzz.h"
#include "target/proc_parse.h"
#include "base/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct proc_stat st;
    if (proc_parse_stat((const char *)data, size, &st, &e) == 0) {
        size_t n = strnlen(st.comm, sizeof(st.comm));
        FUZZ_CHECK(n < sizeof(st.comm));
        /* Raw, as the target set it; shown only rendered (target.c). */
        char shown[64];
        size_t m = render_text(st.comm, n, shown, sizeof(shown));
        FUZZ_CHECK(m < sizeof(shown) && fuzz_rendered_clean(shown, m));
        FUZZ_CHECK(st.ppid >= 0);
    } else {
        FUZZ_CHECK(e.code < 0);
        FUZZ_CHECK(fuzz_no_controls(e.msg, strnlen(e.msg, sizeof(e.msg))));
    }
    return 0;
}
