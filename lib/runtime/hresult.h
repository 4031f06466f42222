/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the HRESULT in an AttachProfiler/StartupProfiler reply means for an on-call engineer: a
 * name, a class that decides the CLI's exit code, a probable cause and a next step. Pure data,
 * no I/O. docs/hresults.md mirrors the table (a unit test keeps the two in step).
 */
#ifndef CLRATTACH_HRESULT_H
#define CLRATTACH_HRESULT_H

#include <stddef.h>
#include <stdint.h>

/* Decides the CLI's exit code. */
enum hresult_class {
    HRESULT_CLASS_OK,        /* S_OK */
    HRESULT_CLASS_ALREADY,   /* a profiler is already active */
    HRESULT_CLASS_LOAD,      /* the target could not load or initialise the profiler */
    HRESULT_CLASS_NOT_READY, /* suspended at startup, uninitialised or shutting down */
    HRESULT_CLASS_PROTOCOL,  /* IPC-level: bad frame, unknown command, not supported (Mono) */
    HRESULT_CLASS_OTHER,
};

struct hresult_info {
    uint32_t code;
    const char *name;
    enum hresult_class cls;
    const char *cause;     /* probable cause, one sentence */
    const char *next_step; /* what to do next, concrete */
};

/* The entry for `code`. Never NULL: a Win32 code (0x8007xxxx) that is only named gets its
 * "HRESULT_FROM_WIN32(ERROR_...)" name with generic texts; any other unknown code gets a static
 * generic entry with name "UNKNOWN", code 0 (print the code you looked up) and a class chosen by
 * severity/facility. */
const struct hresult_info *hresult_lookup(uint32_t code);

/* The whole table of known codes, sorted by code without duplicates; *ret_count entries. */
const struct hresult_info *hresult_table(size_t *ret_count);

/* The Win32 codes known by name only (generic texts), sorted by code; *ret_count entries. */
const struct hresult_info *hresult_win32_named(size_t *ret_count);

/* Stable lower-case name of a class ("load", "not_ready", ...), for JSON and docs. */
const char *hresult_class_name(enum hresult_class cls);

/* Writes "0x8007007E" (upper-case, 8 digits) into buf; needs size >= 11, truncates (still
 * NUL-terminated) when smaller, writes nothing when size is 0. */
void hresult_format(uint32_t code, char *buf, size_t size);

#endif
