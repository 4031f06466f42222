/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenTelemetry agent's status file, written by the app clrattach started it in: every field
 * copied must stay within its buffer and be terminated, and the maps scan (on the same bytes)
 * must give terminated paths.
 */
#include "fuzz.h"
#include "profset/otel_status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct otel_status st;
    if (otel_status_parse((const char *)data, size, &st, &e) == 0) {
        FUZZ_CHECK(st.state > OTEL_STATE_NONE && st.state <= OTEL_STATE_FAILED);
        const char *f[] = {st.action,   st.reason,       st.next_step,    st.instrumentations,
                           st.traces,   st.metrics,      st.exporter,     st.protocol,
                           st.endpoint, st.service_name, st.agent_version};
        const size_t n[] = {
            sizeof(st.action),           sizeof(st.reason),       sizeof(st.next_step),
            sizeof(st.instrumentations), sizeof(st.traces),       sizeof(st.metrics),
            sizeof(st.exporter),         sizeof(st.protocol),     sizeof(st.endpoint),
            sizeof(st.service_name),     sizeof(st.agent_version)};
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
            FUZZ_CHECK(strnlen(f[i], n[i]) < n[i]);
        FUZZ_CHECK(st.flushed >= -1 && st.flushed <= 1);
    } else {
        FUZZ_CHECK(e.code < 0);
    }
    struct otel_maps *m = malloc(sizeof(*m));
    if (!m)
        abort();
    otel_maps_scan((const char *)data, size, m);
    FUZZ_CHECK(strnlen(m->agent_dir, sizeof(m->agent_dir)) < sizeof(m->agent_dir));
    FUZZ_CHECK(strnlen(m->sdk_path, sizeof(m->sdk_path)) < sizeof(m->sdk_path));
    free(m);
    return 0;
}
