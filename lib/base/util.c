/* SPDX-License-Identifier: Apache-2.0 */
/* The small helpers of util.h that are not inline: decimal parsing, the monotonic clock, whole
 * reads (capped) and writes of an fd, file type names. */
#include "base/util.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

int util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
    if (!s || len == 0 || len > 20)
        return -EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    if (v > max)
        return -ERANGE;
    *ret = v;
    return 0;
}

int64_t util_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int util_read_all(int fd, size_t cap, char **ret_buf, size_t *ret_len)
{
    return util_read_until(fd, cap, NULL, NULL, ret_buf, ret_len);
}

int util_read_until(int fd, size_t cap, bool (*done)(const char *buf, size_t len, void *arg),
                    void *arg, char **ret_buf, size_t *ret_len)
{
    /* `alloc` never exceeds cap + 1 data bytes: reading one byte past the cap proves the file
     * is too large without reading the rest of it. */
    size_t alloc = 0, len = 0;
    char *buf = NULL;
    for (;;) {
        if (len == alloc) {
            /* 4 KiB first (most files are smaller), then 64 KiB at once: a /proc maps of a
             * runtime is 15-30 KiB, and each doubling step would be a fresh mapping (the static
             * build's allocator serves these sizes with mmap), a copy and an unmap. */
            size_t next = alloc < 2048 ? 4096 : alloc < 65536 ? 65536 : alloc * 2;
            if (next > cap + 1)
                next = cap + 1;
            char *nb = realloc(buf, next + 1);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
            alloc = next;
        }
        ssize_t n = read(fd, buf + len, alloc - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int r = -errno;
            free(buf);
            return r;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > cap) {
            free(buf);
            return -E2BIG;
        }
        if (done && done(buf, len, arg))
            break;
    }
    if (!buf && !(buf = malloc(1)))
        return -ENOMEM;
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

int util_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

const char *util_file_type_name(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFSOCK: return "socket";
    case S_IFLNK: return "symbolic link";
    case S_IFREG: return "regular file";
    case S_IFIFO: return "FIFO";
    case S_IFDIR: return "directory";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    default: return "file of unknown type";
    }
}
