/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the target's RID: the operator's, else the runtime's answer, else a guess from the
 * loader in its maps and the ELF machine of its runtime library or executable. */
#include "profset/target_rid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "base/bounds.h"
#include "base/util.h"
#include "profset/elffile.h"
#include "profset/elfinfo.h"
#include "target/proc_maps.h"
#include "target/rootfs.h"
#include "target/target.h"

/* The ELF headers of the target's file open at `fd`, read piecewise (elffile.h): only the pages
 * the parser asks for, never the whole file, whose size (and holes) the target chooses. */
static int parse_headers(int fd, struct elf_info *ret)
{
    const struct elffile_limits lim = {.max_bytes = (uint64_t)ELFFILE_ROUNDS_MAX
                                                    << ELFFILE_CHUNK_SHIFT};
    return elffile_parse(fd, &lim, ret, NULL, NULL);
}

/*
 * The architecture of the CoreCLR library mapped in the target, read through its root (maps
 * shows resolved paths: no link to follow). When the executable is an interpreter rather than
 * the runtime host (binfmt_misc: qemu-user runs an arm64 dotnet on x64, and /proc/<pid>/exe is
 * qemu, of the host's architecture), this is the one that says which build can load. UNKNOWN
 * when no runtime library is mapped (a single-file app) or it cannot be read.
 */
static enum rid_arch runtime_library_arch(const struct target *t, const char *maps, size_t mlen)
{
    char lib[TARGET_PATH_MAX];
    if (proc_maps_runtime_library(maps, mlen, lib, sizeof(lib)) != 1)
        return RID_ARCH_UNKNOWN;
    _cleanup_close_ int fd = rootfs_open(t->rootfd, lib, ROOTFS_REG, O_RDONLY, 0, NULL);
    struct elf_info ei;
    if (fd < 0 || parse_headers(fd, &ei) < 0)
        return RID_ARCH_UNKNOWN;
    return ei.arch;
}

/* No RID given or answered: the loader in the maps says the C library, the ELF machine of the
 * runtime library (else of the executable) the architecture. */
static void guess(struct target *t, struct rid *ret)
{
    enum rid_libc libc = RID_LIBC_UNKNOWN;
    enum rid_arch arch = RID_ARCH_UNKNOWN;
    size_t len_maps;
    const char *maps = target_maps(t, &len_maps);
    if (maps) {
        int k = proc_maps_libc(maps, len_maps);
        libc = k == 1 ? RID_LIBC_MUSL : k == 2 ? RID_LIBC_GLIBC : RID_LIBC_UNKNOWN;
    }
    struct elf_info ei;
    /* "exe" is a magic link of our own procfs to the target's executable (following it is the
     * point; O_NOFOLLOW fails on it); its bytes are the target's, parsed like any other untrusted
     * input (bounded, checked), and only a regular file is read (never waited on). */
    _cleanup_close_ int exe =
        openat(t->procfd, "exe", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (exe >= 0 && fstat(exe, &st) == 0 && S_ISREG(st.st_mode) && parse_headers(exe, &ei) == 0) {
        arch = ei.arch;
        if (libc == RID_LIBC_UNKNOWN)
            libc = ei.libc;
    }
    enum rid_arch lib_arch = maps ? runtime_library_arch(t, maps, len_maps) : RID_ARCH_UNKNOWN;
    if (lib_arch != RID_ARCH_UNKNOWN)
        arch = lib_arch;
    rid_from_parts(libc, arch, ret);
}

int target_rid_detect(struct target *t, const struct target_rid_input *in, struct rid *ret,
                      enum target_rid_source *ret_source, struct cla_error *e)
{
    const char *answer = in->runtime_rid ? in->runtime_rid : "";
    if (in->option) {
        if (rid_parse(in->option, ret) < 0) {
            err_set(e, -EINVAL, "--rid '%s' is not a Linux runtime identifier", in->option);
            err_hint(e, "use a portable RID such as linux-x64, linux-musl-x64 or linux-arm64");
            return -EINVAL;
        }
        /* The runtime's own answer knows better than the operator: a musl build sent into a
         * glibc process fails with a bare 0x8007007E. */
        struct rid own;
        if (!in->force && answer[0] && rid_parse(answer, &own) == 0 && own.portable[0] &&
            strcmp(own.portable, ret->portable) != 0) {
            err_set(e, -EINVAL, "--rid %s contradicts the runtime's own answer: it runs %s (%s)",
                    ret->portable, own.portable, answer);
            err_hint(e, "drop --rid (the runtime's answer chooses the build), or pass "
                        "--force-rid if you know better");
            return -EINVAL;
        }
        *ret_source = TARGET_RID_OPTION;
    } else if (answer[0] && rid_parse(answer, ret) == 0 && ret->portable[0]) {
        *ret_source = TARGET_RID_RUNTIME;
    } else {
        guess(t, ret);
        *ret_source = TARGET_RID_MAPS_EXE;
    }
    return 0;
}
