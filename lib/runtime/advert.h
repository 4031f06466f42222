/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The advertisement a runtime sends first on each connection it makes to a diagnostic port in
 * connect mode (DOTNET_DiagnosticPorts=PATH, the default tags "connect,suspend"): 34 bytes, no
 * reply expected, then one ordinary IPC command on the same connection (dotnet/runtime
 * src/native/eventpipe/ds-protocol.c, ds_icp_advertise_v1_send):
 *
 *   0   8  "ADVR_V1" and its NUL
 *   8  16  the runtime instance cookie: a random GUID drawn once per process at server init,
 *          the same value ProcessInfo returns as runtimeCookie
 *  24   8  u64 little-endian pid, as the runtime sees itself (its own pid namespace)
 *  32   2  u16 reserved, written as 0
 *
 * Pure: decoded on a buffer only, unit-tested and fuzzed. Whoever connects to the listening
 * socket is untrusted until the whole exchange checks out: anything the app's container runs
 * can connect, and send these bytes or any others.
 */
#ifndef CLRATTACH_ADVERT_H
#define CLRATTACH_ADVERT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "runtime/ipc.h"

#define ADVERT_SIZE       34
#define ADVERT_MAGIC      "ADVR_V1" /* followed by its NUL on the wire */
#define ADVERT_MAGIC_SIZE 8

struct advert {
    struct ipc_guid cookie; /* the runtime instance: what a listener keys its work on */
    uint64_t pid;           /* the runtime's own (namespace-local) pid, for display only */
};

/* Decodes exactly ADVERT_SIZE bytes: the magic with its NUL, a cookie that is not all zero (the
 * runtime draws it at random; zero is what an unset cookie or a forged one looks like), a pid in
 * 1..ADVERT_PID_MAX (the kernel's pid_max ceiling) and the reserved field 0 (the runtime writes
 * 0; anything else is a newer protocol or not a runtime). A shorter or longer buffer is
 * refused: the runtime writes the 34 bytes in one go and then waits for our command, so extra
 * bytes are not a runtime either. Returns 0, or -EPROTO with e naming what is wrong. */
int advert_decode(const uint8_t *buf, size_t len, struct advert *ret_adv, struct cla_error *e);

/* Encodes an advertisement (the tests' fake runtime and the fuzz seeds speak it). Returns
 * ADVERT_SIZE, or -ENOBUFS when size is smaller. */
int advert_encode(const struct advert *adv, uint8_t *buf, size_t size);

#endif
