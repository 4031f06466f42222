/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .NET runtime identifiers (RIDs) reduced to what picks a profiler build: the C library and the
 * CPU architecture. Pure string handling, no I/O. The RID comes from the target's IPC reply, so
 * it is hostile input: anything not recognised is rejected, never guessed from.
 */
#ifndef CLRATTACH_RID_H
#define CLRATTACH_RID_H

#include <stddef.h>

enum rid_libc { RID_LIBC_UNKNOWN, RID_LIBC_GLIBC, RID_LIBC_MUSL };
enum rid_arch { RID_ARCH_UNKNOWN, RID_ARCH_X64, RID_ARCH_ARM64, RID_ARCH_ARM, RID_ARCH_X86 };

struct rid {
    enum rid_libc libc;
    enum rid_arch arch;
    char portable[32]; /* "linux-musl-x64"; "" when libc or arch is unknown */
};

/* Normalises a RID as the runtime reports it, portable ("linux-musl-x64") or distro-specific
 * ("alpine.3.17-x64" -> musl, "rhel.8-arm64" -> glibc), to its portable form. Returns 0, or
 * -EINVAL for a non-Linux, Android/bionic, unsupported-architecture or malformed RID. */
int rid_parse(const char *s, struct rid *ret);

/* Builds a RID from parts found another way (libc from the target's maps, arch from its
 * executable's ELF header). `portable` stays "" when either part is unknown. */
void rid_from_parts(enum rid_libc libc, enum rid_arch arch, struct rid *ret);

/* Stores in out[] the bundle subdirectory names to try for `r`, most specific first, and returns
 * how many (at most `max`). The strings are static. A musl RID never yields a glibc name (the
 * glibc build cannot load there); an unknown libc or arch yields none. */
size_t rid_bundle_names(const struct rid *r, const char *out[], size_t max);

/* "x64", "arm64", "arm", "x86", or "unknown"; "glibc", "musl", or "unknown". Static strings. */
const char *rid_arch_name(enum rid_arch arch);
const char *rid_libc_name(enum rid_libc libc);

#endif
