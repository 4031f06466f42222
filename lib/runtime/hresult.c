/* SPDX-License-Identifier: Apache-2.0 */
/* The table of HRESULTs an attach can answer with, sorted for a binary search, each with its
 * class, cause and next step; the lookup and the formatting of a code found in none. */
#include "runtime/hresult.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/util.h"

/*
 * Sorted by code (as uint32_t) for the binary search; tests/unit/test_hresult.c checks the order,
 * the texts and that docs/hresults.md carries every row verbatim.
 *
 * Which codes reach us, and when, follows the runtime's attach path (ds-profiler-protocol.c,
 * ProfilingAPIUtility::LoadProfiler, EEToProfInterfaceImpl): the PAL turns every dlopen()
 * failure into one code, and whatever the profiler's DllGetClassObject, factory or
 * InitializeForAttach returns is passed back verbatim. So Info-API codes (SetEventMask & co.)
 * only appear when the profiler hands them up, and they count as load failures.
 *
 * Texts: no '|' (they are Markdown table cells), backticks for commands and flags.
 */
static const struct hresult_info table[] = {
    {0x00000000, "S_OK", HRESULT_CLASS_OK,
     "The runtime loaded the profiler and its InitializeForAttach and ProfilerAttachComplete "
     "returned.",
     "None. Confirm in the profiler's own output that it is collecting."},
    /* Sic: the runtime defines it with facility 0 and code 0xCB. */
    {0x800000CB, "DS_IPC_E_ENVVAR_NOT_FOUND", HRESULT_CLASS_OTHER,
     "Diagnostic IPC answer to an environment-variable query for a name that is not set; never "
     "sent for an attach.",
     "Report it with the runtime version clrattach printed: the attach path should not produce "
     "it."},
    {0x80004001, "E_NOTIMPL", HRESULT_CLASS_LOAD,
     "The profiler's DllGetClassObject or class factory returned E_NOTIMPL (from "
     "InitializeForAttach it becomes 0x80131368).",
     "The profiler does not support being created this way; check it is a CoreCLR profiler "
     "meant for attach."},
    {0x80004002, "E_NOINTERFACE", HRESULT_CLASS_LOAD,
     "The library's class factory gave no ICorProfilerCallback2 object: most often the library "
     "is not the CLR profiler itself but a plugin or helper that ships beside it.",
     "Point --profiler (or --entry) at the profiler's own library, the one its vendor documents "
     "as CORECLR_PROFILER_PATH; if it is the profiler, its CreateInstance/QueryInterface must "
     "accept IID_ICorProfilerCallback2 and later."},
    {0x80004005, "E_FAIL", HRESULT_CLASS_LOAD,
     "Generic failure: a wrong `--clsid` for this library (ProcDump's, OpenTelemetry's and "
     "Datadog's DllGetClassObject answer E_FAIL to a CLSID they lack), an empty path, or the "
     "profiler's own E_FAIL.",
     "Check `--clsid` against the profiler's documentation first; then the profiler's own log; "
     "restart the target with PAL_OUTPUTDEBUGSTRING=1 to see the runtime's profiler messages on "
     "stderr."},
    {0x8000FFFF, "E_UNEXPECTED", HRESULT_CLASS_LOAD,
     "A C++ exception escaped the profiler's CreateInstance, QueryInterface, AddRef/Release or "
     "InitializeForAttach.",
     "Debug the profiler's attach path; PAL_OUTPUTDEBUGSTRING=1 in the target's environment "
     "makes the runtime log the failing step."},
    {0x80040111, "CLASS_E_CLASSNOTAVAILABLE", HRESULT_CLASS_LOAD,
     "The library's DllGetClassObject rejected the CLSID sent in the attach request: a wrong "
     "--clsid, or a plugin library that exports the same entry point as the profiler.",
     "Send the CLSID the profiler's vendor documents as CORECLR_PROFILER, to the profiler's own "
     "library."},
    {0x80070002, "HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND)", HRESULT_CLASS_LOAD,
     "The profiler could not find a file it opens during attach (its configuration, a log or "
     "output directory, a helper library); the runtime passes its failure back.",
     "Read the profiler's log for the path; check the client data names paths that exist in the "
     "target's container, as the target's user sees them."},
    {0x80070003, "HRESULT_FROM_WIN32(ERROR_PATH_NOT_FOUND)", HRESULT_CLASS_LOAD,
     "A directory on a path the profiler opens or writes during attach does not exist in the "
     "target's container (ENOENT/ENOTDIR).",
     "Point the profiler's output or log path (often in its client data) at a directory that "
     "exists in the target's container, e.g. an emptyDir mount."},
    {0x80070005, "HRESULT_FROM_WIN32(ERROR_ACCESS_DENIED)", HRESULT_CLASS_LOAD,
     "The profiler was refused opening or writing a file as the target's user (EACCES/EPERM, or "
     "the path is a directory); E_ACCESSDENIED is the same code.",
     "Give the profiler a path the target's uid can write, e.g. its client data's output path on "
     "an emptyDir; check the mode and owner there."},
    {0x80070008, "HRESULT_FROM_WIN32(ERROR_NOT_ENOUGH_MEMORY)", HRESULT_CLASS_OTHER,
     "An allocation failed in the profiler or the runtime during attach, e.g. a container close "
     "to its memory limit.",
     "Compare the container's memory.current with memory.max and look for OOM events; retry when "
     "there is headroom."},
    {0x8007000E, "E_OUTOFMEMORY", HRESULT_CLASS_OTHER,
     "An allocation failed inside the target during attach (runtime or profiler), e.g. a "
     "container close to its memory limit.",
     "Compare the container's memory.current with memory.max and look for OOM events; retry when "
     "there is headroom."},
    {0x80070013, "HRESULT_FROM_WIN32(ERROR_WRITE_PROTECT)", HRESULT_CLASS_LOAD,
     "The profiler could not write: the filesystem it writes to is read-only (EROFS), e.g. a "
     "container with readOnlyRootFilesystem and the profiler's default path under /tmp.",
     "Give the profiler a writable path, e.g. its client data's output path on an emptyDir "
     "mounted in the app's container."},
    {0x80070057, "E_INVALIDARG", HRESULT_CLASS_LOAD,
     "The profiler's InitializeForAttach rejected its arguments (often the client data); after "
     "`--startup`: the runtime was not suspended.",
     "Check the client data format the profiler expects and its log; if `--startup` was used on "
     "a running process, attach without it."},
    {0x80070070, "HRESULT_FROM_WIN32(ERROR_DISK_FULL)", HRESULT_CLASS_LOAD,
     "The profiler could not write: the filesystem it writes to is full or the user's quota is "
     "spent (ENOSPC/EDQUOT), e.g. a small tmpfs or emptyDir sizeLimit.",
     "Free space where the profiler writes, or give it a larger volume (the emptyDir's "
     "sizeLimit); `df` in the app's container shows it."},
    {0x8007007A, "ERROR_INSUFFICIENT_BUFFER", HRESULT_CLASS_PROTOCOL,
     "Diagnostic IPC answer meaning a reply did not fit the runtime's buffer; not expected for "
     "an attach.",
     "Report it with the runtime version clrattach printed: the attach path should not produce "
     "it."},
    {0x8007007E, "ERROR_MOD_NOT_FOUND", HRESULT_CLASS_LOAD,
     "The target's dlopen() failed past clrattach's checks (libraries, libc, machine, noexec): "
     "a missing symbol, a glibc/musl or arch check skipped, or a library failing in turn.",
     "Attach without `--skip-dependency-check` or `--force-rid` (never a `--rid` against the "
     "runtime's); `--target-dir` on an exec mount; restart with LD_DEBUG=files (glibc)."},
    {0x8007007F, "ERROR_PROC_NOT_FOUND", HRESULT_CLASS_LOAD,
     "The library loaded but does not export DllGetClassObject: not a CLR profiler (a plugin or "
     "helper library), or built with hidden visibility or C++ name mangling.",
     "Point --profiler (or --entry) at the profiler's own library; `nm -D --defined-only <so>` "
     "shows what a library exports."},
    {0x800700CE, "HRESULT_FROM_WIN32(ERROR_FILENAME_EXCED_RANGE)", HRESULT_CLASS_LOAD,
     "A path the profiler opens or writes is too long for the target's filesystem "
     "(ENAMETOOLONG): over 255 bytes in one name or 4096 in all.",
     "Shorten the profiler's output or log path in its client data, or the `--target-dir`."},
    {0x8007045A, "ERROR_DLL_INIT_FAILED", HRESULT_CLASS_LOAD,
     "The profiler exports DllMain, which the runtime's PAL calls after dlopen(); it returned "
     "FALSE and the library was unloaded.",
     "Remove the DllMain export (a C profiler needs none) or fix its failure; `nm -D "
     "--defined-only <so>` shows it."},
    /* Internal: SetEventMask converts it to 0x80131379; seen only if a profiler passes its own. */
    {0x800705B4, "ERROR_TIMEOUT", HRESULT_CLASS_LOAD,
     "A Win32 timeout returned by the profiler's own code during attach (the runtime itself "
     "reports 0x80131379 instead).",
     "Check the profiler's log for what it waited on; retry with a larger attach timeout."},
    {0x8013135B, "CORPROF_E_NOT_YET_AVAILABLE", HRESULT_CLASS_NOT_READY,
     "The runtime has not started yet: it is suspended at startup "
     "(DOTNET_DefaultDiagnosticPortSuspend=1 or a suspend port), or still starting up.",
     "If it is suspended, re-run with `--startup` (StartupProfiler, then ResumeRuntime); if it is "
     "starting, attach again in a moment."},
    {0x80131363, "CORPROF_E_UNSUPPORTED_CALL_SEQUENCE", HRESULT_CLASS_LOAD,
     "The profiler called an Info API at a point where it is not allowed and returned that "
     "failure from InitializeForAttach.",
     "Fix the profiler's attach path (the failing Info call is in its log)."},
    {0x80131367, "CORPROF_E_PROFILER_DETACHING", HRESULT_CLASS_LOAD,
     "The profiler passed up an Info API failure seen while a profiler detach was in progress.",
     "Wait for the detach to finish (ProfilerDetachSucceeded) and attach again."},
    {0x80131368, "CORPROF_E_PROFILER_NOT_ATTACHABLE", HRESULT_CLASS_LOAD,
     "The profiler lacks ICorProfilerCallback3, or its InitializeForAttach returned E_NOTIMPL: "
     "it only supports loading at startup.",
     "Use a profiler built for attach, or load this one at startup (CORECLR_PROFILER* "
     "variables, or `--startup` on a suspended runtime)."},
    {0x80131369, "CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT", HRESULT_CLASS_OTHER,
     "A legacy Windows attach-pipe code that CoreCLR on Linux never sends; the profiler passed "
     "it up or the peer is not CoreCLR.",
     "Check the socket belongs to the intended .NET process (pid, command line in the report) and "
     "the profiler's log."},
    {0x8013136A, "CORPROF_E_PROFILER_ALREADY_ACTIVE", HRESULT_CLASS_ALREADY,
     "A profiler already holds the main slot (loaded at startup, attached earlier, or still "
     "detaching), or all 32 notification slots are used.",
     "Check the target's CORECLR_PROFILER* variables (clrattach reports them); detach the other "
     "profiler or restart the process."},
    {0x8013136B, "CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER", HRESULT_CLASS_OTHER,
     "A legacy Windows attach-trigger code that CoreCLR on Linux never sends; the profiler passed "
     "it up or the peer is not CoreCLR.",
     "Check the socket belongs to the intended .NET process (pid, command line in the report) and "
     "the profiler's log."},
    {0x8013136C, "CORPROF_E_IPC_FAILED", HRESULT_CLASS_OTHER,
     "A legacy Windows attach-trigger code that CoreCLR on Linux never sends; the profiler passed "
     "it up or the peer is not CoreCLR.",
     "Check the socket belongs to the intended .NET process (pid, command line in the report) and "
     "the profiler's log."},
    {0x8013136D, "CORPROF_E_PROFILEE_PROCESS_NOT_FOUND", HRESULT_CLASS_OTHER,
     "A legacy Windows attach-trigger code that CoreCLR on Linux never sends; the profiler passed "
     "it up or the peer is not CoreCLR.",
     "Check the socket belongs to the intended .NET process (pid, command line in the report) and "
     "the profiler's log."},
    {0x8013136E, "CORPROF_E_CALLBACK3_REQUIRED", HRESULT_CLASS_LOAD,
     "The profiler called an Info API that needs ICorProfilerCallback3 and passed the failure "
     "up from InitializeForAttach.",
     "Make the profiler's object answer QueryInterface for ICorProfilerCallback3 or later."},
    {0x8013136F, "CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER", HRESULT_CLASS_LOAD,
     "The profiler's SetEventMask asked for flags not allowed after attach (outside "
     "COR_PRF_ALLOWABLE_AFTER_ATTACH) and passed the failure up.",
     "Drop startup-only flags (ENTERLEAVE, DISABLE_INLINING, OBJECT_ALLOCATED...) on the attach "
     "path, or load the profiler at startup."},
    {0x80131371, "CORPROF_E_RUNTIME_UNINITIALIZED", HRESULT_CLASS_NOT_READY,
     "The runtime's profiling support is not initialised yet, or the process is shutting down.",
     "If the process is exiting there is nothing to attach to; otherwise retry in a few seconds "
     "and check DOTNET_EnableDiagnostics* in its environment."},
    {0x80131372, "CORPROF_E_IMMUTABLE_FLAGS_SET", HRESULT_CLASS_LOAD,
     "The profiler tried to change event-mask flags that are immutable after initialisation and "
     "passed the failure up.",
     "Fix the profiler's SetEventMask calls on its attach path."},
    {0x80131373, "CORPROF_E_PROFILER_NOT_YET_INITIALIZED", HRESULT_CLASS_LOAD,
     "The profiler called an Info API that is not usable before initialisation completes and "
     "passed the failure up.",
     "Move that call out of InitializeForAttach (e.g. to ProfilerAttachComplete)."},
    {0x80131374, "CORPROF_E_INCONSISTENT_WITH_FLAGS", HRESULT_CLASS_LOAD,
     "The profiler called an Info API that its event mask does not allow and passed the failure "
     "up.",
     "Fix the profiler: set the flags the call needs first, or drop the call."},
    {0x80131375, "CORPROF_E_PROFILER_CANCEL_ACTIVATION", HRESULT_CLASS_LOAD,
     "The profiler's InitializeForAttach chose not to load (its own configuration or checks); "
     "the runtime unloaded it.",
     "Read the profiler's own log for the reason; check the client data and environment it "
     "expects."},
    {0x80131376, "CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE", HRESULT_CLASS_LOAD,
     "The profiler enabled GC monitoring outside InitializeForAttach while concurrent GC is on, "
     "and passed the failure up.",
     "Request COR_PRF_MONITOR_GC only inside InitializeForAttach, or not at all."},
    {0x80131379, "CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC", HRESULT_CLASS_LOAD,
     "The profiler enabled COR_PRF_MONITOR_GC at attach and a background GC did not finish "
     "within the attach timeout.",
     "Retry with a larger attach timeout or at a quieter moment, or do not request "
     "COR_PRF_MONITOR_GC at attach."},
    {0x8013137C, "CORPROF_E_REJIT_NOT_ENABLED", HRESULT_CLASS_LOAD,
     "The profiler asked for ReJIT while it is disabled in the target and passed the failure up.",
     "Drop COR_PRF_ENABLE_REJIT on the attach path, or check the target's ReJIT settings."},
    {0x80131380, "CORPROF_E_CALLBACK6_REQUIRED", HRESULT_CLASS_LOAD,
     "The profiler asked for event flags that need ICorProfilerCallback6 without implementing "
     "it.",
     "Implement ICorProfilerCallback6 or later in the profiler, or drop those flags."},
    {0x80131382, "CORPROF_E_CALLBACK7_REQUIRED", HRESULT_CLASS_LOAD,
     "The profiler asked for event flags that need ICorProfilerCallback7 without implementing "
     "it.",
     "Implement ICorProfilerCallback7 or later in the profiler, or drop those flags."},
    {0x80131384, "CORDIAGIPC_E_BAD_ENCODING", HRESULT_CLASS_PROTOCOL,
     "The runtime could not parse the request payload (field sizes or string encoding).",
     "Report a clrattach bug with its full output and the runtime version."},
    {0x80131385, "CORDIAGIPC_E_UNKNOWN_COMMAND", HRESULT_CLASS_PROTOCOL,
     "The runtime does not know the command: too old (StartupProfiler needs .NET 6, attach "
     ".NET Core 3.0).",
     "Check the runtime version clrattach reports; upgrade the runtime or use a method it "
     "supports."},
    {0x80131386, "CORDIAGIPC_E_UNKNOWN_MAGIC", HRESULT_CLASS_PROTOCOL,
     "The peer did not accept the DOTNET_IPC_V1 header: not a CoreCLR diagnostic socket, or an "
     "incompatible protocol.",
     "Check the socket belongs to the intended .NET process; report the runtime version."},
    {0x80131387, "CORDIAGIPC_E_UNKNOWN_ERROR", HRESULT_CLASS_PROTOCOL,
     "The runtime's diagnostic server failed without a specific code.",
     "Retry once; if it persists, report it with clrattach's full output and the runtime version."},
    {0x80131515, "COR_E_NOTSUPPORTED", HRESULT_CLASS_PROTOCOL,
     "The runtime does not support this command: typically a Mono runtime, where "
     "AttachProfiler and StartupProfiler are not implemented.",
     "Profiler attach needs CoreCLR; for Mono, configure its own profiler at startup."},
};

