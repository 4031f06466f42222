/* SPDX-License-Identifier: Apache-2.0 */
#include "deliver/deliver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/rootfs.h"
#include "base/sha256.h"
#include "base/util.h"

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

/* memcmp() for equality, eight bytes at a time: musl's memcmp() goes byte by byte, which for a
 * whole profiler costs more than the read itself. */
static bool equal_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t diff = 0;
        for (size_t k = 0; k < 64; k += 8) {
            uint64_t x, y;
            memcpy(&x, a + i + k, 8);
            memcpy(&y, b + i + k, 8);
            diff |= x ^ y;
        }
        if (diff)
            return false;
    }
    for (; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/*
 * Are the bytes of `fd`, read from offset 0 to its end, exactly `data`? 1 yes, 0 no (other
 * bytes, shorter, or longer), or a negative errno. The caller holds the digest of `data`: equal
 * bytes have equal digests, so this proves what hashing the file again would, for less work.
 */
static int same_bytes(int fd, const uint8_t *data, size_t len)
{
    /* 16 KiB: each page of a buffer is a page fault the first time it is written, and a larger
     * one saves a few reads but touches more fresh stack than the reads cost. */
    uint8_t buf[16384];
    size_t off = 0;
    for (;;) {
        /* One byte more than is left to compare: a file that goes on past `len` shows here. */
        size_t want = len - off < sizeof(buf) ? len - off + 1 : sizeof(buf);
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return off == len;
        if ((size_t)n > len - off || !equal_bytes(buf, data + off, (size_t)n))
            return 0;
        off += (size_t)n;
    }
}

/* Is the file at `fd` exactly our bytes, owned by the target (or root) and writable by nobody
 * else? Anything else under our content-addressed name is refused, never reused: a file another
 * user owns could be rewritten under the target after we checked it. */
static int check_identical(int fd, const struct deliver_opts *o, const char *name,
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
    int same = same_bytes(fd, o->data, o->len);
    if (same < 0)
        return err_setsys(e, same, "read back '%s%s'", o->dir, name);
    if (same == 1)
        return 0;
    /* Different: its own digest, for the message only. */
    char have[65];
    int64_t size = deliver_hash_fd(fd, have);
    if (size < 0)
        return err_setsys(e, (int)size, "read back '%s%s'", o->dir, name);
    return err_set(e, -EEXIST, "'%s%s' exists with different content (sha256 %.16s…)", o->dir, name,
                   have);
}

/* Looks for an existing file under the final name: 1 = identical (reuse), 0 = absent. Anything
 * but a regular file there (a FIFO, a pty, a device, a directory, a socket) is refused by
 * rootfs_open() before it is opened, so it can neither block us nor become our terminal. */
static int probe_existing(int dirfd, const struct deliver_opts *o, const char *name,
                          struct cla_error *e)
{
    struct cla_error sub = {0};
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_REG, O_RDONLY, 0, &sub);
    if (fd == -ENOENT)
        return 0;
    int r;
    if (fd == -ENXIO || fd == -EISDIR) {
        /* Named for the message only: the refusal above already decided. */
        struct stat st;
        bool seen = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode);
        r = err_set(e, -EEXIST, "'%s%s' exists and is not a regular file: it is a %s", o->dir, name,
                    seen ? util_file_type_name(st.st_mode) : "file of another type");
    } else if (fd < 0) {
        *e = sub;
        return err_prefix(e, "existing '%s%s'", o->dir, name);
    } else {
        r = check_identical(fd, o, name, e);
    }
    if (r < 0) {
        err_hint(e, "clrattach never overwrites a file a process may have mapped; remove it if "
                    "no process uses it, or deliver elsewhere with --target-dir");
        return r;
    }
    return 1;
}

static struct deliver_test_hooks hooks;

void deliver_set_test_hooks(const struct deliver_test_hooks *h)
{
    struct deliver_test_hooks none = {0};
    hooks = h ? *h : none;
}

/* Is `name` in `dirfd` the inode `ours`? Pinned with O_PATH, so whatever is there is neither
 * opened nor followed. */
bool deliver_is_ours(int dirfd, const char *name, const struct stat *ours)
{
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_ANY, O_PATH, 0, NULL);
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == ours->st_dev && st.st_ino == ours->st_ino;
}

/* Removes `name` only while it is our inode. Linux has no unlink by fd: a rename in the window
 * between the check and unlinkat() can still make us remove what the target itself put under
 * OUR random name, which costs it only that file. */
void deliver_remove_if_ours(int dirfd, const char *name, const struct stat *ours)
{
    if (deliver_is_ours(dirfd, name, ours))
        (void)unlinkat(dirfd, name, 0);
}

static int replaced(const struct deliver_opts *o, const char *tmp, struct cla_error *e)
{
    err_set(e, -EIO, "the target replaced '%s%s' while we wrote it", o->dir, tmp);
    return err_hint(e,
                    "a process in the target renames files in '%s': deliver elsewhere with "
                    "--target-dir",
                    o->dir);
}

/*
 * Writes the profiler into the new temporary file and verifies it, all through `fd`, the one it
 * was created with: its name is never looked up again, as the target may rename anything over it
 * at any time. `st` is the file as created. Checks: the same inode, still named (a rename over
 * it drops its last link), regular, owned by the target's user, our size, and our bytes read
 * back through this fd (compared with the bytes whose digest names the file, so the name still
 * tells the content).
 */
