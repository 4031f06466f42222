/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's ProcessInfo strings, rendered (render.h) into the fields we show. */
#include "runtime/runtime_info.h"

#include <string.h>

#include "base/render.h"

static void put(const char *raw, char *out, size_t size)
{
    if (!raw)
        raw = ""; /* ProcessInfo (version 1) has no version, ProcessInfo2 no RID */
    render_text(raw, strlen(raw), out, size);
}

void runtime_info_from(const struct ipc_process_info *pi, struct runtime_info *ret)
{
    put(pi->clr_product_version, ret->version, sizeof(ret->version));
    put(pi->runtime_identifier, ret->rid, sizeof(ret->rid));
    put(pi->os, ret->os, sizeof(ret->os));
    put(pi->arch, ret->arch, sizeof(ret->arch));
}
