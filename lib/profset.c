/* SPDX-License-Identifier: Apache-2.0 */
#include "profset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "userfile.h"
#include "util.h"

/* Bundle subdirectories we look for, as portable RIDs. */
static const char *const variants[] = {
    "linux-x64", "linux-musl-x64", "linux-arm64", "linux-musl-arm64",
    "linux-arm", "linux-musl-arm", "linux-x86",   "linux-musl-x86",
};

static int read_build(int dirfd, const char *name, const char *shown, struct profset_build *b,
                      struct cla_error *e)
{
    /* A FIFO or a device here is refused, never waited on (userfile.h). */
    _cleanup_close_ int fd = userfile_open(dirfd, name, shown, "--profiler", e);
    if (fd < 0) {
        if (fd == -ENXIO || fd == -EISDIR)
            err_hint(e, "pass the profiler's .so itself, or a bundle directory with one .so per "
                        "runtime identifier");
        return fd;
    }
    char *buf;
    size_t len;
    int r = util_read_all(fd, PROFILER_MAX_SIZE, &buf, &len);
    if (r == -E2BIG)
        return err_set(e, -EFBIG, "profiler '%s' is over %d bytes", shown, PROFILER_MAX_SIZE);
    if (r < 0)
        return err_setsys(e, r, "read profiler '%s'", shown);
    struct cla_error pe = {0};
    r = elfinfo_parse((const uint8_t *)buf, len, &b->elf, &pe);
    if (r < 0 || !b->elf.is_shared_object) {
        free(buf);
        if (r == -ENOEXEC || r == 0)
            return err_set(e, -EINVAL, "profiler '%s' is not an ELF shared object%s", shown,
                           r == 0 ? " (an executable: the runtime cannot dlopen it)" : "");
        return err_set(e, -EINVAL, "profiler '%s' is a malformed ELF file: %s", shown, pe.msg);
    }
    b->data = (uint8_t *)buf;
    b->len = len;
    snprintf(b->name, sizeof(b->name), "%s", name);
    return 0;
}

/* The one *.so of a bundle subdirectory. 1 = found (name filled), 0 = none, < 0 = error. */
static int find_so(int dirfd, const char *shown, char *name, size_t size, struct cla_error *e)
{
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return err_setsys(e, -errno, "bundle directory '%s'", shown);
    }
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0)
            continue;
        if (found || len >= size) {
            closedir(d);
            return err_set(e, -EINVAL,
                           "bundle directory '%s' holds more than one .so (or a name too long): "
                           "keep exactly one profiler per runtime identifier",
                           shown);
        }
        memcpy(name, de->d_name, len + 1);
        found = 1;
    }
    closedir(d);
    return found;
}

int profset_load(const char *path, struct profset *ret, struct cla_error *e)
{
    struct profset ps = {0};
    struct stat st;
    if (stat(path, &st) < 0)
        return err_setsys(e, -errno, "profiler '%s'", path);
    int r = 0;
    if (!S_ISDIR(st.st_mode)) {
        const char *slash = strrchr(path, '/');
        _cleanup_close_ int dfd = -1;
        if (slash) {
            char dir[4096];
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + (slash == path), path);
            dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (dfd < 0)
                return err_setsys(e, -errno, "profiler directory '%s'", dir);
        }
        r = read_build(slash ? dfd : AT_FDCWD, slash ? slash + 1 : path, path, &ps.builds[0], e);
        if (r < 0)
            return r;
        ps.n = 1;
        *ret = ps;
        return 0;
    }
    ps.bundle = true;
    _cleanup_close_ int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return err_setsys(e, -errno, "profiler bundle '%s'", path);
    for (size_t i = 0; i < ARRAY_SIZE(variants) && r >= 0; i++) {
        _cleanup_close_ int sub = openat(root, variants[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub < 0)
            continue;
        char shown[4400], name[256];
        snprintf(shown, sizeof(shown), "%s/%s", path, variants[i]);
        r = find_so(sub, shown, name, sizeof(name), e);
        if (r <= 0)
            continue;
        struct profset_build *b = &ps.builds[ps.n];
        snprintf(shown, sizeof(shown), "%s/%s/%s", path, variants[i], name);
        if ((r = read_build(sub, name, shown, b, e)) < 0)
            break;
        snprintf(b->variant, sizeof(b->variant), "%s", variants[i]);
        ps.n++;
    }
    if (r < 0) {
        profset_free(&ps);
        return r;
    }
    if (ps.n == 0)
        return err_set(e, -EINVAL,
                       "profiler bundle '%s' has no build: expected subdirectories such as "
                       "linux-x64/ and linux-musl-x64/, each with one .so",
                       path);
    *ret = ps;
    return 0;
}

void profset_free(struct profset *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->builds[i].data);
    ps->n = 0;
}

int profset_choose(const struct profset *ps, const struct rid *rid,
                   const struct profset_build **ret, struct cla_error *e)
{
    if (!ps->bundle) {
        const struct profset_build *b = &ps->builds[0];
        bool arch_bad = rid->arch != RID_ARCH_UNKNOWN && b->elf.arch != rid->arch;
        bool libc_bad = rid->libc != RID_LIBC_UNKNOWN && b->elf.libc != RID_LIBC_UNKNOWN &&
                        b->elf.libc != rid->libc;
        if (arch_bad || libc_bad) {
            err_set(e, -EXDEV,
                    "the profiler is built for %s/%s but the target runs %s/%s: the runtime "
                    "could not load it",
                    rid_arch_name(b->elf.arch), rid_libc_name(b->elf.libc),
                    rid_arch_name(rid->arch), rid_libc_name(rid->libc));
            return err_hint(e,
                            "use a %s build of the profiler, or a bundle directory with a "
                            "%s/ subdirectory",
                            rid->portable[0] ? rid->portable : "matching",
                            rid->portable[0] ? rid->portable : "<rid>");
        }
        *ret = b;
        return 0;
    }
    const char *names[4];
    size_t n = rid->portable[0] ? rid_bundle_names(rid, names, ARRAY_SIZE(names)) : 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ps->n; k++)
            if (strcmp(ps->builds[k].variant, names[i]) == 0) {
                *ret = &ps->builds[k];
                return 0;
            }
    char have[160] = "";
    size_t used = 0;
    for (size_t k = 0; k < ps->n && used < sizeof(have); k++) {
        int w = snprintf(have + used, sizeof(have) - used, "%s%s", k ? ", " : "",
                         ps->builds[k].variant);
        if (w > 0)
            used += (size_t)w;
    }
    if (!rid->portable[0]) {
        err_set(e, -ENOENT,
                "the target's runtime identifier is unknown, so no build of the "
                "bundle (%s) can be chosen",
                have);
        return err_hint(e, "pass --rid (for example --rid linux-musl-x64)");
    }
    err_set(e, -ENOENT, "the bundle has no build for %s (it has: %s)", rid->portable, have);
    return err_hint(e, "add a %s/ subdirectory with that build of the profiler", rid->portable);
}