/*
 * Generic entries for codes not in the table. The class follows where such a code can come from
 * on the attach path: Win32 and interface (ITF) codes are what the PAL loader and the profiler's
 * COM methods produce, so they count as load failures; anything else stays "other".
 */
static const struct hresult_info unknown_success = {
    0, "UNKNOWN", HRESULT_CLASS_OTHER,
    "A success code other than S_OK; the runtime answers a good attach with S_OK only, so the "
    "reply is unexpected.",
    "Treat the attach as unconfirmed: check the profiler's own output; report the code and "
    "runtime version."};

static const struct hresult_info unknown_win32 = {
    0, "UNKNOWN", HRESULT_CLASS_LOAD,
    "A Win32 error (low 16 bits) from loading the profiler, or returned by the profiler's own "
    "code during attach.",
    "Look up the Win32 code in the low 16 bits; restart the target with PAL_OUTPUTDEBUGSTRING=1 "
    "to see the runtime's profiler messages."};

static const struct hresult_info unknown_itf = {
    0, "UNKNOWN", HRESULT_CLASS_LOAD,
    "An interface-specific COM error, most likely returned by the profiler's DllGetClassObject, "
    "class factory or InitializeForAttach.",
    "Look the code up in the profiler's sources or documentation, and read its log."};

static const struct hresult_info unknown_urt = {
    0, "UNKNOWN", HRESULT_CLASS_OTHER,
    "A CLR error code this tool does not know: a newer runtime, or passed up by the profiler "
    "from an Info API call.",
    "Look the code up in the runtime's corerror.h; check the profiler's log and the runtime "
    "version clrattach reports."};

