/* SPDX-License-Identifier: Apache-2.0 */
/* Delivering a profiler directory: a private temporary tree filled and made read-only, renamed
 * to its content-addressed name or an identical tree there reused, with a fallback name when
 * another uid holds it; and undoing a delivery. */
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

/* Is the tree at `topfd` exactly o->pd? 0 yes; -EEXIST (with the first difference) otherwise. */
static int verify_tree(int topfd, const struct deliver_dir_opts *o, const char *shown,
                       struct cla_error *e)
{
    const struct profdir *pd = o->pd;
    struct stat st;
    if (fstat(topfd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s'", shown);
    if (!deliver_trusted(&st, o->uid))
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
        if (!deliver_trusted(&st, o->uid))
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

/* Looks at what holds the final name: 1 an identical tree (reuse), 0 nothing, DELIVER_SQUATTED
 * (the caller falls back), < 0 refused. */
static int probe_existing(int dirfd, const char *name, const struct deliver_dir_opts *o,
                          const char *shown, uid_t *ret_uid, struct cla_error *e)
{
    _cleanup_close_ int fd = -1;
    struct stat st;
    int r = deliver_probe_open(dirfd, name, true, o->uid, &fd, &st, ret_uid, e);
    if (r != 1)
        return r;
    if (fd == -ENOTDIR || fd == -ELOOP)
        r = err_set(e, -EEXIST, "'%s' exists and is not a directory", shown);
    else if (fd < 0)
        r = err_prefix(e, "existing '%s'", shown);
    else
        r = verify_tree(fd, o, shown, e);
    return r < 0 ? deliver_refused(dirfd, o->uid, r, &st, ret_uid, e) : 1;
}

/* The delivered directory's name: "<entry stem>-<first 16 hex of the digest>", [A-Za-z0-9._-]
 * only: the same sanitised stem as a single file's name, without its extension. Returns 0 or
 * -ENAMETOOLONG. */
static int dir_name(const struct profdir *pd, char *out, size_t size)
{
    const char *entry = pd->files[pd->entry].path;
    const char *slash = strrchr(entry, '/');
    int r = deliver_final_name(slash ? slash + 1 : entry, pd->digest, out, size);
    if (r < 0)
        return r;
    /* deliver_final_name() ends its result in an extension, ".so" or ".dll". */
    *strrchr(out, '.') = '\0';
    return 0;
}

/* Our temporary tree: made on first need, filled and read-only; `fd` -1 until it is proven
 * ours (a fresh, empty directory of the target's uid). */
struct temp_tree {
    int fd;
    struct stat top;
    char name[96];
    char shown[TARGET_PATH_MAX];
};

static int make_tree(int dirfd, const struct deliver_dir_opts *o, struct temp_tree *t,
                     struct cla_error *e)
{
    int r = deliver_temp_name(o->pd->digest, o->nonce, ".tmpdir", t->name, sizeof(t->name));
    if (r < 0)
        return err_setsys(e, r, "temporary name in '%s'", o->dir);
    if (deliver_join(o->dir, t->name, t->shown, sizeof(t->shown)) < 0)
        return err_set(e, -ENAMETOOLONG, "target path too long");
    /* 0700 while it fills: the target's user owns it either way, but no one else reads a half
     * written profiler. */
    if (mkdirat(dirfd, t->name, 0700) < 0)
        return err_setsys(e, -errno, "mkdir '%s'", t->shown);
    _cleanup_close_ int fd = rootfs_open(dirfd, t->name, ROOTFS_DIR, O_RDONLY, 0, e);
    if (fd < 0 || fstat(fd, &t->top) < 0) {
        (void)unlinkat(dirfd, t->name, AT_REMOVEDIR);
        return fd < 0 ? err_prefix(e, "'%s'", t->shown) : err_setsys(e, -errno, "stat");
    }
    if (t->top.st_uid != o->uid || count_entries(fd, 1) != 0) {
        err_set(e, -EIO, "the target replaced '%s' while we created it", t->shown);
        return err_hint(e,
                        "a process in the target renames files in '%s': deliver elsewhere "
                        "with --target-dir",
                        o->dir);
    }
    t->fd = util_take_fd(&fd);
    return fill_tree(t->fd, o, t->shown, e);
}

/* Puts o->pd under `name` (`shown` in messages): reuses an identical tree there (1), or renames
 * our temporary tree, made on first need, to it (0); DELIVER_SQUATTED when another uid holds it; <
 * 0 refused. */
static int place(int dirfd, const struct deliver_dir_opts *o, const char *name, const char *shown,
                 struct temp_tree *t, uid_t *ret_uid, struct cla_error *e)
{
    int r = probe_existing(dirfd, name, o, shown, ret_uid, e);
    if (r != 0)
        return r;
    if (t->fd < 0 && (r = make_tree(dirfd, o, t, e)) < 0)
        return r;
    if (!deliver_is_ours(dirfd, t->name, &t->top))
        return err_set(e, -EIO, "the target replaced '%s' while we filled it", t->shown);
    if (renameat2(dirfd, t->name, dirfd, name, RENAME_NOREPLACE) == 0) {
        if (!deliver_is_ours(dirfd, name, &t->top))
            return err_set(e, -EIO, "'%s' is not the directory we wrote after the rename", shown);
        return 0;
    }
    if (errno != EEXIST)
        return err_setsys(e, -errno, "rename '%s' to '%s'", t->shown, name);
    /* Published meanwhile, by another attach or not: judged as if it had been there. */
    r = probe_existing(dirfd, name, o, shown, ret_uid, e);
    if (r == 0)
        return err_set(e, -EAGAIN, "'%s' appeared and vanished during delivery", shown);
    return r;
}

/* An earlier fallback of ours is reused on the same proof as the usual name. */
static int same_tree(int dirfd, const char *name, void *arg)
{
    _cleanup_close_ int fd = rootfs_open(dirfd, name, ROOTFS_DIR, O_RDONLY, 0, NULL);
    return fd >= 0 && verify_tree(fd, arg, name, NULL) == 0;
}

/* The usual name `name` is another uid's: an earlier fallback of ours is reused (1), or our
 * temporary tree is renamed to a fresh one (0); `name` and `ret_path` become the ones used. */
static int fall_back(int dirfd, const struct deliver_dir_opts *o, char *name, size_t size,
                     struct temp_tree *t, char *ret_path, size_t path_size, struct cla_error *e)
{
    char stem[128];
    snprintf(stem, sizeof(stem), "%s", name);
    int r =
        deliver_find_fallback(dirfd, stem, "", S_IFDIR, o->uid, same_tree, (void *)o, name, size);
    if (r != 1 && (r = deliver_fallback_name(stem, "", name, size)) < 0)
        return err_setsys(e, r, "fallback name in '%s'", o->dir);
    if (deliver_join(o->dir, name, ret_path, path_size) < 0)
        return err_set(e, -ENAMETOOLONG, "target path too long");
    if (r == 1)
        return 1;
    uid_t uid;
    r = place(dirfd, o, name, ret_path, t, &uid, e);
    if (r == DELIVER_SQUATTED)
        return err_set(e, -EEXIST, "'%s', a fresh random name, is taken by uid %u too", ret_path,
                       (unsigned)uid);
    return r;
}

int deliver_dir(int rootfd, const struct deliver_dir_opts *o, struct deliver_dir_result *ret,
                struct cla_error *e)
{
    const struct profdir *pd = o->pd;
    struct deliver_dir_result res = {0};
    char name[128];
    if (o->dir[0] != '/')
        return err_set(e, -EINVAL, "target directory '%s' is not absolute", o->dir);
    if (!deliver_nonce_valid(o->nonce))
        return err_set(e, -EINVAL, "nonce '%s' is not %d lowercase hex", o->nonce,
                       DELIVER_NONCE_LEN);
    if (dir_name(pd, name, sizeof(name)) < 0)
        return err_set(e, -ENAMETOOLONG, "profiler directory name");
    /* Room for a fallback name's "-<16 hex>" too: whatever name is used, its paths fit. */
    const size_t room = sizeof(res.entry) - 1 - DELIVER_NONCE_LEN;
    if (deliver_join(o->dir, name, res.path, room) < 0 ||
        strlen(res.path) + 1 + strlen(pd->files[pd->entry].path) >= room)
        return err_set(e, -ENAMETOOLONG, "target path too long");

    _cleanup_close_ int dirfd = rootfs_open(rootfd, o->dir, ROOTFS_DIR, O_PATH, 0, e);
    if (dirfd < 0)
        return err_prefix(e, "target directory '%s'", o->dir);
    (void)deliver_sweep_at(dirfd, o->uid, NULL);

    struct temp_tree t = {.fd = -1};
    int r = place(dirfd, o, name, res.path, &t, &res.squatter_uid, e);
    if (r == DELIVER_SQUATTED) {
        res.squatted = true;
        r = fall_back(dirfd, o, name, sizeof(name), &t, res.path, sizeof(res.path), e);
    }
    /* Our temporary tree goes unless it became the published one. */
    if (t.fd >= 0) {
        if (r != 0) {
            int budget = PROFDIR_FILES_MAX + 1;
            (void)deliver_remove_dir(dirfd, t.name, &t.top, &budget);
        }
        close(t.fd);
    }
    if (r < 0)
        return r;
    snprintf(res.entry, sizeof(res.entry), "%s/%s", res.path, pd->files[pd->entry].path);
    res.reused = r == 1;
    if (!res.reused) {
        res.dev = (uint64_t)t.top.st_dev;
        res.ino = (uint64_t)t.top.st_ino;
    }
    *ret = res;
    return 0;
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
    int budget = PROFDIR_FILES_MAX + 1;
    int r = deliver_remove_dir(dirfd, name, &ours, &budget);
    /* A single file: the typed open refused it as not a directory. */
    if (r == -ENOTDIR && unlinkat(dirfd, name, 0) < 0)
        r = -errno;
    else if (r == -ENOTDIR)
        r = 0;
    return r < 0 ? err_setsys(e, r, "remove '%s'", path) : 0;
}
