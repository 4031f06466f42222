/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod GET reply, from which the Event's involvedObject.uid is taken. The uid must come out
 * terminated within K8S_UID_MAX, and only from a reply naming the pod that was asked for.
 */
#include "fuzz.h"
#include "report/k8s_event.h"
#include "report/k8s_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    char uid[K8S_UID_MAX + 1];
    memset(uid, 0x5A, sizeof(uid));
    /* The names of the seed (tests/fixtures/k8s/pod_get.json), so mutations of it get deep. */
    if (k8s_pod_parse_uid((const char *)data, size, "orders-api-1", "shop", uid, &e) == 0) {
        size_t n = strnlen(uid, sizeof(uid));
        FUZZ_CHECK(n > 0 && n < sizeof(uid));
        FUZZ_CHECK(fuzz_no_controls(uid, n));
    } else {
        FUZZ_CHECK(e.code < 0);
    }
    return 0;
}
