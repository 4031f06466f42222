/* SPDX-License-Identifier: Apache-2.0 */
#include "deliver/deliver_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deliver/deliver.h"
#include "target/rootfs.h"
#include "base/util.h"

/* The parent part of a relative path ("lib/x.so" -> "lib", "x.so" -> "/": the top itself). */
static void parent_of(const char *rel, char *out, size_t size, const char **ret_base)
{
    const char *slash = strrchr(rel, '/');
    if (!slash) {
        snprintf(out, size, "/");
        *ret_base = rel;
        return;
    }
    snprintf(out, size, "%.*s", (int)(slash - rel), rel);
    *ret_base = slash + 1;
}

/* Entries directly inside the directory at `fd` (an O_RDONLY fd: an O_PATH one reads as empty),
 * read through a duplicate; -errno on failure; stops counting past `cap`. */
static int count_entries(int fd, int cap)
{
    int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int r = -errno;
        close(dfd);
        return r;
    }
    int n = 0;
    struct dirent *de;
    errno = 0;
    while (n <= cap && (de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    int r = errno ? -errno : n;
    closedir(d);
    return r;
}

static size_t children_of(const struct profdir *pd, const char *dir)
{
    size_t n = 0, dlen = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
    for (size_t i = 0; i < pd->n; i++) {
        const char *p = pd->files[i].path;
        if (dlen && (strncmp(p, dir, dlen) != 0 || p[dlen] != '/'))
            continue;
        if (!strchr(p + (dlen ? dlen + 1 : 0), '/'))
            n++;
    }
    return n;
}

/* Owned by the target's user or root, writable by no one else: what reuse may trust. */
static bool trusted(const struct stat *st, uid_t uid)
{
    return (st->st_uid == uid || st->st_uid == 0) && !(st->st_mode & 0022);
}

/* Is the tree at `topfd` exactly o->pd? 0 yes; -EEXIST (with the first difference) otherwise. */
static int verify_tree(int topfd, const struct deliver_dir_opts *o, const char *shown,
                       struct cla_error *e)
{
    const struct profdir *pd = o->pd;
    struct stat st;
    if (fstat(topfd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s'", shown);
    if (!trusted(&st, o->uid))
        return err_set(e, -EEXIST,
                       "'%s' exists, owned by uid %u with mode 0%o: not trusted for "
                       "reuse",
                       shown, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    int n = count_entries(topfd, PROFDIR_FILES_MAX);
    if (n < 0)
        return err_setsys(e, n, "list '%s'", shown);
    if ((size_t)n != children_of(pd, "/"))
        return err_set(e, -EEXIST, "'%s' exists with other contents (%d entries at its top)", shown,
                       n);
    for (size_t i = 0; i < pd->n; i++) {
        const struct profdir_file *f = &pd->files[i];
        struct cla_error sub = {0};
        _cleanup_close_ int fd =
            rootfs_open(topfd, f->path, f->is_dir ? ROOTFS_DIR : ROOTFS_REG, O_RDONLY, 0, &sub);
        if (fd < 0)
            return err_set(e, -EEXIST, "'%s' exists with other contents: '%s': %s", shown, f->path,
                           sub.msg);
        if (fstat(fd, &st) < 0)
            return err_setsys(e, -errno, "stat '%s/%s'", shown, f->path);
        if (!trusted(&st, o->uid))
            return err_set(e, -EEXIST,
                           "'%s/%s' is owned by uid %u with mode 0%o: not trusted "
                           "for reuse",
                           shown, f->path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        if (f->is_dir) {
            n = count_entries(fd, PROFDIR_FILES_MAX);
            if (n < 0 || (size_t)n != children_of(pd, f->path))
                return err_set(e, -EEXIST, "'%s/%s' holds other entries", shown, f->path);
            continue;
        }
        char have[65];
        int64_t size = deliver_hash_fd(fd, have);
        if (size < 0)
            return err_setsys(e, (int)size, "read back '%s/%s'", shown, f->path);
        if ((size_t)size != f->len || strcmp(have, f->sha256) != 0 ||
            ((st.st_mode & 0111) != 0) != f->executable)
            return err_set(e, -EEXIST, "'%s/%s' differs (sha256 %.16s…)", shown, f->path, have);
    }
    return 0;
}

/* Sets the mode of the directory `rel` below `topfd` ("/" = the top) through an fd of it. */
static int chmod_dir(int topfd, const char *rel, mode_t mode)
{
    _cleanup_close_ int fd = rootfs_open(topfd, rel, ROOTFS_DIR, O_RDONLY, 0, NULL);
    if (fd < 0)
        return fd;
    return fchmod(fd, mode) < 0 ? -errno : 0;
}

/*
 * Removes the tree `name` in `parentfd` that this run created as o->pd, pinned as `top`:
 * directories made writable again, then entries removed deepest first, each relative to a
 * directory fd of ours. Best effort; the top is removed only while it is still our inode.
 */
static void remove_tree(int parentfd, const char *name, const struct stat *top,
                        const struct profdir *pd)
{
    if (!deliver_is_ours(parentfd, name, top))
        return;
    _cleanup_close_ int topfd = rootfs_open(parentfd, name, ROOTFS_DIR, O_PATH, 0, NULL);
    if (topfd < 0)
        return;
    (void)chmod_dir(topfd, "/", 0700);
    for (size_t i = 0; i < pd->n; i++)
        if (pd->files[i].is_dir)
            (void)chmod_dir(topfd, pd->files[i].path, 0700);
    for (size_t i = pd->n; i-- > 0;) {
        char parent[PROFDIR_PATH_MAX + 1];
        const char *base;
        parent_of(pd->files[i].path, parent, sizeof(parent), &base);
        _cleanup_close_ int pfd = rootfs_open(topfd, parent, ROOTFS_DIR, O_PATH, 0, NULL);
        if (pfd >= 0)
            (void)unlinkat(pfd, base, pd->files[i].is_dir ? AT_REMOVEDIR : 0);
    }
    (void)unlinkat(parentfd, name, AT_REMOVEDIR);
}

/* Creates every directory and file of the tree below `topfd` (our new, empty, private top). */
static int fill_tree(int topfd, const struct deliver_dir_opts *o, const char *shown,
                     struct cla_error *e)
{
    const struct profdir *pd = o->pd;
    for (size_t i = 0; i < pd->n; i++) {
        const struct profdir_file *f = &pd->files[i];
        char parent[PROFDIR_PATH_MAX + 1];
        const char *base;
        parent_of(f->path, parent, sizeof(parent), &base);
        _cleanup_close_ int pfd = rootfs_open(topfd, parent, ROOTFS_DIR, O_PATH, 0, e);
        if (pfd < 0)
            return err_prefix(e, "'%s'", shown);
        if (f->is_dir) {
            if (mkdirat(pfd, base, 0700) < 0)
                return err_setsys(e, -errno, "mkdir '%s/%s'", shown, f->path);
            continue;
        }
        _cleanup_close_ int fd = rootfs_open(pfd, base, ROOTFS_REG, O_RDWR | O_CREAT | O_EXCL,
                                             f->executable ? 0555 : 0444, e);
        if (fd < 0)
            return err_prefix(e, "create '%s/%s'", shown, f->path);
        struct stat st;
        if (fstat(fd, &st) < 0)
            return err_setsys(e, -errno, "stat '%s/%s'", shown, f->path);
        char where[TARGET_PATH_MAX + 1];
        snprintf(where, sizeof(where), "%.*s/", TARGET_PATH_MAX - 1, shown);
        struct deliver_opts fo = {.data = f->data, .len = f->len, .dir = where, .uid = o->uid};
        int r = deliver_fill(fd, &st, &fo, f->path, e);
        if (r < 0)
            return r;
    }
    /* Read-only once full, deepest first: nobody, the target included, should add a library the
     * profiler's loader would find first. */
    for (size_t i = pd->n; i-- > 0;)
        if (pd->files[i].is_dir && chmod_dir(topfd, pd->files[i].path, 0555) < 0)
            return err_setsys(e, -errno, "chmod '%s/%s'", shown, pd->files[i].path);
    int r = chmod_dir(topfd, "/", 0555);
    return r < 0 ? err_setsys(e, r, "chmod '%s'", shown) : 0;
}

/* Looks for the tree under its final name: 1 identical (reuse), 0 absent, < 0 refused. */
static int probe_existing(int dirfd, const char *name, const struct deliver_dir_opts *o,
                          const char *shown, struct cla_error *e)
{
    struct cla_error sub = {0};
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_DIR, O_RDONLY, 0, &sub);
    if (fd == -ENOENT)
        return 0;
    int r = fd;
    if (fd == -ENOTDIR || fd == -ELOOP)
        r = err_set(e, -EEXIST, "'%s' exists and is not a directory", shown);
    else if (fd < 0)
        r = err_set(e, fd, "existing '%s': %s", shown, sub.msg);
    else
        r = verify_tree(fd, o, shown, e);
    if (r < 0) {
        err_hint(e, "clrattach never overwrites files a process may have mapped; remove it if no "
                    "process uses it, or deliver elsewhere with --target-dir");
        return r;
    }
    return 1;
}

/* The delivered directory's name: "<entry stem>-<first 16 hex of the digest>", [A-Za-z0-9._-]
 * only: the same sanitised stem as a single file's name, without its ".so". Returns 0 or
 * -ENAMETOOLONG. */
static int dir_name(const struct profdir *pd, char *out, size_t size)
{
    const char *entry = pd->files[pd->entry].path;
    const char *slash = strrchr(entry, '/');
    int r = deliver_final_name(slash ? slash + 1 : entry, pd->digest, out, size);
    if (r < 0)
        return r;
    /* deliver_final_name() always ends its result in ".so". */
    out[strlen(out) - 3] = '\0';
    return 0;
}

int deliver_dir(int rootfd, const struct deliver_dir_opts *o, struct deliver_dir_result *ret,
                struct cla_error *e)
{
    const struct profdir *pd = o->pd;
    struct deliver_dir_result res = {0};
    char name[128];
    if (o->dir[0] != '/')
        return err_set(e, -EINVAL, "target directory '%s' is not absolute", o->dir);
    if (dir_name(pd, name, sizeof(name)) < 0)
        return err_set(e, -ENAMETOOLONG, "profiler directory name");
    size_t dlen = strlen(o->dir);
    const char *sep = o->dir[dlen - 1] == '/' ? "" : "/";
    int w = snprintf(res.path, sizeof(res.path), "%s%s%s", o->dir, sep, name);
    int w2 = snprintf(res.entry, sizeof(res.entry), "%s/%s", res.path, pd->files[pd->entry].path);
    if (w < 0 || (size_t)w >= sizeof(res.path) || w2 < 0 || (size_t)w2 >= sizeof(res.entry))
        return err_set(e, -ENAMETOOLONG, "target path too long");

    _cleanup_close_ int dirfd = rootfs_open(rootfd, o->dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "target directory '%s'", o->dir);
    int r = probe_existing(dirfd, name, o, res.path, e);
    if (r != 0) {
        res.reused = r == 1;
        if (r == 1)
            *ret = res;
        return r < 0 ? r : 0;
    }

    uint8_t rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return err_setsys(e, -errno, "getrandom");
    char tmp[96];
    snprintf(tmp, sizeof(tmp), ".clrattach-%.16s-%02x%02x%02x%02x%02x%02x%02x%02x.tmpdir",
             pd->digest, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    char shown[TARGET_PATH_MAX];
    snprintf(shown, sizeof(shown), "%s%s%s", o->dir, sep, tmp);
    /* 0700 while it fills: the target's user owns it either way, but no one else reads a half
     * written profiler. */
    if (mkdirat(dirfd, tmp, 0700) < 0)
        return err_setsys(e, -errno, "mkdir '%s'", shown);
    struct stat top;
    _cleanup_close_ int topfd = rootfs_open(dirfd, tmp, ROOTFS_DIR, O_RDONLY, 0, e);
    if (topfd < 0 || fstat(topfd, &top) < 0) {
        (void)unlinkat(dirfd, tmp, AT_REMOVEDIR);
        return topfd < 0 ? err_prefix(e, "'%s'", shown) : err_setsys(e, -errno, "stat");
    }
    if (top.st_uid != o->uid || count_entries(topfd, 1) != 0) {
        err_set(e, -EIO, "the target replaced '%s' while we created it", shown);
        return err_hint(e,
                        "a process in the target renames files in '%s': deliver elsewhere "
                        "with --target-dir",
                        o->dir);
    }
    r = fill_tree(topfd, o, shown, e);
    if (r == 0 && !deliver_is_ours(dirfd, tmp, &top))
        r = err_set(e, -EIO, "the target replaced '%s' while we filled it", shown);
    if (r == 0 && renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) < 0) {
        r = -errno;
        if (r != -EEXIST)
            err_setsys(e, r, "rename '%s' to '%s'", shown, name);
    }
    if (r == -EEXIST) {
        /* Published meanwhile by another attach: reuse it if it is the same tree. */
        remove_tree(dirfd, tmp, &top, pd);
        r = probe_existing(dirfd, name, o, res.path, e);
        if (r == 0)
            return err_set(e, -EAGAIN, "'%s' appeared and vanished during delivery", res.path);
        if (r < 0)
            return r;
        res.reused = true;
        *ret = res;
        return 0;
    }
    if (r < 0) {
        remove_tree(dirfd, tmp, &top, pd);
        return r;
    }
    if (!deliver_is_ours(dirfd, name, &top))
        return err_set(e, -EIO, "'%s' is not the directory we wrote after the rename", res.path);
    res.dev = (uint64_t)top.st_dev;
    res.ino = (uint64_t)top.st_ino;
    *ret = res;
    return 0;
}

/* Empties the directory at `dfd` (ours) depth first; `budget` bounds the entries visited. */
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

int deliver_undo(int rootfd, const char *path, uint64_t dev, uint64_t ino, struct cla_error *e)
{
    const char *slash = strrchr(path, '/');
    if (!slash || !slash[1] || dev == 0 || ino == 0)
        return err_set(e, -EINVAL, "nothing of this run to remove at '%s'", path);
    char dir[TARGET_PATH_MAX];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + 1, path);
    const char *name = slash + 1;
    _cleanup_close_ int dirfd = rootfs_open(rootfd, dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "remove '%s'", path);
    struct stat ours = {.st_dev = (dev_t)dev, .st_ino = (ino_t)ino};
    if (!deliver_is_ours(dirfd, name, &ours))
        return err_set(e, -ESTALE, "'%s' no longer holds what this run delivered; left alone",
                       path);
    struct cla_error sub = {0};
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_DIR, O_RDONLY, 0, &sub);
    if (fd == -ENOTDIR || fd == -ENXIO || fd == -ELOOP) {
        /* A single file: not a directory, so the typed open refused it. */
        if (unlinkat(dirfd, name, 0) < 0)
            return err_setsys(e, -errno, "remove '%s'", path);
        return 0;
    }
    if (fd < 0)
        return err_set(e, fd, "remove '%s': %s", path, sub.msg);
    int budget = PROFDIR_FILES_MAX;
    int r = empty_dir(fd, 0, &budget);
    if (r == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
        r = -errno;
    return r < 0 ? err_setsys(e, r, "remove '%s'", path) : 0;
}
