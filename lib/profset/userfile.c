/* SPDX-License-Identifier: Apache-2.0 */
/* Opening and reading the operator's input files: only regular files, without blocking, each
 * read capped. */
#include "profset/userfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

int userfile_open(int dirfd, const char *name, const char *shown, const char *opt,
                  struct cla_error *e)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, without any
     * deadline. O_NOCTTY: a tty opened by a session leader without one would become its
     * controlling terminal. Neither flag changes how a regular file reads. */
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return err_setsys(e, -errno, "'%s' given to %s", shown, opt);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat '%s' given to %s", shown, opt);
    if (!S_ISREG(st.st_mode)) {
        err_set(e, S_ISDIR(st.st_mode) ? -EISDIR : -ENXIO,
                "'%s' given to %s is a %s, not a regular file", shown, opt,
                util_file_type_name(st.st_mode));
        return err_hint(e, "pass the file itself");
    }
    return util_take_fd(&fd);
}

int userfile_read(const char *path, size_t cap, const char *opt, char **ret_buf, size_t *ret_len,
                  struct cla_error *e)
{
    _cleanup_close_ int fd = userfile_open(AT_FDCWD, path, path, opt, e);
    if (fd < 0)
        return fd;
    int r = userfile_read_fd(fd, cap, ret_buf, ret_len);
    if (r == -E2BIG)
        return err_set(e, r, "'%s' given to %s exceeds %zu bytes", path, opt, cap);
    if (r < 0)
        return err_setsys(e, r, "read '%s' given to %s", path, opt);
    return 0;
}

int userfile_read_fd(int fd, size_t cap, char **ret_buf, size_t *ret_len)
{
    /* One block of the size fstat() gives, and one byte more to see a file that grew, instead
     * of a buffer doubling from 4 KiB (each step a fresh mmap for a large block). The size is
     * only a hint: a file that goes on past it is read on by util_read_all(), the cap counted
     * over both parts. */
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size >= cap)
        return util_read_all(fd, cap, ret_buf, ret_len);
    size_t want = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(want + 1);
    if (!buf)
        return -ENOMEM;
    ssize_t n = 1;
    while (len < want && n != 0) {
        n = read(fd, buf + len, want - len);
        if (n < 0 && errno != EINTR) {
            int r = -errno;
            free(buf);
            return r;
        }
        len += n > 0 ? (size_t)n : 0;
    }
    if (len == want) {
        char *rest = NULL;
        size_t more = 0;
        int r = util_read_all(fd, cap - len, &rest, &more);
        char *nb = r == 0 ? realloc(buf, len + more + 1) : NULL;
        if (!nb) {
            free(rest);
            free(buf);
            return r < 0 ? r : -ENOMEM;
        }
        buf = nb;
        memcpy(buf + len, rest, more);
        len += more;
        free(rest);
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}
