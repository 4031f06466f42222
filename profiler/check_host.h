/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the host programs of profiler/musl-check.sh and profiler/envload-check.sh share: the
 * runtime's side of loading a profiler (dlopen, then DllGetClassObject) and the probe's CLSID.
 */
#ifndef CLRATTACH_CHECK_HOST_H
#define CLRATTACH_CHECK_HOST_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct guid {
    uint32_t a;
    uint16_t b, c;
    uint8_t d[8];
};
typedef int32_t (*gco_fn)(const struct guid *rclsid, const struct guid *riid, void **ppv);

/* CLRPROBE_CLSID, the same with its last byte changed, and IID_IClassFactory. */
static const struct guid probe_clsid = {
    0x5F3C8A2E, 0x7B14, 0x4C8D, {0x9E, 0x61, 0x2A, 0x0B, 0x7D, 0x3C, 0x9F, 0x41}};
static const struct guid other_clsid = {
    0x5F3C8A2E, 0x7B14, 0x4C8D, {0x9E, 0x61, 0x2A, 0x0B, 0x7D, 0x3C, 0x9F, 0x42}};
static const struct guid iid_classfactory = {1, 0, 0, {0xC0, 0, 0, 0, 0, 0, 0, 0x46}};

/* dlopen()s path as the runtime does (RTLD_NOW | RTLD_LOCAL) and returns its DllGetClassObject,
 * NULL when it has none. When dlopen fails: "dlopen: <why>" on stdout and exit 2. */
static inline gco_fn host_load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        exit(2);
    }
    return (gco_fn)dlsym(h, "DllGetClassObject");
}

#endif
