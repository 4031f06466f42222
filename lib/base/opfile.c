/* SPDX-License-Identifier: Apache-2.0 */
/* Opening an output file the operator named: its last component never followed, the open never
 * waiting, a regular file with one name checked on the fd, and emptied only then. */
#include "base/opfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static int refuse(const char *path, const char *opt, unsigned mode, struct cla_error *e)
{
    if (S_ISLNK(mode))
        err_set(e, -ELOOP,
                "%s '%s' is a symbolic link: it is not followed, since it could lead to any file "
                "clrattach may write",
                opt, path);
    else if (S_ISDIR(mode))
        err_set(e, -EISDIR, "%s '%s' is a directory, not a regular file", opt, path);
    else
        err_set(e, -ENXIO,
                "%s '%s' is a %s, not a regular file: writing to it could block clrattach or "
                "reach another process or a device",
                opt, path, util_file_type_name(mode));
    return err_hint(e,
                    "give %s the path of a regular file (or of one to create) in a directory "
                    "that only trusted users can write",
                    opt);
}

/* The open failed with `r`: for the errors that mean "not a regular file", the type of what is
 * there names the refusal (lstat: the link itself, never followed). */
static int open_error(const char *path, const char *opt, int r, struct cla_error *e)
{
    struct stat st;
    if ((r == -ELOOP || r == -ENXIO || r == -EISDIR) && lstat(path, &st) == 0 &&
        !S_ISREG(st.st_mode))
        return refuse(path, opt, st.st_mode, e);
    return err_setsys(e, r, "%s '%s'", opt, path);
}

int opfile_open_for_write(const char *path, const char *opt, int flags, mode_t mode,
                          struct cla_error *e)
{
    if (flags & ~(O_CREAT | O_TRUNC))
        return err_set(e, -EINVAL, "%s: open flags 0%o are not for an operator's file", opt,
                       (unsigned)(flags & ~(O_CREAT | O_TRUNC)));
    /* O_NOFOLLOW: a final link fails with ELOOP, even with O_CREAT on a dangling one.
     * O_NONBLOCK: a FIFO without a reader fails with ENXIO instead of waiting; one with a reader
     * opens, and is refused below. O_NOCTTY: a terminal cannot become ours. No O_TRUNC yet: it
     * would act on whatever is there before it is checked. */
    _cleanup_close_ int fd = open(
        path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (flags & O_CREAT), mode);
    if (fd < 0)
        return open_error(path, opt, -errno, e);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "%s '%s': fstat", opt, path);
    if (!S_ISREG(st.st_mode))
        return refuse(path, opt, st.st_mode, e);
    /* A hard link is the other way a name in a shared directory can stand for a file
     * elsewhere (where fs.protected_hardlinks is off): a file with another name is not ours to
     * empty. */
    if (st.st_nlink != 1) {
        err_set(e, -EMLINK,
                "%s '%s' is a file with %ju names (hard links): it is not written, since another "
                "name could be a file clrattach must not touch",
                opt, path, (uintmax_t)st.st_nlink);
        return err_hint(e, "give %s the path of a file of its own, or of one to create", opt);
    }
    /* A regular file: writes to it never wait anyway; blocking mode is what callers expect. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return err_setsys(e, -errno, "%s '%s': fcntl", opt, path);
    if ((flags & O_TRUNC) && ftruncate(fd, 0) < 0)
        return err_setsys(e, -errno, "%s '%s': truncate", opt, path);
    return util_take_fd(&fd);
}
