/* SPDX-License-Identifier: Apache-2.0 */
/* A profiler directory loaded into a struct profdir from the operator's disk (a walk that takes
 * regular files, directories and links inside the tree only) or from a tar stream. */
#include "profset/profdir_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "profset/tarstream.h"
#include "target/rootfs.h"

/* Opens a link's target for reading only if it resolves beneath the tree's root (`rootfd`):
 * absolute targets and ".." that would leave it are refused, with or without openat2. */
static int open_link_target(int rootfd, const char *rel)
{
    return rootfs_open_beneath(rootfd, rel, ROOTFS_REG, O_RDONLY, NULL);
}

/* The type is checked on the fd, not on the name: the entry may have changed since it was
 * listed. Each file is capped at PROFILER_MAX_SIZE on its own; profdir_add() caps the total. */
static int read_file(int fd, const char *shown, const char *rel, uint8_t **ret, size_t *ret_len,
                     bool *ret_exec, struct cla_error *e)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "'%s/%s'", shown, rel);
    if (!S_ISREG(st.st_mode))
        return err_set(e, -EINVAL, "'%s/%s' is not a regular file", shown, rel);
    char *buf;
    size_t len;
    int r = util_read_all(fd, PROFILER_MAX_SIZE, &buf, &len);
    if (r == -E2BIG)
        return err_set(e, -E2BIG, "'%s/%s' is over %d bytes", shown, rel, PROFILER_MAX_SIZE);
    if (r < 0)
        return err_setsys(e, r, "read '%s/%s'", shown, rel);
    *ret = (uint8_t *)buf;
    *ret_len = len;
    /* Any x bit: the file is delivered 0555, else 0444 (the target's user needs no more). */
    *ret_exec = (st.st_mode & 0111) != 0;
    return 0;
}

/* The path below the root of the entry `name` of the directory `rel`, into `path`. Control
 * bytes are refused: the manifest hashed into the delivered name is one line per entry, so a
 * newline in a name could make two different trees hash alike, and the names are printed in
 * messages where a newline or escape would forge output. Returns 0, -E2BIG or -EINVAL. */
static int entry_path(const char *shown, const char *rel, const char *name,
                      char path[PROFDIR_PATH_MAX + 1], struct cla_error *e)
{
    int w = snprintf(path, PROFDIR_PATH_MAX + 1, "%s%s%s", rel, rel[0] ? "/" : "", name);
    if (w < 0 || (size_t)w >= PROFDIR_PATH_MAX + 1)
        return err_set(e, -E2BIG, "a name in '%s' is longer than %d bytes", shown,
                       PROFDIR_PATH_MAX);
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return err_set(e, -EINVAL, "a name in '%s/%s' holds the control byte 0x%02x", shown,
                           rel, (unsigned char)*p);
    return 0;
}

/* Opens for read_file() the entry `name` of `dirfd` (`path` below the root, `st` as listed),
 * which is not a directory: a regular file, or a link to one inside the tree; anything else is
 * refused. Returns the fd, or a negative errno with the message in e. */
static int open_entry(int rootfd, int dirfd, const char *shown, const char *name, const char *path,
                      const struct stat *st, struct cla_error *e)
{
    if (S_ISREG(st->st_mode)) {
        /* The entry can be swapped between fstatat and here: O_NOFOLLOW fails on a link,
         * O_NONBLOCK|O_NOCTTY keep a FIFO or tty from blocking us or becoming our terminal, and
         * read_file() checks the type again on the fd. */
        int ffd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        return ffd < 0 ? err_setsys(e, -errno, "'%s/%s'", shown, path) : ffd;
    }
    if (!S_ISLNK(st->st_mode))
        return err_set(e, -ENXIO,
                       "'%s/%s' is a %s: a profiler directory holds only regular files and "
                       "directories",
                       shown, path, util_file_type_name(st->st_mode));
    int ffd = open_link_target(rootfd, path);
    /* rootfs's type errors: -EISDIR a directory, -ENXIO a FIFO, device or socket. Anything else
     * is a link that leaves the tree or dangles. */
    if (ffd == -EISDIR || ffd == -ENXIO)
        return err_set(e, -EINVAL, "'%s/%s' is not a regular file", shown, path);
    if (ffd < 0) {
        int r = err_set(e, -EINVAL,
                        "'%s/%s' is a symbolic link that does not lead to a file inside the "
                        "directory (%s)",
                        shown, path, strerror(-ffd));
        err_hint(e, "copy the file it points to into the directory, or remove the link");
        return r;
    }
    return ffd;
}

