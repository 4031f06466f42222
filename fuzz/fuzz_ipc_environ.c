/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A runtime's ProcessEnvironment block, as `--listen` reads it to learn whether the runtime
 * pauses at startup: the whole input is the block; its first 6 bytes are also tried as the
 * reply's head. Every answer is 1, 0 or -EPROTO; a head accepted announces a block within the cap.
 */
#include <errno.h>

#include "base/bounds.h"
#include "fuzz.h"
#include "runtime/ipc_environ.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    int r = ipc_environ_pauses(data, size, &e);
    FUZZ_CHECK(r == 0 || r == 1 || r == -EPROTO);
    if (r < 0)
        FUZZ_CHECK(e.msg[0]);
    uint32_t n = 0;
    r = ipc_environ_decode_head(data, size < 6 ? size : 6, &n, &e);
    FUZZ_CHECK(r == 0 || r == -EPROTO || r == -E2BIG);
    if (r == 0)
        FUZZ_CHECK(n >= 4 && n <= IPC_ENV_BLOCK_MAX);
    return 0;
}
