/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/status: Uid, Gid and NSpid lines. The kernel writes the file, but the Name: line
 * comes first and is the target's choice (the kernel escapes a newline in it, a parser of a
 * forged file must still not be led astray or out of bounds). CapEff and Groups decide what
 * clrattach may do while acting for the process: the group list stays within its cap.
 */
#include "fuzz.h"
#include "target/proc_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct proc_status st;
    if (proc_parse_status((const char *)data, size, &st, &e) == 0) {
        /* Without an NSpid line (kernels before 4.1) the parser leaves nspid and the level count
         * at 0, although proc_parse.h says levels is >= 1: checked only when the line exists. */
        if (st.have_nspid)
            FUZZ_CHECK(st.nspid > 0 && st.nspid_levels >= 1 && st.nspid_levels <= 32);
        else
            FUZZ_CHECK(st.nspid_levels == 0);
        FUZZ_CHECK(st.ngroups <= PROC_GROUPS_MAX);
        FUZZ_CHECK(!st.groups_truncated || st.ngroups == PROC_GROUPS_MAX);
        FUZZ_CHECK(st.have_cap_eff || st.cap_eff == 0);
    } else {
        FUZZ_CHECK(e.code < 0);
        FUZZ_CHECK(fuzz_no_controls(e.msg, strnlen(e.msg, sizeof(e.msg))));
    }
    return 0;
}
