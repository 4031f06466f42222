/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes Status bodies: what an apiserver (or anything between us and it: a proxy, a
 * webhook) answers on failure. The parser must bound every field it copies, and the describer
 * must cut to any buffer size without writing past it.
 */
#include "fuzz.h"
#include "report/k8s_event.h"
#include "report/k8s_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct k8s_status *st = malloc(sizeof(*st));
    if (!st)
        abort();
    if (k8s_status_parse((const char *)data, size, st, &e) == 0) {
        FUZZ_CHECK(strnlen(st->status, sizeof(st->status)) < sizeof(st->status));
        FUZZ_CHECK(strnlen(st->reason, sizeof(st->reason)) < sizeof(st->reason));
        FUZZ_CHECK(strnlen(st->message, sizeof(st->message)) < sizeof(st->message));
        FUZZ_CHECK(strnlen(st->details_name, sizeof(st->details_name)) <
                   sizeof(st->details_name));
        FUZZ_CHECK(strnlen(st->details_group, sizeof(st->details_group)) <
                   sizeof(st->details_group));
        FUZZ_CHECK(strnlen(st->details_kind, sizeof(st->details_kind)) <
                   sizeof(st->details_kind));
        FUZZ_CHECK(st->n_causes <= K8S_STATUS_CAUSES_MAX && st->n_causes <= st->n_causes_total);
        FUZZ_CHECK(st->retry_after_s >= 0);
        /* Exactly-sized heap buffers, so a write past `size` is an ASan report. */
        static const size_t sizes[] = {1, 2, 16, 600};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            char *out = malloc(sizes[i]);
            if (!out)
                abort();
            size_t n = k8s_status_describe(st, out, sizes[i]);
            FUZZ_CHECK(n < sizes[i] && strnlen(out, sizes[i]) == n);
            free(out);
        }
    } else {
        FUZZ_CHECK(e.code < 0);
    }
    free(st);
    return 0;
}
