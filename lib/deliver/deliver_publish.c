/* SPDX-License-Identifier: Apache-2.0 */
/* Our bytes put under a name in the target's directory without replacing anything: what holds
 * the name judged (reused, refused, or a squatter's), the temporary created, filled and read back
 * through its fd, then linked (or renamed without replace) to the name and proved ours. */
#include "deliver/deliver_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/rootfs.h"
#include "base/util.h"

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

bool deliver_foreign(const struct stat *st, uid_t uid)
{
    return st->st_uid != uid && st->st_uid != 0;
}

bool deliver_trusted(const struct stat *st, uid_t uid)
{
    return !deliver_foreign(st, uid) && !(st->st_mode & 0022);
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
    if (!deliver_trusted(&st, o->uid))
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

int deliver_probe_open(int dirfd, const char *name, bool dir, uid_t uid, int *ret_fd,
                       struct stat *ret_st, uid_t *ret_uid, struct cla_error *e)
{
    memset(ret_st, 0, sizeof(*ret_st));
    int fd = rootfs_open(dirfd, name, dir ? ROOTFS_DIR : ROOTFS_REG, O_RDONLY, 0, e);
    if (fd == -ENOENT) {
        err_clear(e);
        return 0;
    }
    bool seen =
        fd >= 0 ? fstat(fd, ret_st) == 0 : fstatat(dirfd, name, ret_st, AT_SYMLINK_NOFOLLOW) == 0;
    if (seen && deliver_foreign(ret_st, uid)) {
        if (fd >= 0)
            close(fd);
        err_clear(e);
        *ret_uid = ret_st->st_uid;
        return DELIVER_SQUATTED;
    }
    if (!seen)
        memset(ret_st, 0, sizeof(*ret_st));
    *ret_fd = fd;
    return 1;
}

int deliver_refused(int dirfd, uid_t uid, int r, const struct stat *held, uid_t *ret_uid,
                    struct cla_error *e)
{
    struct stat d;
    if ((r == -EEXIST || r == -ELOOP) && fstat(dirfd, &d) == 0 &&
        (deliver_foreign(&d, uid) || ((d.st_mode & 0022) && !(d.st_mode & S_ISVTX)))) {
        err_clear(e);
        *ret_uid = held->st_uid;
        return DELIVER_SQUATTED;
    }
    return err_hint(e, "clrattach never overwrites files a process may have mapped; remove it if "
                       "no process uses it, or deliver elsewhere with --target-dir");
}

/* Looks at what holds the final name: 1 an identical file (reuse), 0 nothing, DELIVER_SQUATTED
 * (the caller falls back), < 0 refused. Anything but a regular file there (a FIFO, a pty, a
 * device, a directory, a socket) is refused by rootfs_open() before it is opened, so it can
 * neither block us nor become our terminal. */
static int probe_existing(int dirfd, const struct deliver_opts *o, const char *name, uid_t *ret_uid,
                          struct cla_error *e)
{
    _cleanup_close_ int fd = -1;
    struct stat st;
    int r = deliver_probe_open(dirfd, name, false, o->uid, &fd, &st, ret_uid, e);
    if (r != 1)
        return r;
    if (fd == -ENXIO || fd == -EISDIR)
        r = err_set(e, -EEXIST, "'%s%s' exists and is not a regular file: it is a %s", o->dir, name,
                    st.st_mode && !S_ISREG(st.st_mode) ? util_file_type_name(st.st_mode)
                                                       : "file of another type");
    else if (fd < 0)
        r = err_prefix(e, "existing '%s%s'", o->dir, name);
    else
        r = check_identical(fd, o, name, e);
    return r < 0 ? deliver_refused(dirfd, o->uid, r, &st, ret_uid, e) : 1;
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
    const struct deliver_test_hooks *h = deliver_hooks();
    if (h->before_publish && !*done)
        h->before_publish(dirfd, tmp, h->arg);
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
    if (!deliver_hooks()->force_rename) {
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

static int make_temp(int dirfd, const struct deliver_opts *o, const char *sha256,
                     struct deliver_temp *t, struct cla_error *e)
{
    int r = deliver_temp_name(sha256, o->nonce, ".tmp", t->name, sizeof(t->name));
    if (r < 0)
        return err_setsys(e, r, "temporary name in '%s'", o->dir);
    /* O_RDWR: the bytes are read back through this same fd. 0444: nobody, the target included,
     * should rewrite a library that may be mapped. */
    int fd = rootfs_open(dirfd, t->name, ROOTFS_REG, O_RDWR | O_CREAT | O_EXCL, 0444, e);
    if (fd < 0)
        return err_prefix(e, "create in '%s'", o->dir);
    t->fd = fd;
    if (fstat(fd, &t->st) < 0) {
        /* Unknown inode: nothing can be proven ours, so nothing is removed. */
        r = err_setsys(e, -errno, "stat '%s%s'", o->dir, t->name);
        memset(&t->st, 0, sizeof(t->st));
        return r;
    }
    return deliver_fill(fd, &t->st, o, t->name, e);
}

/* Puts our bytes under `name`: reuses an identical file there (1), or publishes our temporary,
 * made on first need, under it (0); DELIVER_SQUATTED when another uid holds it; < 0 refused. */
int deliver_put(int dirfd, const struct deliver_opts *o, const char *sha256, const char *name,
                struct deliver_temp *t, uid_t *ret_uid, struct cla_error *e)
{
    int r = probe_existing(dirfd, o, name, ret_uid, e);
    if (r != 0)
        return r;
    if (t->fd < 0 && (r = make_temp(dirfd, o, sha256, t, e)) < 0)
        return r;
    r = publish(dirfd, t->fd, &t->st, t->name, name, o, e);
    if (r != -EEXIST)
        return r;
    /* Someone published the name between our probe and now: judged as if it had been there. */
    r = probe_existing(dirfd, o, name, ret_uid, e);
    if (r == 0)
        return err_set(e, -EAGAIN, "'%s%s' appeared and vanished during delivery", o->dir, name);
    return r;
}

/* An earlier fallback of ours is reused on the same proof as the usual name. */
static int same_file(int dirfd, const char *name, void *arg)
{
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_REG, O_RDONLY, 0, NULL);
    return fd >= 0 && check_identical(fd, arg, name, NULL) == 0;
}

/* The usual name `name` is another uid's: an earlier fallback of ours is reused (1), or our
 * temporary is published under a fresh one (0); `name` becomes the name used. A directory we
 * cannot list only means no earlier fallback is found. */
int deliver_put_fallback(int dirfd, const struct deliver_opts *o, const char *sha256, char *name,
                         size_t size, struct deliver_temp *t, struct cla_error *e)
{
    /* deliver_final_name() ends the name in its extension, ".so" or ".dll". */
    char stem[128], ext[8];
    const char *dot = strrchr(name, '.');
    snprintf(ext, sizeof(ext), "%s", dot);
    snprintf(stem, sizeof(stem), "%.*s", (int)(dot - name), name);
    if (deliver_find_fallback(dirfd, stem, ext, S_IFREG, o->uid, same_file, (void *)o, name,
                              size) == 1)
        return 1;
    int r = deliver_fallback_name(stem, ext, name, size);
    if (r < 0)
        return err_setsys(e, r, "fallback name in '%s'", o->dir);
    uid_t uid;
    r = deliver_put(dirfd, o, sha256, name, t, &uid, e);
    if (r == DELIVER_SQUATTED)
        return err_set(e, -EEXIST, "'%s%s', a fresh random name, is taken by uid %u too", o->dir,
                       name, (unsigned)uid);
    return r;
}
