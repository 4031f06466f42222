/* SPDX-License-Identifier: Apache-2.0 */
#include "deliver/deliver.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target/rootfs.h"
#include "base/sha256.h"
#include "base/util.h"

int deliver_final_name(const char *basename, const char *sha256_hex, char *out, size_t size)
{
    char stem[65];
    size_t n = 0, len = strlen(basename);
    /* A managed assembly (a startup hook) keeps its ".dll": the runtime loads it by path
     * whatever it is called, but a person reading the app's directory should not take it for a
     * native library. */
    const char *ext = len >= 4 && strcmp(basename + len - 4, ".dll") == 0 ? ".dll" : ".so";
    if (len >= strlen(ext) && strcmp(basename + len - strlen(ext), ext) == 0)
        len -= strlen(ext);
    for (size_t i = 0; i < len && n < sizeof(stem) - 1; i++) {
        char c = basename[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || (c == '.' && n > 0);
        stem[n++] = ok ? c : '_';
    }
    if (n == 0)
        stem[n++] = 'p';
    stem[n] = '\0';
    int w = snprintf(out, size, "%s-%.16s%s", stem, sha256_hex, ext);
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

static bool lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static int random_hex(char out[DELIVER_NONCE_LEN + 1])
{
    uint8_t rnd[DELIVER_NONCE_LEN / 2];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -errno;
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

int deliver_new_nonce(char out[DELIVER_NONCE_LEN + 1])
{
    return random_hex(out);
}

bool deliver_nonce_valid(const char *nonce)
{
    return !nonce || (strlen(nonce) == DELIVER_NONCE_LEN && lower_hex(nonce, DELIVER_NONCE_LEN));
}

int deliver_temp_name(const char *digest_hex, const char *nonce, const char *suffix, char *out,
                      size_t size)
{
    char fresh[DELIVER_NONCE_LEN + 1];
    if (!nonce) {
        int r = random_hex(fresh);
        if (r < 0)
            return r;
        nonce = fresh;
    }
    if (!deliver_nonce_valid(nonce))
        return -EINVAL;
    int w = snprintf(out, size, ".clrattach-%.16s-%s%s", digest_hex, nonce, suffix);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

int deliver_join(const char *dir, const char *name, char *out, size_t size)
{
    size_t dlen = strlen(dir);
    const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/";
    int w = snprintf(out, size, "%s%s%s", dir, sep, name);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

int deliver_fallback_name(const char *stem, const char *ext, char *out, size_t size)
{
    char rnd[DELIVER_NONCE_LEN + 1];
    int r = random_hex(rnd);
    if (r < 0)
        return r;
    int w = snprintf(out, size, "%s-%s%s", stem, rnd, ext);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

/* Calls `fn` on each entry of the directory at `dirfd` but "." and "..", at most
 * DELIVER_SCAN_ENTRIES_MAX, until it returns non-zero. Returns that, 0, or a negative errno. */
static int scan_dir(int dirfd, int (*fn)(int dirfd, const char *name, void *arg), void *arg)
{
    /* readdir needs a readable fd; the one given may be O_PATH. */
    int lfd = rootfs_open(dirfd, "/", ROOTFS_DIR, O_RDONLY, 0, NULL);
    if (lfd < 0)
        return lfd;
    DIR *d = fdopendir(lfd);
    if (!d) {
        int r = -errno;
        close(lfd);
        return r;
    }
    int r = 0;
    for (int n = 0; r == 0 && n < DELIVER_SCAN_ENTRIES_MAX; n++) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            r = -errno;
            break;
        }
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            r = fn(dirfd, de->d_name, arg);
    }
    closedir(d);
    return r;
}

struct fallback_search {
    const char *stem, *ext;
    size_t stem_len, ext_len;
    mode_t type;
    uid_t uid;
    int (*same)(int dirfd, const char *name, void *arg);
    void *arg;
    int checks;
    char *found; /* the name, when found */
    size_t size;
};

static int fallback_candidate(int dirfd, const char *name, void *arg)
{
    struct fallback_search *s = arg;
    size_t n = strlen(name), at = s->stem_len + 1;
    if (n != at + DELIVER_NONCE_LEN + s->ext_len || strncmp(name, s->stem, s->stem_len) != 0 ||
        name[s->stem_len] != '-' || !lower_hex(name + at, DELIVER_NONCE_LEN) ||
        strcmp(name + at + DELIVER_NONCE_LEN, s->ext) != 0)
        return 0;
    /* Cheap first: the decoys a squatter plants are its own and cost no comparison. */
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || (st.st_mode & S_IFMT) != s->type ||
        !deliver_trusted(&st, s->uid))
        return 0;
    if (s->checks++ >= DELIVER_FALLBACK_CHECKS_MAX)
        return -E2BIG;
    if (s->same(dirfd, name, s->arg) != 1)
        return 0;
    return (size_t)snprintf(s->found, s->size, "%s", name) < s->size ? 1 : -ENAMETOOLONG;
}

int deliver_find_fallback(int dirfd, const char *stem, const char *ext, mode_t type, uid_t uid,
                          int (*same)(int dirfd, const char *name, void *arg), void *arg,
                          char *ret_name, size_t size)
{
    struct fallback_search s = {.stem = stem,
                                .ext = ext,
                                .stem_len = strlen(stem),
                                .ext_len = strlen(ext),
                                .type = type,
                                .uid = uid,
                                .same = same,
                                .arg = arg,
                                .found = ret_name,
                                .size = size};
    int r = scan_dir(dirfd, fallback_candidate, &s);
    return r == -E2BIG ? 0 : r;
}

/* Empties the directory at `dfd` (ours) depth first; each entry removed costs one of *budget. */
static int empty_dir(int dfd, unsigned depth, int *budget)
{
    if (depth > PROFDIR_DEPTH_MAX)
        return -ELOOP;
    if (fchmod(dfd, 0700) < 0)
        return -errno;
    int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        int r = -errno;
        if (lfd >= 0)
            close(lfd);
        return r;
    }
    int r = 0;
    struct dirent *de;
    while (r == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (--*budget < 0) {
            r = -E2BIG;
            break;
        }
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = -errno;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = rootfs_open(dfd, de->d_name, ROOTFS_DIR, O_RDONLY, 0, NULL);
            if (sub < 0) {
                r = sub;
                break;
            }
            r = empty_dir(sub, depth + 1, budget);
            close(sub);
            if (r == 0 && unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0)
                r = -errno;
        } else if (unlinkat(dfd, de->d_name, 0) < 0) {
            r = -errno;
        }
    }
    closedir(d);
    return r;
}

int deliver_remove_dir(int parentfd, const char *name, const struct stat *ours, int *budget)
{
    _cleanup_close_ int fd = rootfs_open(parentfd, name, ROOTFS_DIR, O_RDONLY, 0, NULL);
    if (fd == -ENXIO || fd == -EISDIR || fd == -ELOOP)
        return -ENOTDIR;
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (st.st_dev != ours->st_dev || st.st_ino != ours->st_ino)
        return -ESTALE;
    int r = empty_dir(fd, 0, budget);
    if (r == 0 && --*budget < 0)
        r = -E2BIG;
    if (r == 0 && unlinkat(parentfd, name, AT_REMOVEDIR) < 0)
        r = -errno;
    return r;
}

/* Temporaries are ".clrattach-<16 hex>-<16 hex>" + ".tmp" (a file) or ".tmpdir" (a directory). */
enum temp_kind { TEMP_NONE, TEMP_FILE, TEMP_DIR };

static enum temp_kind temp_kind(const char *name, const char *nonce)
{
    static const char prefix[] = ".clrattach-";
    const size_t plen = sizeof(prefix) - 1, hex = DELIVER_NONCE_LEN, at = plen + hex + 1;
    if (strncmp(name, prefix, plen) != 0 || strlen(name) < at + hex ||
        !lower_hex(name + plen, hex) || name[plen + hex] != '-' || !lower_hex(name + at, hex))
        return TEMP_NONE;
    if (nonce && strncmp(name + at, nonce, hex) != 0)
        return TEMP_NONE;
    const char *suffix = name + at + hex;
    return strcmp(suffix, ".tmp") == 0      ? TEMP_FILE
           : strcmp(suffix, ".tmpdir") == 0 ? TEMP_DIR
                                            : TEMP_NONE;
}

struct sweep {
    uid_t uid;
    const char *nonce; /* NULL: stale ones only */
    int64_t now_ns;
    int budget, removed;
};

static int64_t ns_of(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int sweep_one(int dirfd, const char *name, void *arg)
{
    struct sweep *s = arg;
    enum temp_kind kind = temp_kind(name, s->nonce);
    struct stat st;
    if (kind == TEMP_NONE || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    /* A temporary of ours is the target's user's, never anyone else's: others' are not ours to
     * judge. ctime, which no one can set back (mtime can be), dates its last change; a
     * temporary being written now is younger than any delivery takes. */
    if (st.st_uid != s->uid || !(kind == TEMP_FILE ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode)))
        return 0;
    if (!s->nonce && s->now_ns - ns_of(st.st_ctim) < (int64_t)DELIVER_STALE_AFTER_S * 1000000000)
        return 0;
    if (kind == TEMP_DIR) {
        int before = s->budget;
        (void)deliver_remove_dir(dirfd, name, &st, &s->budget);
        s->removed += before - (s->budget < 0 ? 0 : s->budget);
    } else if (s->budget > 0 && deliver_is_ours(dirfd, name, &st) &&
               unlinkat(dirfd, name, 0) == 0) {
        s->budget--;
        s->removed++;
    }
    return s->budget > 0 ? 0 : 1;
}

int deliver_sweep_at(int dirfd, uid_t uid, const char *nonce)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct sweep s = {.uid = uid,
                      .nonce = nonce,
                      .now_ns = hooks.now_ns ? hooks.now_ns : ns_of(now),
                      .budget = DELIVER_SWEEP_REMOVE_MAX};
    int r = scan_dir(dirfd, sweep_one, &s);
    return r < 0 ? r : s.removed;
}

int deliver_sweep(int rootfd, const char *dir, uid_t uid, const char *nonce, struct cla_error *e)
{
    if (!deliver_nonce_valid(nonce))
        return err_set(e, -EINVAL, "nonce '%s' is not %d lowercase hex", nonce, DELIVER_NONCE_LEN);
    _cleanup_close_ int dirfd = rootfs_open(rootfd, dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "sweep '%s'", dir);
    int r = deliver_sweep_at(dirfd, uid, nonce);
    return r < 0 ? err_setsys(e, r, "sweep '%s'", dir) : r;
}

/* Our temporary file: created on first need, filled and verified; `fd` -1 until then. */
struct temp {
    int fd;
    struct stat st;
    char name[96];
};

static int make_temp(int dirfd, const struct deliver_opts *o, const char *sha256, struct temp *t,
                     struct cla_error *e)
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
static int place(int dirfd, const struct deliver_opts *o, const char *sha256, const char *name,
                 struct temp *t, uid_t *ret_uid, struct cla_error *e)
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
static int fall_back(int dirfd, const struct deliver_opts *o, const char *sha256, char *name,
                     size_t size, struct temp *t, struct cla_error *e)
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
    r = place(dirfd, o, sha256, name, t, &uid, e);
    if (r == DELIVER_SQUATTED)
        return err_set(e, -EEXIST, "'%s%s', a fresh random name, is taken by uid %u too", o->dir,
                       name, (unsigned)uid);
    return r;
}