static const struct hresult_info unknown_other = {
    0, "UNKNOWN", HRESULT_CLASS_OTHER,
    "An error code not expected on the attach path, from the runtime or passed up verbatim by "
    "the profiler.",
    "Check the profiler's own log; restart the target with PAL_OUTPUTDEBUGSTRING=1 to see the "
    "runtime's profiler messages."};

/*
 * Other Win32 codes, named only: a profiler's own code turns errno or GetLastError() into
 * HRESULT_FROM_WIN32(x) (0x8007xxxx), and a name such as ERROR_SHARING_VIOLATION already says
 * what failed, where "UNKNOWN" says nothing. Sorted by code; the texts are the generic Win32 ones.
 */
#define WIN32_CAUSE                                                                                \
    "A Win32 error returned by the profiler's own code during attach (or from loading it): the "   \
    "name says what failed."
#define WIN32_STEP                                                                                 \
    "Read the profiler's own log for the call that failed; restart the target with "               \
    "PAL_OUTPUTDEBUGSTRING=1 to see the runtime's profiler messages."
#define W32(n, sym)                                                                                \
    {                                                                                              \
        0x80070000u | (n), "HRESULT_FROM_WIN32(" #sym ")", HRESULT_CLASS_LOAD, WIN32_CAUSE,        \
            WIN32_STEP                                                                             \
    }
