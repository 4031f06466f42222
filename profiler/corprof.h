/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRPROBE_CORPROF_H
#define CLRPROBE_CORPROF_H

/*
 * The slice of the CoreCLR profiling ABI the probe uses, restated for plain C on LP64 Linux.
 * COM methods are ordinary System V functions whose first argument is the interface pointer
 * (the PAL defines __stdcall as empty off i386). WCHAR is 2 bytes (char16_t), never wchar_t.
 */
#include <stdint.h>

typedef int32_t HRESULT;
typedef uint16_t WCHAR;

struct guid {
    uint32_t data1;
    uint16_t data2;
    uint16_t data3;
    uint8_t data4[8];
};

#define S_OK                      ((HRESULT)0)
#define E_NOINTERFACE             ((HRESULT)0x80004002)
#define E_POINTER                 ((HRESULT)0x80004003)
#define E_FAIL                    ((HRESULT)0x80004005)
#define E_UNEXPECTED              ((HRESULT)0x8000FFFF)
#define E_INVALIDARG              ((HRESULT)0x80070057)
#define E_OUTOFMEMORY             ((HRESULT)0x8007000E)
#define CLASS_E_NOAGGREGATION     ((HRESULT)0x80040110)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111)
#define HRESULT_FROM_WIN32(x)     ((HRESULT)(0x80070000u | ((uint32_t)(x)&0xFFFFu)))

/* COR_PRF_MONITOR bits (corprof.idl). */
#define COR_PRF_MONITOR_CLASS_LOADS     0x2u
#define COR_PRF_MONITOR_MODULE_LOADS    0x4u
#define COR_PRF_MONITOR_ASSEMBLY_LOADS  0x8u
#define COR_PRF_MONITOR_JIT_COMPILATION 0x20u
#define COR_PRF_MONITOR_EXCEPTIONS      0x40u
#define COR_PRF_MONITOR_GC              0x80u
#define COR_PRF_MONITOR_THREADS         0x200u
#define COR_PRF_ALLOWABLE_AFTER_ATTACH  0x100502FEu

#define COR_PRF_CORE_CLR 2 /* COR_PRF_RUNTIME_TYPE */

/* Vtable sizes, including the three IUnknown slots. */
#define CALLBACK3_SLOTS 83

/* ICorProfilerInfo slots (0-based, incl. IUnknown); Info3 extends Info2 extends Info, so one
 * Info3 pointer reaches all of them. */
#define INFO_SLOT_RELEASE                  2
#define INFO_SLOT_SET_EVENT_MASK           16
#define INFO3_SLOT_REQUEST_PROFILER_DETACH 58
#define INFO3_SLOT_GET_RUNTIME_INFORMATION 67

#endif
