/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Is a file a .NET assembly? A PE image whose optional header's data directory 14 (the CLI
 * header, ECMA-335 II.25.3.3) names a CLI header: what the runtime's loader needs before
 * anything else, so a startup hook that is not one is refused before it reaches the target (the
 * runtime would only answer with an HRESULT of its ArgumentException); its name and the
 * assemblies it references, to check they are there for it. On buffers only: the
 * operator's bytes, read with their size known; every offset is checked against it.
 */
#ifndef CLRATTACH_ASSEMBLY_H
#define CLRATTACH_ASSEMBLY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Returns 0 for a managed PE image; -EINVAL with e saying what it is instead (not a PE file, a
 * truncated one, a native one without a CLI header). `shown` names the file in the message. */
int assembly_check(const uint8_t *data, size_t len, const char *shown, struct cla_error *e);

/* Does the assembly hold what the runtime's StartupHookProvider calls: a type named StartupHook in
 * no namespace, not nested, with a static method Initialize taking nothing and returning void
 * (ECMA-335 II.22.37 TypeDef, II.22.26 MethodDef, II.23.2.1 its signature)? Read from the
 * metadata tables (#~) and the #Strings and #Blob heaps, every index and offset checked against
 * the bytes and the streams' own sizes. Returns 0 when it does; -ENOENT (no such type),
 * -ENOEXEC (no such method, or one of another shape) or -EINVAL (not an assembly, metadata cut
 * or malformed, or the uncompressed #- form a release build never has), with e saying which. */
int assembly_check_startup_hook(const uint8_t *data, size_t len, const char *shown,
                                struct cla_error *e);

/* An assembly's simple name and the simple names of the assemblies it references (its
 * AssemblyRef table, ECMA-335 II.22.5), each once, in table order. */
#define ASSEMBLY_NAME_MAX 128
#define ASSEMBLY_REFS_MAX 128
struct assembly_identity {
    char name[ASSEMBLY_NAME_MAX];
    size_t nrefs;
    char refs[ASSEMBLY_REFS_MAX][ASSEMBLY_NAME_MAX];
};

/* Reads the Assembly row's name and the AssemblyRef table into *ret (not written on failure).
 * Every name is checked to be usable as a file name (not empty, under ASSEMBLY_NAME_MAX bytes,
 * no '/', '\\', control byte, "." or ".."). Returns 0; -EINVAL with e saying why for anything
 * else: not an assembly, metadata cut or malformed, no or several Assembly rows, a malformed
 * name, more than ASSEMBLY_REFS_MAX references. */
int assembly_read_identity(const uint8_t *data, size_t len, const char *shown,
                           struct assembly_identity *ret, struct cla_error *e);

#endif
