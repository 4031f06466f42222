/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service-account files' bytes: the token (it goes into an Authorization header, so no
 * byte outside visible ASCII may come through) and the namespace (it goes into URL paths, so
 * only a DNS-1123 label may).
 */
#include "fuzz.h"
#include "report/k8s_config.h"
#include "report/k8s_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    char tok[K8S_TOKEN_MAX + 1];
    if (k8s_token_parse((const char *)data, size, tok, &e) == 0) {
        size_t n = strnlen(tok, sizeof(tok));
        FUZZ_CHECK(n > 0 && n < sizeof(tok));
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK((unsigned char)tok[i] > 0x20 && (unsigned char)tok[i] < 0x7f);
    } else {
        FUZZ_CHECK(e.code < 0);
    }
    char ns[K8S_LABEL_MAX + 1];
    err_clear(&e);
    if (k8s_namespace_parse((const char *)data, size, ns, &e) == 0)
        FUZZ_CHECK(k8s_is_dns1123_label(ns));
    else
        FUZZ_CHECK(e.code < 0);
    return 0;
}
