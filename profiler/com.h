/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRPROBE_COM_H
#define CLRPROBE_COM_H

/*
 * The COM plumbing every CLR profiler in plain C needs, shared by the sample probe and the
 * vendor-shaped test profiler (tests/vendorprof/): interface pointers and vtables, the IIDs the
 * runtime asks for, and a class factory with DllGetClassObject's checks. Static inline: each
 * library gets its own copy and exports nothing from here.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "corprof.h"

/* A COM vtable entry in its generic form. The runtime calls each entry through its real C++
 * type, and every function in a vtable is defined with exactly that parameter list, so the cast
 * to and from this type is only storage. */
typedef void (*fnptr)(void);
#define F(f) ((fnptr)(f))

/* An interface pointer points at a struct whose first member is the vtable pointer. */
struct com_object {
    const fnptr *vtbl;
};

/* IIDs from corprof.idl / unknwn.h, in the in-memory layout the runtime passes. */
static const struct guid iid_iunknown = {
    0x00000000, 0x0000, 0x0000, {0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const struct guid iid_iclassfactory = {
    0x00000001, 0x0000, 0x0000, {0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const struct guid iid_callback = {
    0x176FBED1, 0xA55C, 0x4796, {0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7}};
static const struct guid iid_callback2 = {
    0x8A8CC829, 0xCCF2, 0x49FE, {0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A}};
static const struct guid iid_callback3 = {
    0x4FD2ED52, 0x7731, 0x4B8D, {0x94, 0x69, 0x03, 0xD2, 0xCC, 0x30, 0x86, 0xC5}};

static inline bool com_guid_eq(const struct guid *a, const struct guid *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

/* IUnknown and ICorProfilerCallback 1 to 3. Callback4+ are answered E_NOINTERFACE: the runtime
 * then settles on v3 (it asks 11, 10, ... down to 3) and never calls a slot past 82. */
static inline bool com_is_callback3(const struct guid *iid)
{
    return com_guid_eq(iid, &iid_iunknown) || com_guid_eq(iid, &iid_callback) ||
           com_guid_eq(iid, &iid_callback2) || com_guid_eq(iid, &iid_callback3);
}

/* A static class factory: its reference count has no effect. `create` answers CreateInstance
 * (no aggregation): it must be side-effect free, since a second attach runs it before the runtime
 * refuses it with ALREADY_ACTIVE, and it must not disturb the profiler already active. */
struct com_factory {
    const fnptr *vtbl;
    HRESULT (*create)(const struct guid *iid, void **ppv);
};

static inline HRESULT com_factory_query_interface(struct com_object *self, const struct guid *iid,
                                                  void **ppv)
{
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (!iid)
        return E_INVALIDARG;
    if (com_guid_eq(iid, &iid_iunknown) || com_guid_eq(iid, &iid_iclassfactory)) {
        *ppv = self;
        return S_OK;
    }
    return E_NOINTERFACE;
}

static inline uint32_t com_factory_add_ref(struct com_object *self)
{
    (void)self;
    return 2;
}

static inline uint32_t com_factory_release(struct com_object *self)
{
    (void)self;
    return 1;
}

static inline HRESULT com_factory_create_instance(struct com_object *self, void *outer,
                                                  const struct guid *iid, void **ppv)
{
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (outer)
        return CLASS_E_NOAGGREGATION;
    return ((struct com_factory *)(void *)self)->create(iid, ppv);
}

static inline HRESULT com_factory_lock_server(struct com_object *self, int32_t lock)
{
    (void)self;
    (void)lock;
    return S_OK;
}

static const fnptr com_factory_vtbl[] = {
    F(com_factory_query_interface), F(com_factory_add_ref),     F(com_factory_release),
    F(com_factory_create_instance), F(com_factory_lock_server),
};

/* DllGetClassObject's body. The runtime passes the CLSID from the AttachProfiler request
 * unchecked, so this check is what keeps a request for some other profiler from loading this
 * one. `clsid` is the library's own, as text ("{...}"): one source of truth, no second copy of
 * the same GUID as bytes. */
static inline HRESULT com_get_class_object(const struct guid *rclsid, const struct guid *riid,
                                           void **ppv, const char *clsid,
                                           struct com_factory *factory)
{
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (!rclsid || !riid)
        return E_INVALIDARG;
    char s[40];
    snprintf(s, sizeof(s), "{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", rclsid->data1,
             rclsid->data2, rclsid->data3, rclsid->data4[0], rclsid->data4[1], rclsid->data4[2],
             rclsid->data4[3], rclsid->data4[4], rclsid->data4[5], rclsid->data4[6],
             rclsid->data4[7]);
    if (strcasecmp(s, clsid) != 0)
        return CLASS_E_CLASSNOTAVAILABLE;
    return com_factory_query_interface((struct com_object *)(void *)factory, riid, ppv);
}

#endif