int deliver_fill(int fd, const struct stat *st, const struct deliver_opts *o, const char *tmp,
                 struct cla_error *e)
{
    if (st->st_uid != o->uid && fchown(fd, o->uid, (gid_t)-1) < 0)
        return err_setsys(e, -errno, "chown '%s%s' to uid %u", o->dir, tmp, (unsigned)o->uid);
    int r = util_write_all(fd, o->data, o->len);
    if (r < 0)
        return err_setsys(e, r, "write '%s%s'", o->dir, tmp);
    if (fsync(fd) < 0)
        return err_setsys(e, -errno, "fsync '%s%s'", o->dir, tmp);
    struct stat now;
    if (fstat(fd, &now) < 0)
        return err_setsys(e, -errno, "stat '%s%s'", o->dir, tmp);
    if (now.st_nlink == 0)
        return replaced(o, tmp, e);
    if (!S_ISREG(now.st_mode) || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
        now.st_uid != o->uid || now.st_size != (off_t)o->len)
        return err_set(e, -EIO, "'%s%s' is not what we wrote (uid %u, %lld bytes)", o->dir, tmp,
                       (unsigned)now.st_uid, (long long)now.st_size);
    int same = same_bytes(fd, o->data, o->len);
    if (same < 0)
        return err_setsys(e, same, "read back '%s%s'", o->dir, tmp);
    if (same == 0)
        return err_set(e, -EIO, "read-back of '%s%s' differs from what was written", o->dir, tmp);
    return 0;
}

static void run_hook(int dirfd, const char *tmp, bool *done)
{
    if (hooks.before_publish && !*done)
        hooks.before_publish(dirfd, tmp, hooks.arg);
    *done = true;
}

/*
 * Gives our inode the final name, never replacing anything, and proves the name is ours.
 *
 * First choice: link the inode itself to the final name through our fd's magic link
 * /proc/self/fd/N (linkat AT_SYMLINK_FOLLOW; AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH). No
 * name of the target's is resolved, so nothing the target renamed over the temporary name can
 * be published: an inode that lost its last name cannot be linked again (ENOENT).
 *
 * Where the filesystem has no hard links (EPERM, EOPNOTSUPP) or /proc is missing: rename the
 * temporary name with RENAME_NOREPLACE, checking right before that it is still our inode, and
 * right after that the final name is. A swap in between publishes the target's file under our
 * name; it is then refused (not ours to remove), never handed to the runtime.
 *
 * Returns 0; -EEXIST when the final name is taken (no message); -EIO when the target swapped
 * the temporary file; another negative errno from the filesystem.
 */
static int publish(int dirfd, int fd, const struct stat *st, const char *tmp, const char *name,
                   const struct deliver_opts *o, struct cla_error *e)
{
    bool linked = false, hooked = false;
    if (!hooks.force_rename) {
        char self[40];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        run_hook(dirfd, tmp, &hooked);
        linked = linkat(AT_FDCWD, self, dirfd, name, AT_SYMLINK_FOLLOW) == 0;
        int err = errno;
        struct stat now;
        if (!linked && err == EEXIST)
            return -EEXIST;
        if (!linked && err == ENOENT && fstat(fd, &now) == 0 && now.st_nlink == 0)
            return replaced(o, tmp, e);
        if (!linked && err != EPERM && err != EOPNOTSUPP && err != ENOENT)
            return err_setsys(e, -err, "link '%s%s' to '%s'", o->dir, tmp, name);
    }
    if (linked) {
        deliver_remove_if_ours(dirfd, tmp, st);
    } else {
        if (!deliver_is_ours(dirfd, tmp, st))
            return replaced(o, tmp, e);
        run_hook(dirfd, tmp, &hooked);
        if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) < 0) {
            if (errno == EEXIST)
                return -EEXIST;
            return err_setsys(e, -errno, "rename '%s%s' to '%s'", o->dir, tmp, name);
        }
    }
    /* The final name must now be our inode and nothing else. */
    if (!deliver_is_ours(dirfd, name, st)) {
        replaced(o, tmp, e);
        return err_prefix(e, "'%s%s' is not the file we wrote", o->dir, name);
    }
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

    /* O_PATH is all the *at calls below need: the directory itself is never read. */
    _cleanup_close_ int dirfd = rootfs_open(rootfd, o->dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "target directory '%s'", o->dir);

    int r = probe_existing(dirfd, o, name, e);
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

    /* O_RDWR: the bytes are read back through this same fd. 0444: nobody, the target included,
     * should rewrite a library that may be mapped. */
    _cleanup_close_ int fd =
        rootfs_open(dirfd, tmp, ROOTFS_REG, O_RDWR | O_CREAT | O_EXCL, 0444, e);
    if (fd < 0)
        return err_prefix(e, "create in '%s'", o->dir);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s%s'", o->dir, tmp);
    r = deliver_fill(fd, &st, o, tmp, e);
    if (r == 0)
        r = publish(dirfd, fd, &st, tmp, name, o, e);
    if (r == -EEXIST) {
        /* Someone published the same name between our probe and now: reuse if identical. */
        deliver_remove_if_ours(dirfd, tmp, &st);
        r = probe_existing(dirfd, o, name, e);
        if (r < 0)
            return r;
        if (r == 0)
            return err_set(e, -EAGAIN, "'%s' appeared and vanished during delivery", res.path);
        res.reused = true;
        *ret = res;
        return 0;
    }
    if (r < 0) {
        deliver_remove_if_ours(dirfd, tmp, &st);
        return r;
    }
    res.dev = (uint64_t)st.st_dev;
    res.ino = (uint64_t)st.st_ino;
    *ret = res;
    return 0;
}
