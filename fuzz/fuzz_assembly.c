/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A startup hook's assembly as `clrattach startup-hook --assembly` reads it: PE headers, the
 * section table, the metadata root and its streams, the tables up to AssemblyRef, the #Strings
 * and #Blob heaps, every offset and count of them chosen by the input. Whatever the bytes, the
 * answer is one of the documented ones, a StartupHook found implies a .NET assembly, and every
 * name read is a usable file name.
 */
#include <errno.h>
#include <string.h>

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
    static struct assembly_identity id;
    e.msg[0] = '\0';
    r = assembly_read_identity(data, size, "fuzz", &id, &e);
    FUZZ_CHECK(r == 0 || r == -EINVAL);
    if (r < 0) {
        FUZZ_CHECK(e.msg[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(is_assembly == 0 && id.nrefs <= ASSEMBLY_REFS_MAX);
    for (size_t i = 0; i <= id.nrefs; i++) {
        const char *n = i < id.nrefs ? id.refs[i] : id.name;
        size_t len = strnlen(n, ASSEMBLY_NAME_MAX);
        FUZZ_CHECK(len > 0 && len < ASSEMBLY_NAME_MAX && !strchr(n, '/') && strcmp(n, "..") != 0);
    }
    return 0;
}
