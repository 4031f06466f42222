/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnostic port advertisement ("ADVR_V1"), decoded from and encoded into its 34 bytes.
 * Pure: no I/O. */
#include <errno.h>
#include <string.h>

#include "base/bounds.h"
#include "runtime/advert.h"

/* Offsets of the fields (ds-protocol.c writes them as four u64 slots and a u16). */
#define OFF_COOKIE   8
#define OFF_PID      24
#define OFF_RESERVED 32

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int advert_decode(const uint8_t *buf, size_t len, struct advert *ret_adv, struct cla_error *e)
{
    static const uint8_t zero[sizeof(ret_adv->cookie.b)];
    struct advert adv;

    if (len != ADVERT_SIZE)
        return err_set(e, -EPROTO, "advertisement: %zu bytes, a runtime sends %d", len,
                       ADVERT_SIZE);
    /* memcmp over 8 bytes: the NUL after "ADVR_V1" is part of the magic, as the runtime's
     * client (IpcAdvertise.cs) compares it. */
    if (memcmp(buf, ADVERT_MAGIC, ADVERT_MAGIC_SIZE) != 0)
        return err_set(e, -EPROTO, "advertisement: no ADVR_V1 magic");
    memcpy(adv.cookie.b, buf + OFF_COOKIE, sizeof(adv.cookie.b));
    if (memcmp(adv.cookie.b, zero, sizeof(zero)) == 0)
        return err_set(e, -EPROTO, "advertisement: the instance cookie is all zero");
    adv.pid = le64(buf + OFF_PID);
    if (adv.pid == 0 || adv.pid > ADVERT_PID_MAX)
        return err_set(e, -EPROTO, "advertisement: pid %llu is out of range (1..%d)",
                       (unsigned long long)adv.pid, ADVERT_PID_MAX);
    if (buf[OFF_RESERVED] || buf[OFF_RESERVED + 1])
        return err_set(e, -EPROTO, "advertisement: the reserved field is not 0");
    *ret_adv = adv;
    return 0;
}

int advert_encode(const struct advert *adv, uint8_t *buf, size_t size)
{
    if (size < ADVERT_SIZE)
        return -ENOBUFS;
    memcpy(buf, ADVERT_MAGIC, ADVERT_MAGIC_SIZE);
    memcpy(buf + OFF_COOKIE, adv->cookie.b, sizeof(adv->cookie.b));
    for (int i = 0; i < 8; i++)
        buf[OFF_PID + i] = (uint8_t)(adv->pid >> (8 * i));
    buf[OFF_RESERVED] = buf[OFF_RESERVED + 1] = 0;
    return ADVERT_SIZE;
}
