/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Namespace reply as the agent reads it for the profiles' selectors: what is accepted is a
 * DNS-1123 name and at most K8S_NS_LABELS_MAX labels, each key a qualified name and each value
 * a label value, all terminated and free of control bytes; a selector matches them or not.
 */
#include "fuzz.h"
#include "report/k8s_event.h"
#include "report/k8s_namespace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct k8s_namespace *ns = malloc(sizeof(*ns));
    if (!ns)
        return 0;
    struct cla_error e = {0};
    if (k8s_namespace_object_parse((const char *)data, size, ns, &e) == 0) {
        FUZZ_CHECK(k8s_is_dns1123_label(ns->name));
        FUZZ_CHECK(ns->n_labels <= K8S_NS_LABELS_MAX);
        struct agent_label l[K8S_NS_LABELS_MAX];
        FUZZ_CHECK(k8s_namespace_labels(ns, l) == ns->n_labels);
        for (size_t i = 0; i < ns->n_labels; i++) {
            FUZZ_CHECK(strnlen(l[i].key, K8S_LABEL_KEY_MAX + 1) <= K8S_LABEL_KEY_MAX);
            FUZZ_CHECK(k8s_is_qualified_name(l[i].key));
            FUZZ_CHECK(strnlen(l[i].value, K8S_LABEL_MAX + 1) <= K8S_LABEL_MAX);
            FUZZ_CHECK(fuzz_no_controls(l[i].value, strlen(l[i].value)));
        }
        struct agent_selector_term t[AGENT_SELECTOR_TERMS_MAX];
        const char *sel = "kubernetes.io/metadata.name in (shop, payments), team=a";
        int n = agent_selector_parse(sel, strlen(sel), t, &e);
        FUZZ_CHECK(n == 2);
        (void)agent_selector_matches(t, (size_t)n, l, ns->n_labels);
    } else {
        FUZZ_CHECK(e.code < 0 && e.msg[0]);
    }
    free(ns);
    return 0;
}
