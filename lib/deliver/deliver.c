/* SPDX-License-Identifier: Apache-2.0 */
/* The profiler file delivered under its content-addressed name: the names (final, temporary,
 * fallback), the sweep of temporaries a killed delivery left, and deliver_profiler, which runs the
 * steps of deliver_publish.c in order. */
#include "deliver/deliver_internal.h"

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

static struct deliver_test_hooks hooks;

void deliver_set_test_hooks(const struct deliver_test_hooks *h)
{
    struct deliver_test_hooks none = {0};
    hooks = h ? *h : none;
}

const struct deliver_test_hooks *deliver_hooks(void)
{
    return &hooks;
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

    struct deliver_temp t = {.fd = -1};
    int r = deliver_put(dirfd, o, res.sha256, name, &t, &res.squatter_uid, e);
    if (r == DELIVER_SQUATTED) {
        res.squatted = true;
        r = deliver_put_fallback(dirfd, o, res.sha256, name, sizeof(name), &t, e);
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
