/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The records of an inotify read on a socket directory: the names are the target's. The walk
 * stays in the buffer, counts no more records or socket names than the bytes can hold, and owes
 * a scan whenever it says anything.
 */
#include <sys/inotify.h>

#include "fuzz.h"
#include "target/direvents.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An aligned copy, as a read() into the caller's buffer gives. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct direvents d = {0};
    bool owed = direvents_parse(buf, size, &d);
    FUZZ_CHECK(d.records <= size / sizeof(struct inotify_event));
    FUZZ_CHECK(d.sockets <= d.records);
    FUZZ_CHECK(owed == (d.sockets || d.gone || d.overflow));
    /* The watches named: within the bound, each once, none without a socket name. */
    FUZZ_CHECK(d.nwds <= DIREVENTS_WDS_MAX && d.nwds <= d.sockets);
    FUZZ_CHECK(!d.wds_lost || d.nwds == DIREVENTS_WDS_MAX);
    for (unsigned i = 0; i < d.nwds; i++)
        for (unsigned k = i + 1; k < d.nwds; k++)
            FUZZ_CHECK(d.wds[i] != d.wds[k]);
    free(buf);
    return 0;
}
