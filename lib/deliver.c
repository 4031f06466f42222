/* SPDX-License-Identifier: Apache-2.0 */
#include "deliver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs.h"
#include "sha256.h"
#include "util.h"

int deliver_final_name(const char *basename, const char *sha256_hex, char *out, size_t size)
{
    char stem[65];
    size_t n = 0, len = strlen(basename);
    if (len >= 3 && strcmp(basename + len - 3, ".so") == 0)
        len -= 3;
    for (size_t i = 0; i < len && n < sizeof(stem) - 1; i++) {
        char c = basename[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || (c == '.' && n > 0);
        stem[n++] = ok ? c : '_';
    }
    if (n == 0)
        stem[n++] = 'p';
    stem[n] = '\0';
    int w = snprintf(out, size, "%s-%.16s.so", stem, sha256_hex);
    if (w < 0 || (size_t)w >= size)
        return -ENAMETOOLONG;
    return 0;
}

int64_t deliver_hash_fd(int fd, char hex[65])
{
    struct sha256_ctx ctx;
    uint8_t buf[65536], digest[32];
    int64_t total = 0;
    sha256_init(&ctx);
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof(buf), total);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        total += n;
        if (total > PROFILER_MAX_SIZE)
            return -EFBIG;
        sha256_update(&ctx, buf, (size_t)n);
    }
    sha256_final(&ctx, digest);
    sha256_hex(digest, hex);
    return total;
}

/* Is the file at `fd` exactly our bytes, owned by the target (or root) and writable by nobody
 * else? Anything else under our content-addressed name is refused, never reused: a file another
 * user owns could be rewritten under the target after we checked it. */
static int check_identical(int fd, const struct deliver_opts *o, const char *hex, const char *name,
                           struct cla_error *e)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s'", name);
    if (!S_ISREG(st.st_mode))
        return err_set(e, -EEXIST, "'%s%s' exists and is not a regular file", o->dir, name);
    if ((st.st_uid != o->uid && st.st_uid != 0) || (st.st_mode & 0022))
        return err_set(e, -EEXIST,
                       "'%s%s' exists, owned by uid %u with mode 0%o: not trusted for reuse",
                       o->dir, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    char have[65];
    int64_t size = deliver_hash_fd(fd, have);
    if (size < 0)
        return err_setsys(e, (int)size, "read back '%s%s'", o->dir, name);
    if ((size_t)size != o->len || strcmp(have, hex) != 0)
        return err_set(e, -EEXIST, "'%s%s' exists with different content (sha256 %.16s…)", o->dir,
                       name, have);
    return 0;
}

/* Looks for an existing file under the final name: 1 = identical (reuse), 0 = absent. */
static int probe_existing(int dirfd, const struct deliver_opts *o, const char *hex,
                          const char *name, struct cla_error *e)
{
    struct cla_error sub = {0};
    _cleanup_close_ int fd = rootfs_open(dirfd, name, O_RDONLY, 0, &sub);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0) {
        *e = sub;
        return err_prefix(e, "existing '%s%s'", o->dir, name);
    }
    int r = check_identical(fd, o, hex, name, e);
    if (r < 0) {
        err_hint(e, "clrattach never overwrites a file a process may have mapped; remove it if "
                    "no process uses it, or deliver elsewhere with --target-dir");
        return r;
    }
    return 1;
}

static int write_tmp(int dirfd, const struct deliver_opts *o, const char *hex, const char *tmp,
                     struct stat *ret_st, struct cla_error *e)
{
    /* 0444: nobody, the target included, should rewrite a library that may be mapped. */
    _cleanup_close_ int fd = rootfs_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0444, e);
    if (fd < 0)
        return err_prefix(e, "create in '%s'", o->dir);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s'", tmp);
    if (st.st_uid != o->uid && fchown(fd, o->uid, (gid_t)-1) < 0)
        return err_setsys(e, -errno, "chown '%s%s' to uid %u", o->dir, tmp, (unsigned)o->uid);
    int r = util_write_all(fd, o->data, o->len);
    if (r < 0)
        return err_setsys(e, r, "write '%s%s'", o->dir, tmp);
    if (fsync(fd) < 0)
        return err_setsys(e, -errno, "fsync '%s%s'", o->dir, tmp);
    /* Read back through a fresh read-only descriptor of the same inode. */
    _cleanup_close_ int rfd = rootfs_open(dirfd, tmp, O_RDONLY, 0, e);
    if (rfd < 0)
        return err_prefix(e, "reopen");
    struct stat rst;
    if (fstat(rfd, &rst) < 0 || rst.st_ino != st.st_ino || rst.st_dev != st.st_dev)
        return err_set(e, -EIO, "'%s%s' was replaced while we wrote it", o->dir, tmp);
    char have[65];
    int64_t size = deliver_hash_fd(rfd, have);
    if (size < 0)
        return err_setsys(e, (int)size, "read back '%s%s'", o->dir, tmp);
    if ((size_t)size != o->len || strcmp(have, hex) != 0)
        return err_set(e, -EIO, "read-back of '%s%s' differs from what was written", o->dir, tmp);
    *ret_st = st;
    return 0;
}

