/* SPDX-License-Identifier: Apache-2.0 */
#include "userfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

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
    int r = util_read_all(fd, cap, ret_buf, ret_len);
    if (r == -E2BIG)
        return err_set(e, r, "'%s' given to %s exceeds %zu bytes", path, opt, cap);
    if (r < 0)
        return err_setsys(e, r, "read '%s' given to %s", path, opt);
    return 0;
}
