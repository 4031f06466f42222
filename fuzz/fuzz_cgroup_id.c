/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/cgroup and the kubelet's containerID: an ID comes out as 64 lowercase hex digits,
 * a pod UID as hex and dashes, and the container found always matches its own containerID.
 */
#include <errno.h>

#include "fuzz.h"
#include "target/cgroup_id.h"

static int hex_only(const char *s, int dash_ok)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (dash_ok && *s == '-')))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct cgroup_container c;
    memset(&c, 0x5a, sizeof(c));
    int r = cgroup_id_parse((const char *)data, size, &c, &e);
    FUZZ_CHECK(r == 1 || r == 0 || (r < 0 && e.code == r && e.msg[0]));
    if (r == 1) {
        FUZZ_CHECK(strnlen(c.id, sizeof(c.id)) == CGROUP_ID_LEN && hex_only(c.id, 0));
        FUZZ_CHECK(strnlen(c.pod_uid, sizeof(c.pod_uid)) < sizeof(c.pod_uid));
        FUZZ_CHECK(hex_only(c.pod_uid, 1));
        static const char *schemes[] = {"docker://", "containerd://", "cri-o://"};
        enum cgroup_runtime rts[] = {CGROUP_RT_DOCKER, CGROUP_RT_CONTAINERD, CGROUP_RT_CRIO};
        for (size_t i = 0; i < 3; i++) {
            char sid[96];
            int n = snprintf(sid, sizeof(sid), "%s%s", schemes[i], c.id);
            struct cgroup_status_id want;
            FUZZ_CHECK(cgroup_id_parse_status(sid, (size_t)n, &want, NULL) == 0);
            int m = cgroup_id_matches((const char *)data, size, &want, c.pod_uid, NULL);
            FUZZ_CHECK(m == (c.runtime == CGROUP_RT_UNKNOWN || c.runtime == rts[i]));
        }
    }
    struct cgroup_status_id s;
    memset(&s, 0x5a, sizeof(s));
    err_clear(&e);
    r = cgroup_id_parse_status((const char *)data, size, &s, &e);
    FUZZ_CHECK(r == 0 || (r == -EPROTO && e.msg[0]));
    if (r == 0)
        FUZZ_CHECK(strnlen(s.id, sizeof(s.id)) == CGROUP_ID_LEN && hex_only(s.id, 0));
    return 0;
}