/* Renames without ever replacing: RENAME_NOREPLACE, or link+unlink where the filesystem lacks
 * it (link also fails with EEXIST rather than replace). */
static int publish(int dirfd, const char *tmp, const char *name)
{
    if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
        return -errno;
    (void)unlinkat(dirfd, tmp, 0);
    return 0;
}

int deliver_profiler(int rootfd, const struct deliver_opts *o, struct deliver_result *ret,
                     struct cla_error *e)
{
    if (o->len == 0 || o->len > PROFILER_MAX_SIZE)
        return err_set(e, -EFBIG, "profiler of %zu bytes (must be 1..%d)", o->len,
                       PROFILER_MAX_SIZE);
    if (o->dir[0] != '/')
        return err_set(e, -EINVAL, "target directory '%s' is not absolute", o->dir);

    struct deliver_result res = {0};
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_buf(o->data, o->len, digest);
    sha256_hex(digest, res.sha256);

    char name[128];
    if (deliver_final_name(o->basename, res.sha256, name, sizeof(name)) < 0)
        return err_set(e, -ENAMETOOLONG, "profiler file name");
    size_t dlen = strlen(o->dir);
    bool slash = o->dir[dlen - 1] == '/';
    int w = snprintf(res.path, sizeof(res.path), "%s%s%s", o->dir, slash ? "" : "/", name);
    if (w < 0 || (size_t)w >= sizeof(res.path))
        return err_set(e, -ENAMETOOLONG, "target path too long");

    _cleanup_close_ int dirfd = rootfs_open(rootfd, o->dir, O_RDONLY | O_DIRECTORY, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "target directory '%s'", o->dir);

    int r = probe_existing(dirfd, o, res.sha256, name, e);
    if (r < 0)
        return r;
    if (r == 1) {
        res.reused = true;
        *ret = res;
        return 0;
    }

    uint8_t rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return err_setsys(e, -errno, "getrandom");
    char tmp[96];
    snprintf(tmp, sizeof(tmp), ".clrattach-%.16s-%02x%02x%02x%02x%02x%02x%02x%02x.tmp", res.sha256,
             rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);

    struct stat st = {0};
    r = write_tmp(dirfd, o, res.sha256, tmp, &st, e);
    if (r < 0) {
        (void)unlinkat(dirfd, tmp, 0);
        return r;
    }
    r = publish(dirfd, tmp, name);
    if (r == -EEXIST) {
        /* Someone published the same name between our probe and now: reuse if identical. */
        (void)unlinkat(dirfd, tmp, 0);
        r = probe_existing(dirfd, o, res.sha256, name, e);
        if (r < 0)
            return r;
        if (r == 0)
            return err_set(e, -EAGAIN, "'%s' appeared and vanished during delivery", res.path);
        res.reused = true;
        *ret = res;
        return 0;
    }
    if (r < 0) {
        (void)unlinkat(dirfd, tmp, 0);
        return err_setsys(e, r, "rename into '%s'", res.path);
    }

    /* The final name must now be our inode and nothing else. */
    struct cla_error sub = {0};
    _cleanup_close_ int ffd = rootfs_open(dirfd, name, O_RDONLY, 0, &sub);
    struct stat fst;
    if (ffd < 0 || fstat(ffd, &fst) < 0 || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev)
        return err_set(e, -EIO, "'%s' is not the file we wrote after the rename", res.path);
    *ret = res;
    return 0;
}
