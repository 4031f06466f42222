/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A main() for fuzz targets built without libFuzzer (gcc, the normal test suite): replays every
 * file named on the command line, or every regular file in a named directory, through
 * LLVMFuzzerTestOneInput once. A crash or a failed property aborts, so the exit status tells a
 * test runner whether the saved inputs still pass. Each input is copied into a heap buffer of
 * exactly its size, as libFuzzer does, so a SAN=1 build catches reads one byte past the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Far above any seed; a file this large is a mistake in the corpus, not an input. */
#define REPLAY_FILE_MAX (64 * 1024 * 1024)

static int replay_fd(int fd, const char *name)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > REPLAY_FILE_MAX) {
        fprintf(stderr, "replay: %s: not a regular file within the cap\n", name);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    /* malloc(0) may return NULL; one spare byte keeps the pointer valid, the size stays exact. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "replay: %s: short read\n", name);
            free(buf);
            return -1;
        }
        got += (size_t)n;
    }
    /* Named before the run: after an abort, the last name on stderr is the failing input. */
    fprintf(stderr, "replay: %s (%zu bytes)\n", name, size);
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
    return 0;
}

static int replay_path(const char *path, unsigned long *count)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        int r = replay_fd(fd, path);
        close(fd);
        if (r == 0)
            (*count)++;
        return r;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int ret = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        /* Dot files are README-style notes kept next to the inputs, not inputs. */
        if (de->d_name[0] == '.')
            continue;
        int cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (cfd < 0) {
            fprintf(stderr, "replay: %s/%s: %s\n", path, de->d_name, strerror(errno));
            ret = -1;
            continue;
        }
        struct stat cst;
        if (fstat(cfd, &cst) == 0 && S_ISREG(cst.st_mode)) {
            if (replay_fd(cfd, de->d_name) == 0)
                (*count)++;
            else
                ret = -1;
        }
        close(cfd);
    }
    closedir(d);
    return ret;
}

int main(int argc, char **argv)
{
    unsigned long count = 0;
    int ret = 0;
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i], &count) < 0)
            ret = 1;
    printf("%s: replayed %lu inputs\n", argc > 0 ? argv[0] : "replay", count);
    return ret;
}
