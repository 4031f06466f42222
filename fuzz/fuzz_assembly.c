/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A startup hook's assembly as `clrattach startup-hook --assembly` reads it: PE headers, the
 * section table, the metadata root and its streams, the tables up to MethodDef, the #Strings and
 * #Blob heaps, every offset and count of them chosen by the input. Whatever the bytes, the answer
 * is one of the documented ones, and a StartupHook found implies a .NET assembly.
 */
#include <errno.h>

#include "profset/assembly.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    int is_assembly = assembly_check(data, size, "fuzz", &e);
    FUZZ_CHECK(is_assembly == 0 || is_assembly == -EINVAL);
    int r = assembly_check_startup_hook(data, size, "fuzz", &e);
    FUZZ_CHECK(r == 0 || r == -ENOENT || r == -ENOEXEC || r == -EINVAL);
    if (r != -EINVAL)
        FUZZ_CHECK(is_assembly == 0);
    if (r < 0)
        FUZZ_CHECK(e.msg[0] != '\0');
    return 0;
}
