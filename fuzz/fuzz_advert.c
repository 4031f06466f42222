/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The advertisement a peer sends first on the listening socket (--listen): anything that can
 * reach the socket sends these bytes. An accepted one must re-encode to the very same bytes
 * (no field is guessed or normalised) and keep its promises: non-zero cookie, pid in range.
 */
#include <errno.h>

#include "fuzz.h"
#include "runtime/advert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct advert a;
    struct cla_error e = {0};
    int r = advert_decode(data, size, &a, &e);
    FUZZ_CHECK(r == 0 || r == -EPROTO);
    if (r == 0) {
        uint8_t back[ADVERT_SIZE];
        FUZZ_CHECK(size == ADVERT_SIZE);
        FUZZ_CHECK(advert_encode(&a, back, sizeof(back)) == ADVERT_SIZE);
        FUZZ_CHECK(memcmp(back, data, ADVERT_SIZE) == 0);
        FUZZ_CHECK(a.pid >= 1 && a.pid <= ADVERT_PID_MAX);
    } else {
        FUZZ_CHECK(e.code == -EPROTO && e.msg[0]);
    }
    return 0;
}
