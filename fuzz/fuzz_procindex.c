/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index's probe: a process's environ, the target's bytes (or, for an input that starts with
 * "-", an environment that could not be read). A probe whose TMPDIR is what target_open would
 * use (absolute, '/'-terminated, printable as it is), or empty with REFUSED.
 * The same bytes as /proc/loadavg: a pid in range, or -EPROTO.
 * The same bytes as a list of socket-directory entries: a fingerprint is 0 exactly when no
 * entry names the pid.
 */
#include <errno.h>

#include "fuzz.h"
#include "target/proc_environ.h"
#include "target/procindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    const char *env = size > 0 && buf[0] == '-' ? NULL : buf;
    size_t elen = env ? size : 0;

    struct procindex_probe p;
    procindex_probe_parse(env, elen, &p);
    FUZZ_CHECK((p.flags & ~(PROCINDEX_DISABLED | PROCINDEX_REFUSED)) == 0);
    size_t n = strnlen(p.tmpdir, sizeof(p.tmpdir));
    FUZZ_CHECK(n < sizeof(p.tmpdir));
    if (p.flags & PROCINDEX_REFUSED) {
        FUZZ_CHECK(n == 0);
    } else {
        FUZZ_CHECK(n > 0 && p.tmpdir[0] == '/' && p.tmpdir[n - 1] == '/');
        FUZZ_CHECK(fuzz_rendered_clean(p.tmpdir, n));
    }
    FUZZ_CHECK(!!(p.flags & PROCINDEX_DISABLED) == (proc_environ_diagnostics_off(env, elen) != NULL));

    pid_t last;
    int r = procindex_parse_loadavg(buf, size, &last);
    FUZZ_CHECK(r == -EPROTO || (r == 0 && last >= 0));

    /* Entries: 16 bytes each (pid from 2 bytes, so that they collide; key; inode). */
    size_t ne = size / 16 > 64 ? 64 : size / 16;
    struct procindex_entry v[64];
    for (size_t i = 0; i < ne; i++) {
        uint16_t pid;
        memcpy(&pid, data + 16 * i, 2);
        v[i].nspid = pid % 8;
        memcpy(&v[i].key, data + 16 * i + 2, 8);
        v[i].ino = data[16 * i + 10];
        v[i].ctime_ns = data[16 * i + 11];
    }
    procindex_sort_entries(v, ne);
    for (pid_t pid = 0; pid < 8; pid++) {
        bool named = false;
        for (size_t i = 0; i < ne; i++) {
            named |= v[i].nspid == pid;
            if (i > 0)
                FUZZ_CHECK(v[i - 1].nspid <= v[i].nspid);
        }
        FUZZ_CHECK((procindex_entries_fp(v, ne, pid) != 0) == named);
    }
    return 0;
}
