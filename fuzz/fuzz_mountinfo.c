/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/mountinfo of a target: mount points are paths the target chose (in its own mount
 * namespace it may mount anything anywhere, with \ooo escapes and spaces). Parsed mounts must be
 * terminated within their buffers, and the lookup must only ever return one of them.
 */
#include "fuzz.h"
#include "target/proc_mounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct proc_mount *m = NULL;
    size_t n = 0;
    if (proc_parse_mountinfo((const char *)data, size, &m, &n, &e) == 0) {
        FUZZ_CHECK(n <= PROC_MOUNTS_MAX);
        for (size_t i = 0; i < n; i++) {
            FUZZ_CHECK(strnlen(m[i].mount_point, sizeof(m[i].mount_point)) <
                       sizeof(m[i].mount_point));
            FUZZ_CHECK(strnlen(m[i].fstype, sizeof(m[i].fstype)) < sizeof(m[i].fstype));
        }
        static const char *const paths[] = {"/", "/tmp/", "/tmp/clrprobe.so", "/proc/1/root",
                                             "/a b/c"};
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
            const struct proc_mount *hit = proc_mount_for_path(m, n, paths[i]);
            FUZZ_CHECK(!hit || (hit >= m && hit < m + n));
        }
        /* A parsed absolute mount point, looked up itself, must find a mount (itself at least). */
        for (size_t i = 0; i < n && i < 64; i++)
            if (m[i].mount_point[0] == '/')
                FUZZ_CHECK(proc_mount_for_path(m, n, m[i].mount_point) != NULL);
        free(m);
    } else {
        FUZZ_CHECK(e.code < 0);
        FUZZ_CHECK(fuzz_no_controls(e.msg, strnlen(e.msg, sizeof(e.msg))));
    }
    return 0;
}
