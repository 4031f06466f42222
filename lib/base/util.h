/* SPDX-License-Identifier: Apache-2.0 */
/* What every layer uses: scope-bound cleanup and hand-off of fds and pointers, decimal parsing,
 * a monotonic clock, whole reads and writes of an fd. */
#ifndef CLRATTACH_UTIL_H
#define CLRATTACH_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Scope-bound cleanup. Each helper keeps errno, so a failing path can still report it.
 * util_closep() leaves -1 behind: called by hand on a struct's fd (a close function, an error
 * path), a second call or a later cleanup then finds nothing to close instead of closing a
 * number the process may already have reused for another file. */
static inline void util_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
        *fd = -1;
    }
}

static inline void util_freep(void *p)
{
    int saved = errno;
    free(*(void **)p);
    errno = saved;
}

/* `_cleanup_(f)` runs f(&var) when var leaves scope; f takes a pointer to the variable's type
 * and must accept a variable that was never filled (each module's *p helper does). */
#define _cleanup_(f)    __attribute__((cleanup(f)))
#define _cleanup_close_ _cleanup_(util_closep)
#define _cleanup_free_  _cleanup_(util_freep)

/* Hands an owned fd to the caller: returns it and leaves -1 behind. */
static inline int util_take_fd(int *fd)
{
    int r = *fd;
    *fd = -1;
    return r;
}

/* Hands an owned pointer to the caller: evaluates to it, with its own type, and leaves NULL
 * behind (systemd's TAKE_PTR). A macro, so that the result keeps the pointer's type and a
 * non-pointer argument fails to compile instead of being read through a `void **`. `pp` is
 * evaluated once. */
#define util_take_ptr(pp)                                                                          \
    ({                                                                                             \
        __typeof__(pp) util_take_pp_ = (pp);                                                       \
        __typeof__(*util_take_pp_) util_take_r_ = *util_take_pp_;                                  \
        *util_take_pp_ = NULL;                                                                     \
        util_take_r_;                                                                              \
    })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Parses a whole decimal string (no sign, no spaces, no trailing bytes) into *ret.
 * Returns 0, -EINVAL for a malformed string or -ERANGE above `max`. */
int util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret);

/* Monotonic milliseconds, for deadlines. */
int64_t util_now_ms(void);

/* Reads all of `fd` (from its current offset) into a NUL-terminated heap buffer of at most
 * `cap` bytes. Returns 0 and gives `*ret_buf`/`*ret_len`, -E2BIG when the file is larger than
 * `cap`, or another negative errno. */
int util_read_all(int fd, size_t cap, char **ret_buf, size_t *ret_len);

/* The same, but stops early once `done` (when not NULL) says, after a read, that the `len`
 * bytes so far are all there is to read: for a pipe whose writer may never close it. */
int util_read_until(int fd, size_t cap, bool (*done)(const char *buf, size_t len, void *arg),
                    void *arg, char **ret_buf, size_t *ret_len);

/* The kind of file an st_mode holds, for messages: "FIFO", "character device", "socket",
 * "symbolic link", "directory", "regular file", "block device". Pure; every name takes "a". */
const char *util_file_type_name(unsigned mode);

/* Writes all of buf, retrying on EINTR and short writes. Returns 0 or -errno. */
int util_write_all(int fd, const void *buf, size_t len);

#endif