static const struct hresult_info win32_named[] = {
    W32(1, ERROR_INVALID_FUNCTION),
    W32(4, ERROR_TOO_MANY_OPEN_FILES),
    W32(6, ERROR_INVALID_HANDLE),
    W32(11, ERROR_BAD_FORMAT),
    W32(13, ERROR_INVALID_DATA),
    W32(18, ERROR_NO_MORE_FILES),
    W32(21, ERROR_NOT_READY),
    W32(31, ERROR_GEN_FAILURE),
    W32(32, ERROR_SHARING_VIOLATION),
    W32(33, ERROR_LOCK_VIOLATION),
    W32(38, ERROR_HANDLE_EOF),
    W32(39, ERROR_HANDLE_DISK_FULL),
    W32(50, ERROR_NOT_SUPPORTED),
    W32(80, ERROR_FILE_EXISTS),
    W32(82, ERROR_CANNOT_MAKE),
    W32(109, ERROR_BROKEN_PIPE),
    W32(120, ERROR_CALL_NOT_IMPLEMENTED),
    W32(123, ERROR_INVALID_NAME),
    W32(145, ERROR_DIR_NOT_EMPTY),
    W32(161, ERROR_BAD_PATHNAME),
    W32(170, ERROR_BUSY),
    W32(183, ERROR_ALREADY_EXISTS),
    W32(193, ERROR_BAD_EXE_FORMAT),
    W32(203, ERROR_ENVVAR_NOT_FOUND),
    W32(259, ERROR_NO_MORE_ITEMS),
    W32(995, ERROR_OPERATION_ABORTED),
    W32(998, ERROR_NOACCESS),
    W32(1168, ERROR_NOT_FOUND),
};
#undef W32

