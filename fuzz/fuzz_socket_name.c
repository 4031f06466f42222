/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostic socket names found in a target's TMPDIR: the target can create any file name there.
 * A name that parses must be exactly what the runtime prints for that pid and key
 * ("dotnet-diagnostic-%d-%llu-socket"), so each accepted parse is printed back and compared.
 */
#include "fuzz.h"
#include "target/proc_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pid_t pid;
    uint64_t key;
    int r = proc_socket_name_parse((const char *)data, size, &pid, &key);
    FUZZ_CHECK(r == 0 || r == 1);
    if (r == 1) {
        char back[128];
        int n = snprintf(back, sizeof(back), "dotnet-diagnostic-%d-%llu-socket", (int)pid,
                         (unsigned long long)key);
        FUZZ_CHECK(pid > 0);
        FUZZ_CHECK(n > 0 && (size_t)n == size && memcmp(back, data, size) == 0);
    }
    return 0;
}