/* Walks one directory level; `rel` is its path below the root ("" for the root). */
static int walk(int rootfd, int dirfd, const char *shown, const char *rel, unsigned depth,
                struct profdir *pd, struct cla_error *e)
{
    /* Bounds the recursion (and so our stack) as well as the tree created in the target. */
    if (depth > PROFDIR_DEPTH_MAX)
        return err_set(e, -E2BIG, "'%s/%s' is more than %d directories deep", shown, rel,
                       PROFDIR_DEPTH_MAX);
    /* A fd of our own for fdopendir(): closedir() closes it, and `dirfd` stays the caller's. */
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int r = -errno;
        if (fd >= 0)
            close(fd);
        return err_setsys(e, r, "'%s/%s'", shown, rel);
    }
    int r = 0;
    struct dirent *de;
    while (r >= 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[PROFDIR_PATH_MAX + 1];
        if ((r = entry_path(shown, rel, de->d_name, path, e)) < 0)
            break;
        struct stat st;
        /* NOFOLLOW: a link is seen as a link and resolved below, inside the tree only. */
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = err_setsys(e, -errno, "'%s/%s'", shown, path);
            break;
        }
        uint8_t *data = NULL;
        size_t len = 0;
        bool exec = false;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                r = err_setsys(e, -errno, "'%s/%s'", shown, path);
                break;
            }
            /* Added before its contents, so an empty directory is delivered too. */
            r = profdir_add(pd, path, true, true, NULL, 0, e);
            if (r >= 0)
                r = walk(rootfd, sub, shown, path, depth + 1, pd, e);
            close(sub);
            continue;
        }
        int ffd = open_entry(rootfd, dirfd, shown, de->d_name, path, &st, e);
        if (ffd < 0) {
            r = ffd;
            break;
        }
        r = read_file(ffd, shown, path, &data, &len, &exec, e);
        close(ffd);
        if (r >= 0)
            r = profdir_add(pd, path, false, exec, data, len, e);
    }
    closedir(d);
    return r;
}

/* Hands a finished tree to the caller, or frees it on failure (`r` < 0). */
static int keep_or_free(struct profdir *pd, int r, struct profdir *ret)
{
    if (r < 0) {
        profdir_free(pd);
        return r;
    }
    *ret = *pd;
    return r;
}

int profdir_read(int dirfd, const char *shown, const char *entry, struct profdir *ret,
                 struct cla_error *e)
{
    struct profdir pd = {0};
    int r = walk(dirfd, dirfd, shown, "", 0, &pd, e);
    if (r >= 0)
        r = profdir_seal(&pd, e);
    if (r >= 0 && !entry && pd.n == 1 && pd.files[0].elf)
        r = 1;
    else if (r >= 0)
        r = profdir_choose_entry(&pd, entry, shown, e);
    return keep_or_free(&pd, r, ret);
}

int profdir_read_tree(int dirfd, const char *shown, struct profdir *ret, struct cla_error *e)
{
    struct profdir pd = {0};
    int r = walk(dirfd, dirfd, shown, "", 0, &pd, e);
    if (r >= 0)
        r = profdir_seal(&pd, e);
    return keep_or_free(&pd, r, ret);
}

/* Adds every entry of the stream to `pd`. */
static int add_tar(const uint8_t *buf, size_t len, struct profdir *pd, struct cla_error *e)
{
    size_t off = 0;
    struct tar_entry en;
    int r;
    while ((r = tar_next(buf, len, &off, &en, e)) == 1) {
        uint8_t *copy = NULL;
        if (!en.is_dir) {
            /* A copy, since the profdir owns its bytes and the stream is the caller's; at least
             * one byte, because malloc(0) may return NULL and read as out of memory. */
            copy = malloc(en.size ? en.size : 1);
            if (!copy)
                return err_set(e, -ENOMEM, "out of memory");
            memcpy(copy, en.data, en.size);
        }
        if ((r = profdir_add(pd, en.path, en.is_dir, en.executable, copy, en.size, e)) < 0)
            return r;
    }
    return r;
}

int profdir_read_tar(const uint8_t *buf, size_t len, const char *entry, const char *shown,
                     struct profdir *ret, struct cla_error *e)
{
    struct profdir pd = {0};
    int r = add_tar(buf, len, &pd, e);
    if (r >= 0)
        r = profdir_seal(&pd, e);
    /* The stream reader's messages name no file of ours; the entry's already name `shown`. */
    if (r < 0)
        err_prefix(e, "%s", shown);
    else
        r = profdir_choose_entry(&pd, entry, shown, e);
    return keep_or_free(&pd, r, ret);
}
