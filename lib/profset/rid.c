/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RID normalisation. The runtime reports its RID in the ProcessInfo2 reply: .NET 8+ gives the
 * portable form ("linux-x64", "linux-musl-arm64"), older runtimes and distro-built ones (source
 * build, e.g. Red Hat's or Alpine's packages) give "<distro>[.<version>]-<arch>". Only the libc
 * and the architecture matter for choosing a profiler build.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/bounds.h"
#include "profset/rid.h"

/* Operating systems that are not Linux-with-glibc-or-musl. A distro-specific RID is
 * "<name>[.<version>]-<arch>", the same shape as "osx.13-arm64" or "win10-x64", so these must
 * be refused by name before "any other name is a glibc distro" applies. */
static const char *const non_linux[] = {
    "android",       "browser", "freebsd", "haiku",   "illumos", "ios",    "iossimulator",
    "maccatalyst",   "netbsd",  "openbsd", "osx",     "solaris", "tizen",  "tvos",
    "tvossimulator", "unix",    "wasi",    "win",     "win7",    "win8",   "win81",
    "win10",         "any",     "base",    "windows", "macos",   "darwin",
};

static const struct {
    const char *name;
    enum rid_arch arch;
} arches[] = {
    {"x64", RID_ARCH_X64},
    {"arm64", RID_ARCH_ARM64},
    {"arm", RID_ARCH_ARM},
    {"x86", RID_ARCH_X86},
};

/* Indexed by [libc][arch]; both enums start with UNKNOWN at 0. */
static const char *const portable_names[3][5] = {
    [RID_LIBC_GLIBC] = {NULL, "linux-x64", "linux-arm64", "linux-arm", "linux-x86"},
    [RID_LIBC_MUSL] = {NULL, "linux-musl-x64", "linux-musl-arm64", "linux-musl-arm",
                       "linux-musl-x86"},
};

const char *rid_arch_name(enum rid_arch arch)
{
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
        if (arches[i].arch == arch)
            return arches[i].name;
    return "unknown";
}

const char *rid_libc_name(enum rid_libc libc)
{
    switch (libc) {
    case RID_LIBC_GLIBC: return "glibc";
    case RID_LIBC_MUSL: return "musl";
    default: return "unknown";
    }
}

void rid_from_parts(enum rid_libc libc, enum rid_arch arch, struct rid *ret)
{
    const char *p = NULL;

    /* Out-of-range enum values (a cast from a corrupt source) are treated as unknown. */
    if ((unsigned)libc > RID_LIBC_MUSL)
        libc = RID_LIBC_UNKNOWN;
    if ((unsigned)arch > RID_ARCH_X86)
        arch = RID_ARCH_UNKNOWN;
    p = portable_names[libc][arch];
    memset(ret, 0, sizeof(*ret));
    ret->libc = libc;
    ret->arch = arch;
    if (p)
        snprintf(ret->portable, sizeof(ret->portable), "%s", p);
}

static enum rid_arch arch_from(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
        if (strlen(arches[i].name) == len && memcmp(arches[i].name, s, len) == 0)
            return arches[i].arch;
    return RID_ARCH_UNKNOWN;
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A distro version: digits and dots, not starting or ending with a dot, no empty component
 * ("22.04", "3.17", "8"). */
static bool is_version(const char *s, size_t len)
{
    if (len == 0 || s[0] == '.' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.' ? s[i + 1] == '.' : !(s[i] >= '0' && s[i] <= '9'))
            return false;
    }
    return true;
}

int rid_parse(const char *s, struct rid *ret)
{
    enum rid_libc libc;
    enum rid_arch arch;
    const char *dash, *dot;
    size_t len, os_len, name_len;

    if (!s)
        return -EINVAL;
    len = strnlen(s, RID_MAX + 1);
    if (len == 0 || len > RID_MAX)
        return -EINVAL;

    /* The architecture is always the part after the last '-'. */
    dash = memrchr(s, '-', len);
    if (!dash || dash == s)
        return -EINVAL;
    arch = arch_from(dash + 1, len - (size_t)(dash + 1 - s));
    if (arch == RID_ARCH_UNKNOWN)
        return -EINVAL;
    os_len = (size_t)(dash - s);

    if (os_len == 5 && memcmp(s, "linux", 5) == 0) {
        libc = RID_LIBC_GLIBC;
    } else if (os_len == 10 && memcmp(s, "linux-musl", 10) == 0) {
        libc = RID_LIBC_MUSL;
    } else {
        /* "<name>[.<version>]": a lowercase name, then an optional numeric version. Anything
         * else ("linux-bionic", "linux-gnu", upper case, spaces) is refused. */
        dot = memchr(s, '.', os_len);
        name_len = dot ? (size_t)(dot - s) : os_len;
        if (name_len == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
            return -EINVAL;
        for (size_t i = 0; i < name_len; i++)
            if (!is_lower_alnum(s[i]))
                return -EINVAL;
        if (dot && !is_version(dot + 1, os_len - name_len - 1))
            return -EINVAL;
        for (size_t i = 0; i < sizeof(non_linux) / sizeof(non_linux[0]); i++)
            if (strlen(non_linux[i]) == name_len && memcmp(non_linux[i], s, name_len) == 0)
                return -EINVAL;
        /* "linux.x" is not a RID, and "linux"/"linux-musl" were handled above. */
        if (name_len == 5 && memcmp(s, "linux", 5) == 0)
            return -EINVAL;
        /* Alpine is the only musl distro with its own RID; every other distro-specific RID
         * the SDK ever defined (rhel, ubuntu, debian, centos, fedora, ol, sles, opensuse,
         * linuxmint, ...) is glibc. */
        libc = name_len == 6 && memcmp(s, "alpine", 6) == 0 ? RID_LIBC_MUSL : RID_LIBC_GLIBC;
    }
    rid_from_parts(libc, arch, ret);
    return 0;
}

size_t rid_bundle_names(const struct rid *r, const char *out[], size_t max)
{
    const char *name;

    if (!r || (unsigned)r->libc > RID_LIBC_MUSL || (unsigned)r->arch > RID_ARCH_X86)
        return 0;
    name = portable_names[r->libc][r->arch];
    /* One name per RID: "linux-x64" is the glibc build only (the SDK's portable "linux-x64"
     * means glibc), so a musl target must never fall back to it, and a glibc target has no
     * more specific name than its portable one. */
    if (!name || max == 0)
        return 0;
    out[0] = name;
    return 1;
}
