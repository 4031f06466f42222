/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor of attach latency: what any client must do at least. Connects to a socket path it is
 * given, sends an AttachProfiler frame built beforehand (bench/run.sh writes it with
 * clrattach's own layout), reads the 24-byte reply. No discovery, no copy of the profiler, no
 * checks, no sandbox: the difference between this and clrattach is what clrattach's safety
 * costs. Usage: floor SOCKET_PATH FRAME_FILE. Prints the reply's HRESULT; exits 0 on S_OK.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: floor SOCKET_PATH FRAME_FILE\n", stderr);
        return 2;
    }
    uint8_t frame[65536];
    int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror("floor: frame");
        return 1;
    }
    ssize_t flen = read(fd, frame, sizeof(frame));
    close(fd);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t plen = strlen(argv[1]);
    if (flen < 20 || plen >= sizeof(sa.sun_path)) {
        fputs("floor: bad frame or socket path\n", stderr);
        return 1;
    }
    memcpy(sa.sun_path, argv[1], plen + 1);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("floor: connect");
        return 1;
    }
    if (write(s, frame, (size_t)flen) != flen) {
        perror("floor: write");
        return 1;
    }
    uint8_t reply[24];
    size_t got = 0;
    while (got < sizeof(reply)) {
        ssize_t n = read(s, reply + got, sizeof(reply) - got);
        if (n <= 0) {
            fputs("floor: short reply\n", stderr);
            return 1;
        }
        got += (size_t)n;
    }
    close(s);
    uint32_t hr = (uint32_t)reply[20] | (uint32_t)reply[21] << 8 | (uint32_t)reply[22] << 16 |
                  (uint32_t)reply[23] << 24;
    printf("0x%08X\n", (unsigned)hr);
    return hr == 0 ? 0 : 1;
}