int deliver_profiler(int rootfd, const struct deliver_opts *o, struct deliver_result *ret,
                     struct cla_error *e)
{
    if (o->len == 0 || o->len > PROFILER_MAX_SIZE)
        return err_set(e, -EFBIG, "profiler of %zu bytes (must be 1..%d)", o->len,
                       PROFILER_MAX_SIZE);
    if (o->dir[0] != '/')
        return err_set(e, -EINVAL, "target directory '%s' is not absolute", o->dir);
    if (!deliver_nonce_valid(o->nonce))
        return err_set(e, -EINVAL, "nonce '%s' is not %d lowercase hex", o->nonce,
                       DELIVER_NONCE_LEN);

    struct deliver_result res = {0};
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_buf(o->data, o->len, digest);
    sha256_hex(digest, res.sha256);

    char name[128];
    if (deliver_final_name(o->basename, res.sha256, name, sizeof(name)) < 0)
        return err_set(e, -ENAMETOOLONG, "profiler file name");
    /* Room for a fallback name's "-<16 hex>" too: whatever name is used, its path fits. */
    if (deliver_join(o->dir, name, res.path, sizeof(res.path) - 1 - DELIVER_NONCE_LEN) < 0)
        return err_set(e, -ENAMETOOLONG, "target path too long");

    /* O_PATH is all the *at calls below need; a listing reopens it readable through this pin. */
    _cleanup_close_ int dirfd = rootfs_open(rootfd, o->dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "target directory '%s'", o->dir);
    (void)deliver_sweep_at(dirfd, o->uid, NULL);

    struct temp t = {.fd = -1};
    int r = place(dirfd, o, res.sha256, name, &t, &res.squatter_uid, e);
    if (r == DELIVER_SQUATTED) {
        res.squatted = true;
        r = fall_back(dirfd, o, res.sha256, name, sizeof(name), &t, e);
        (void)deliver_join(o->dir, name, res.path, sizeof(res.path));
    }
    /* Our temporary goes unless it became the published file (linked: its temporary name is
     * gone already; renamed: it is the final name). */
    if (t.fd >= 0) {
        if (r != 0 && t.st.st_ino)
            deliver_remove_if_ours(dirfd, t.name, &t.st);
        close(t.fd);
    }
    if (r < 0)
        return r;
    res.reused = r == 1;
    if (!res.reused) {
        res.dev = (uint64_t)t.st.st_dev;
        res.ino = (uint64_t)t.st.st_ino;
    }
    *ret = res;
    return 0;
}