#define HR_SEVERITY_ERROR 0x80000000u
#define HR_FACILITY(c)    (((c) >> 16) & 0x1fffu)
#define FACILITY_ITF      0x4u
#define FACILITY_WIN32    0x7u
#define FACILITY_URT      0x13u

static const struct hresult_info *generic(uint32_t code)
{
    if (!(code & HR_SEVERITY_ERROR))
        return &unknown_success;
    switch (HR_FACILITY(code)) {
    case FACILITY_WIN32: return &unknown_win32;
    case FACILITY_ITF: return &unknown_itf;
    case FACILITY_URT: return &unknown_urt;
    default: return &unknown_other;
    }
}

static const struct hresult_info *search(const struct hresult_info *t, size_t n, uint32_t code)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].code == code)
            return &t[mid];
        if (t[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct hresult_info *hresult_lookup(uint32_t code)
{
    const struct hresult_info *hi = search(table, ARRAY_SIZE(table), code);

    if (!hi)
        hi = search(win32_named, ARRAY_SIZE(win32_named), code);
    return hi ? hi : generic(code);
}

const struct hresult_info *hresult_table(size_t *ret_count)
{
    *ret_count = ARRAY_SIZE(table);
    return table;
}

const struct hresult_info *hresult_win32_named(size_t *ret_count)
{
    *ret_count = ARRAY_SIZE(win32_named);
    return win32_named;
}

const char *hresult_class_name(enum hresult_class cls)
{
    switch (cls) {
    case HRESULT_CLASS_OK: return "ok";
    case HRESULT_CLASS_ALREADY: return "already_active";
    case HRESULT_CLASS_LOAD: return "load";
    case HRESULT_CLASS_NOT_READY: return "not_ready";
    case HRESULT_CLASS_PROTOCOL: return "protocol";
    case HRESULT_CLASS_OTHER: return "other";
    }
    return "other";
}

void hresult_format(uint32_t code, char *buf, size_t size)
{
    if (size == 0)
        return;
    /* snprintf truncates and terminates; a short buffer is the caller's bug, not a crash. */
    snprintf(buf, size, "0x%08" PRIX32, code);
}
