/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libclrprobe.so: a CoreCLR profiler in plain C, loaded by attach or at startup. It counts a
 * handful of runtime events and keeps a JSON report inside the target up to date, so clrattach can
 * prove that a profiler really loaded and ran. Only DllGetClassObject is exported (see the
 * Makefile's -fvisibility=hidden); the library exports no DllMain, which the PAL would otherwise
 * call.
 *
 * Threads: InitializeForAttach and ProfilerAttachComplete run on the diagnostics server thread
 * (Initialize, for a startup load, on the thread starting the runtime),
 * counting callbacks on any managed thread, ProfilerDetachSucceeded on the runtime's detach
 * thread, and one reporter thread of ours rewrites the report every 200 ms.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "clientdata.h"
#include "clrprobe.h"
#include "com.h"
#include "corprof.h"
#include "report.h"

#define EXPORT        __attribute__((visibility("default")))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define REPORT_PERIOD_MS   200
#define DETACH_EXPECTED_MS 5000
#define REPORT_BUF_SIZE    (8 * CLRPROBE_CLIENT_DATA_MAX + 4096) /* escaping grows bytes up to 6x */

typedef HRESULT (*qi_fn)(void *self, const struct guid *iid, void **ppv);
typedef uint32_t (*release_fn)(void *self);
typedef HRESULT (*set_event_mask_fn)(void *self, uint32_t mask);
typedef HRESULT (*request_detach_fn)(void *self, uint32_t expected_ms);
typedef HRESULT (*get_runtime_info_fn)(void *self, uint16_t *instance, int *type, uint16_t *major,
                                       uint16_t *minor, uint16_t *build, uint16_t *qfe,
                                       uint32_t cch, uint32_t *pcch, WCHAR *version);

/* ICorProfilerInfo3, asked of the runtime's Info object. */
static const struct guid iid_info3 = {
    0xB555ED4F, 0x452A, 0x4E54, {0x8B, 0x39, 0xB5, 0x36, 0x0B, 0xAD, 0x32, 0xA0}};

enum counter {
    C_GC_STARTED,
    C_GC_FINISHED,
    C_EXCEPTIONS,
    C_JIT,
    C_THREADS_CREATED,
    C_THREADS_DESTROYED,
    C_CLASS_LOADS,
    C_MODULE_LOADS,
    C_ASSEMBLY_LOADS,
    C_COUNT,
};

static _Atomic uint64_t g_count[C_COUNT];

/*
 * Everything else the probe knows. Set up by InitializeForAttach before any other thread can
 * see it; afterwards `lock` serialises report writing (server thread, reporter thread, detach
 * thread) so an older snapshot never replaces a newer one.
 */
static struct {
    pthread_mutex_t lock;
    void *info3; /* ICorProfilerInfo3*, owned reference; NULL when not attached */
    struct clientdata cd;
    unsigned char client_data[CLRPROBE_CLIENT_DATA_MAX];
    size_t client_data_len;
    int runtime_type;
    unsigned major, minor, build, qfe;
    char runtime_version[64];
    uint32_t event_mask;
    int64_t attach_unix_ms, attach_mono_ms;
    bool attach_complete, detached;
    bool startup; /* loaded by Initialize rather than InitializeForAttach */
    /* Reporter thread; `stop` and `cond` are guarded by `lock`. */
    pthread_t thread;
    bool thread_running, stop;
    pthread_cond_t cond;
    char buf[REPORT_BUF_SIZE];
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t clock_ms(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count(enum counter c)
{
    atomic_fetch_add_explicit(&g_count[c], 1, memory_order_relaxed);
}

static const fnptr *vtbl_of(void *itf)
{
    return ((struct com_object *)itf)->vtbl;
}

/* Snapshot and write; callers hold g.lock. Returns 0 or -errno. */
static int write_report_locked(void)
{
    struct report r = {
        .pid = getpid(),
        .attach_unix_ms = g.attach_unix_ms,
        .updated_unix_ms = clock_ms(CLOCK_REALTIME),
        .runtime_type = g.runtime_type,
        .major = g.major,
        .minor = g.minor,
        .build = g.build,
        .qfe = g.qfe,
        .runtime_version = g.runtime_version,
        .event_mask = g.event_mask,
        .client_data = g.client_data,
        .client_data_len = g.client_data_len,
        .attach_complete = g.attach_complete,
        .detached = g.detached,
        .startup = g.startup,
    };
    uint64_t *dst[C_COUNT] = {
        [C_GC_STARTED] = &r.counters.gc_started,
        [C_GC_FINISHED] = &r.counters.gc_finished,
        [C_EXCEPTIONS] = &r.counters.exceptions_thrown,
        [C_JIT] = &r.counters.jit_compilations,
        [C_THREADS_CREATED] = &r.counters.threads_created,
        [C_THREADS_DESTROYED] = &r.counters.threads_destroyed,
        [C_CLASS_LOADS] = &r.counters.class_loads,
        [C_MODULE_LOADS] = &r.counters.module_loads,
        [C_ASSEMBLY_LOADS] = &r.counters.assembly_loads,
    };
    for (size_t i = 0; i < C_COUNT; i++)
        *dst[i] = atomic_load_explicit(&g_count[i], memory_order_relaxed);

    int n = report_format(&r, g.buf, sizeof(g.buf));
    if (n < 0)
        return n;
    return report_write_atomic(g.cd.out, g.buf, (size_t)n);
}

/* A report that cannot be written makes the probe useless to its caller, so attach fails with
 * a Win32-style HRESULT the client can decode instead of loading silently. */
static HRESULT hresult_from_errno(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR: return HRESULT_FROM_WIN32(3); /* ERROR_PATH_NOT_FOUND */
    case EACCES:
    case EPERM:
    case EISDIR: return HRESULT_FROM_WIN32(5); /* ERROR_ACCESS_DENIED */
    case EROFS: return HRESULT_FROM_WIN32(19); /* ERROR_WRITE_PROTECT */
    case ENOSPC:
    case EDQUOT: return HRESULT_FROM_WIN32(112);       /* ERROR_DISK_FULL */
    case ENAMETOOLONG: return HRESULT_FROM_WIN32(206); /* ERROR_FILENAME_EXCED_RANGE */
    case ENOMEM: return E_OUTOFMEMORY;
    default: return E_FAIL;
    }
}

/* ---- reporter thread ---------------------------------------------------------------------- */

static void *reporter_main(void *arg)
{
    bool detach_requested = false;
    (void)arg;

    pthread_mutex_lock(&g.lock);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += REPORT_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!g.stop && pthread_cond_timedwait(&g.cond, &g.lock, &until) != ETIMEDOUT)
            ;
        if (g.stop)
            break;
        /* Errors are dropped here: the next period retries, and attach already proved the
         * path writable. */
        (void)write_report_locked();

        if (g.cd.detach_after_s > 0 && !detach_requested &&
            clock_ms(CLOCK_MONOTONIC) - g.attach_mono_ms >= (int64_t)g.cd.detach_after_s * 1000) {
            void *info = g.info3;
            /* Unlocked: RequestProfilerDetach takes runtime locks, and the detach thread that
             * later calls ProfilerDetachSucceeded takes g.lock. After this call returns we
             * never call into the runtime again, so the detach thread can finish while we
             * keep writing reports until ProfilerDetachSucceeded stops us. */
            pthread_mutex_unlock(&g.lock);
            HRESULT hr = ((request_detach_fn)vtbl_of(info)[INFO3_SLOT_REQUEST_PROFILER_DETACH])(
                info, DETACH_EXPECTED_MS);
            pthread_mutex_lock(&g.lock);
            /* On failure there is nothing better to do than stay attached; retrying every
             * 200 ms would only repeat the same refusal. */
            detach_requested = true;
            (void)hr;
        }
    }
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

static void reporter_start(void)
{
    pthread_condattr_t attr;
    sigset_t all, old;

    /* Timed waits on CLOCK_MONOTONIC so a wall-clock jump in the target neither stalls nor
     * floods the report. */
    if (pthread_condattr_init(&attr) != 0)
        return;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&g.cond, &attr);
    pthread_condattr_destroy(&attr);
    if (r != 0)
        return;
    g.stop = false;

    /* Our thread must never take the runtime's signals (it installs handlers for SIGINT,
     * SIGTERM and its own activation signal and expects them on its own threads). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&g.thread, NULL, reporter_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        pthread_cond_destroy(&g.cond);
        return;
    }
    g.thread_running = true;
}

/*
 * Stops and joins the reporter. This is what makes detach safe: the runtime dlcloses the
 * library right after ProfilerDetachSucceeded returns, so no thread may still be executing (or
 * about to return into) our code. pthread_join returns only after the thread has left
 * reporter_main and been reaped; the rest of its exit runs in libc, not in this library.
 */
static void reporter_stop(void)
{
    if (!g.thread_running)
        return;
    pthread_mutex_lock(&g.lock);
    g.stop = true;
    pthread_cond_signal(&g.cond);
    pthread_mutex_unlock(&g.lock);
    pthread_join(g.thread, NULL);
    pthread_cond_destroy(&g.cond);
    g.thread_running = false;
}

/* ---- attach ------------------------------------------------------------------------------- */

static void read_runtime_info(void *info)
{
    WCHAR ver[64];
    uint32_t cch = 0;
    uint16_t instance, major, minor, build, qfe;
    int type = 0;

    HRESULT hr = ((get_runtime_info_fn)vtbl_of(info)[INFO3_SLOT_GET_RUNTIME_INFORMATION])(
        info, &instance, &type, &major, &minor, &build, &qfe, ARRAY_SIZE(ver), &cch, ver);
    if (hr < 0)
        return; /* the report then says "unknown" 0.0.0.0: not worth failing attach for */
    g.runtime_type = type;
    g.major = major;
    g.minor = minor;
    g.build = build;
    g.qfe = qfe;
    /* The version is ASCII in practice ("10.0.12"); anything else becomes '?' rather than
     * pulling in a UTF-16 decoder. cch counts the NUL and may exceed our buffer. */
    size_t n = cch < ARRAY_SIZE(ver) ? cch : ARRAY_SIZE(ver);
    size_t i;
    for (i = 0; i < n && i + 1 < sizeof(g.runtime_version) && ver[i] != 0; i++)
        g.runtime_version[i] = ver[i] < 0x80 ? (char)ver[i] : '?';
    g.runtime_version[i] = '\0';
}

static void release_info(void)
{
    if (g.info3) {
        ((release_fn)vtbl_of(g.info3)[INFO_SLOT_RELEASE])(g.info3);
        g.info3 = NULL;
    }
}

/*
 * What Initialize and InitializeForAttach share: take the runtime's Info interface, reset the
 * state, set the event mask and write the first report. `raw` is the client data as received
 * (empty at startup). Returns the HRESULT for the runtime.
 */
static HRESULT probe_start(void *info_unk, const struct clientdata *cd, const void *raw,
                           size_t raw_len, bool startup)
{
    void *info = NULL;
    HRESULT hr;

    if (!info_unk)
        return E_INVALIDARG;
    hr = ((qi_fn)vtbl_of(info_unk)[0])(info_unk, &iid_info3, &info);
    if (hr < 0 || !info)
        return hr < 0 ? hr : E_NOINTERFACE;

    /* The library may stay mapped across a detach and a later attach (dlclose need not
     * unmap), so every field is reset here rather than relying on static initialisation. */
    pthread_mutex_lock(&g.lock);
    g.cd = *cd;
    if (g.cd.out[0] == '\0')
        snprintf(g.cd.out, sizeof(g.cd.out), CLRPROBE_DEFAULT_OUT_FMT, (int)getpid());
    if (raw_len > 0)
        memcpy(g.client_data, raw, raw_len);
    g.client_data_len = raw_len;
    g.startup = startup;
    g.runtime_type = 0;
    g.major = g.minor = g.build = g.qfe = 0;
    g.runtime_version[0] = '\0';
    g.attach_unix_ms = clock_ms(CLOCK_REALTIME);
    g.attach_mono_ms = clock_ms(CLOCK_MONOTONIC);
    g.attach_complete = g.detached = false;
    for (size_t i = 0; i < C_COUNT; i++)
        atomic_store_explicit(&g_count[i], 0, memory_order_relaxed);
    g.info3 = info;
    read_runtime_info(info);

    /* Only bits allowed after attach by default, also at startup, so that both modes report
     * the same counters. An override outside that set is passed on unchanged: the runtime
     * answers 0x8013136F, which tells the user more than our own E_INVALIDARG would. Enabling
     * GC on attach makes the runtime wait up to attachTimeout ms for a background GC to end
     * (SetEventMask may then fail with 0x80131379). */
    g.event_mask = cd->has_mask ? cd->mask
                                : COR_PRF_MONITOR_GC | COR_PRF_MONITOR_EXCEPTIONS |
                                      COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_THREADS |
                                      COR_PRF_MONITOR_CLASS_LOADS | COR_PRF_MONITOR_MODULE_LOADS |
                                      COR_PRF_MONITOR_ASSEMBLY_LOADS;
    hr = ((set_event_mask_fn)vtbl_of(info)[INFO_SLOT_SET_EVENT_MASK])(info, g.event_mask);
    if (hr >= 0) {
        int r = write_report_locked();
        if (r < 0)
            hr = hresult_from_errno(-r);
    }
    /* On failure the runtime releases our callbacks and dlcloses us; drop its Info first. */
    if (hr < 0)
        release_info();
    pthread_mutex_unlock(&g.lock);
    return hr < 0 ? hr : S_OK;
}

static HRESULT cb_initialize_for_attach(struct com_object *self, void *info_unk, void *client_data,
                                        uint32_t client_data_len)
{
    struct clientdata cd;
    (void)self;

    /* The client data points into the IPC buffer, freed once the command is answered: parse
     * and copy it now. The parser enforces the 4096-byte cap before we copy anything. */
    if (clientdata_parse(client_data, client_data_len, &cd) < 0)
        return E_INVALIDARG;
    return probe_start(info_unk, &cd, client_data, client_data_len, false);
}

static HRESULT cb_profiler_attach_complete(struct com_object *self)
{
    (void)self;
    pthread_mutex_lock(&g.lock);
    g.attach_complete = true;
    (void)write_report_locked();
    pthread_mutex_unlock(&g.lock);
    reporter_start();
    return S_OK;
}

static HRESULT cb_profiler_detach_succeeded(struct com_object *self)
{
    (void)self;
    reporter_stop();
    pthread_mutex_lock(&g.lock);
    g.detached = true;
    (void)write_report_locked();
    release_info();
    pthread_mutex_unlock(&g.lock);
    return S_OK;
}

static HRESULT cb_shutdown(struct com_object *self)
{
    (void)self;
    reporter_stop();
    pthread_mutex_lock(&g.lock);
    if (g.info3)
        (void)write_report_locked();
    release_info();
    pthread_mutex_unlock(&g.lock);
    return S_OK;
}

/*
 * Startup loading: CORECLR_PROFILER in the environment, or clrattach's StartupProfiler command
 * to a runtime paused by DOTNET_DefaultDiagnosticPortSuspend=1. There is no client data, so the
 * report path comes from $CLRPROBE_OUT in the target's environment, checked by the same parser
 * as out= (absolute, no control bytes, capped). No ProfilerAttachComplete follows a startup
 * load, so the reporter starts here: no managed code has run yet, and our thread only touches
 * our own state until the runtime calls back.
 */
static HRESULT cb_initialize(struct com_object *self, void *info_unk)
{
    char spec[CLRPROBE_OUT_PATH_MAX + 8];
    struct clientdata cd = {0};
    const char *out;
    HRESULT hr;
    (void)self;

    /* secure_getenv: in a set-uid or file-capability process the environment belongs to the
     * less privileged caller, who must not choose where a privileged process writes. */
    out = secure_getenv("CLRPROBE_OUT");
    if (out && out[0] != '\0') {
        /* ';' would smuggle more keys (mask=, detach_after=) into the spec. */
        if (strchr(out, ';') ||
            (size_t)snprintf(spec, sizeof(spec), "out=%s", out) >= sizeof(spec) ||
            clientdata_parse(spec, strlen(spec), &cd) < 0)
            return E_INVALIDARG;
    }
    hr = probe_start(info_unk, &cd, NULL, 0, true);
    if (hr < 0)
        return hr;
    reporter_start();
    return S_OK;
}

/* ---- counted callbacks -------------------------------------------------------------------- */

typedef uintptr_t ID; /* ObjectID, ClassID, ModuleID, FunctionID, ThreadID, ... */
typedef int32_t BOOL;

#define COUNTED1(name, ctr, A)                                                                     \
    static HRESULT name(struct com_object *self, A a)                                              \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        count(ctr);                                                                                \
        return S_OK;                                                                               \
    }
#define COUNTED2(name, ctr, A, B)                                                                  \
    static HRESULT name(struct com_object *self, A a, B b)                                         \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        count(ctr);                                                                                \
        return S_OK;                                                                               \
    }

COUNTED2(cb_assembly_load_finished, C_ASSEMBLY_LOADS, ID, HRESULT)
COUNTED2(cb_module_load_finished, C_MODULE_LOADS, ID, HRESULT)
COUNTED2(cb_class_load_finished, C_CLASS_LOADS, ID, HRESULT)
COUNTED2(cb_jit_compilation_started, C_JIT, ID, BOOL)
COUNTED1(cb_thread_created, C_THREADS_CREATED, ID)
COUNTED1(cb_thread_destroyed, C_THREADS_DESTROYED, ID)
COUNTED1(cb_exception_thrown, C_EXCEPTIONS, ID)

static HRESULT cb_gc_started(struct com_object *self, int generations, BOOL *collected, int reason)
{
    (void)self;
    (void)generations;
    (void)collected;
    (void)reason;
    count(C_GC_STARTED);
    return S_OK;
}

static HRESULT cb_gc_finished(struct com_object *self)
{
    (void)self;
    count(C_GC_FINISHED);
    return S_OK;
}

/* Out-parameter callbacks only reached with mask bits we never set; answer the defaults. */
static HRESULT cb_jit_cached_search_started(struct com_object *self, ID fn, BOOL *use_cached)
{
    (void)self;
    (void)fn;
    if (use_cached)
        *use_cached = 1;
    return S_OK;
}

static HRESULT cb_jit_inlining(struct com_object *self, ID caller, ID callee, BOOL *inline_it)
{
    (void)self;
    (void)caller;
    (void)callee;
    (void)inline_it; /* the runtime pre-sets TRUE; leaving it alone keeps inlining as it was */
    return S_OK;
}

/* ---- no-op callbacks, each with its exact ICorProfilerCallback{,2,3} parameter list ------- */

#define STUB0(n)                                                                                   \
    static HRESULT n(struct com_object *self)                                                      \
    {                                                                                              \
        (void)self;                                                                                \
        return S_OK;                                                                               \
    }
#define STUB1(n, A)                                                                                \
    static HRESULT n(struct com_object *self, A a)                                                 \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        return S_OK;                                                                               \
    }
#define STUB2(n, A, B)                                                                             \
    static HRESULT n(struct com_object *self, A a, B b)                                            \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        return S_OK;                                                                               \
    }
#define STUB3(n, A, B, C)                                                                          \
    static HRESULT n(struct com_object *self, A a, B b, C c)                                       \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        (void)c;                                                                                   \
        return S_OK;                                                                               \
    }
#define STUB4(n, A, B, C, D)                                                                       \
    static HRESULT n(struct com_object *self, A a, B b, C c, D d)                                  \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        (void)c;                                                                                   \
        (void)d;                                                                                   \
        return S_OK;                                                                               \
    }
#define STUB5(n, A, B, C, D, E)                                                                    \
    static HRESULT n(struct com_object *self, A a, B b, C c, D d, E e)                             \
    {                                                                                              \
        (void)self;                                                                                \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        (void)c;                                                                                   \
        (void)d;                                                                                   \
        (void)e;                                                                                   \
        return S_OK;                                                                               \
    }

typedef const struct guid *REFGUID;
typedef struct guid *PGUID;

STUB1(cb_appdomain_creation_started, ID)
STUB2(cb_appdomain_creation_finished, ID, HRESULT)
STUB1(cb_appdomain_shutdown_started, ID)
STUB2(cb_appdomain_shutdown_finished, ID, HRESULT)
STUB1(cb_assembly_load_started, ID)
STUB1(cb_assembly_unload_started, ID)
STUB2(cb_assembly_unload_finished, ID, HRESULT)
STUB1(cb_module_load_started, ID)
STUB1(cb_module_unload_started, ID)
STUB2(cb_module_unload_finished, ID, HRESULT)
STUB2(cb_module_attached_to_assembly, ID, ID)
STUB1(cb_class_load_started, ID)
STUB1(cb_class_unload_started, ID)
STUB2(cb_class_unload_finished, ID, HRESULT)
STUB1(cb_function_unload_started, ID)
STUB3(cb_jit_compilation_finished, ID, HRESULT, BOOL)
STUB2(cb_jit_cached_search_finished, ID, int)
STUB1(cb_jit_function_pitched, ID)
STUB2(cb_thread_assigned_to_os_thread, ID, uint32_t)
STUB0(cb_remoting_client_invocation_started)
STUB2(cb_remoting_client_sending_message, PGUID, BOOL)
STUB2(cb_remoting_client_receiving_reply, PGUID, BOOL)
STUB0(cb_remoting_client_invocation_finished)
STUB2(cb_remoting_server_receiving_message, PGUID, BOOL)
STUB0(cb_remoting_server_invocation_started)
STUB0(cb_remoting_server_invocation_returned)
STUB2(cb_remoting_server_sending_reply, PGUID, BOOL)
STUB2(cb_unmanaged_to_managed_transition, ID, int)
STUB2(cb_managed_to_unmanaged_transition, ID, int)
STUB1(cb_runtime_suspend_started, int)
STUB0(cb_runtime_suspend_finished)
STUB0(cb_runtime_suspend_aborted)
STUB0(cb_runtime_resume_started)
STUB0(cb_runtime_resume_finished)
STUB1(cb_runtime_thread_suspended, ID)
STUB1(cb_runtime_thread_resumed, ID)
STUB4(cb_moved_references, uint32_t, ID *, ID *, uint32_t *)
STUB2(cb_object_allocated, ID, ID)
STUB3(cb_objects_allocated_by_class, uint32_t, ID *, uint32_t *)
STUB4(cb_object_references, ID, ID, uint32_t, ID *)
STUB2(cb_root_references, uint32_t, ID *)
STUB1(cb_exception_search_function_enter, ID)
STUB0(cb_exception_search_function_leave)
STUB1(cb_exception_search_filter_enter, ID)
STUB0(cb_exception_search_filter_leave)
STUB1(cb_exception_search_catcher_found, ID)
STUB1(cb_exception_os_handler_enter, uintptr_t)
STUB1(cb_exception_os_handler_leave, uintptr_t)
STUB1(cb_exception_unwind_function_enter, ID)
STUB0(cb_exception_unwind_function_leave)
STUB1(cb_exception_unwind_finally_enter, ID)
STUB0(cb_exception_unwind_finally_leave)
STUB2(cb_exception_catcher_enter, ID, ID)
STUB0(cb_exception_catcher_leave)
STUB4(cb_com_vtable_created, ID, REFGUID, void *, uint32_t)
STUB3(cb_com_vtable_destroyed, ID, REFGUID, void *)
STUB0(cb_exception_clr_catcher_found)
STUB0(cb_exception_clr_catcher_execute)
STUB3(cb_thread_name_changed, ID, uint32_t, WCHAR *)
STUB3(cb_surviving_references, uint32_t, ID *, uint32_t *)
STUB2(cb_finalizeable_object_queued, uint32_t, ID)
STUB5(cb_root_references2, uint32_t, ID *, int *, int *, uintptr_t *)
STUB2(cb_handle_created, ID, ID)
STUB1(cb_handle_destroyed, ID)

/* ---- the profiler object ------------------------------------------------------------------ */

/* One static object for the life of the mapping: the runtime holds several references (one per
 * QI and per derived interface version) and releases them on its own schedule, possibly after
 * a concurrent second attach got CORPROF_E_PROFILER_ALREADY_ACTIVE; never freeing is simplest
 * and cannot be double-freed. The count is kept only for COM's return values. */
static _Atomic uint32_t g_probe_refs = 1;

static uint32_t probe_add_ref(struct com_object *self)
{
    (void)self;
    return atomic_fetch_add(&g_probe_refs, 1) + 1;
}

static uint32_t probe_release(struct com_object *self)
{
    (void)self;
    uint32_t r = atomic_fetch_sub(&g_probe_refs, 1) - 1;
    return r ? r : 1;
}

static HRESULT probe_query_interface(struct com_object *self, const struct guid *iid, void **ppv);

/* The full ICorProfilerCallback3 table, slot by slot as in corprof.idl. Answering Callback3
 * commits us to all 83 entries being valid: the runtime derives the v1/v2 views from the same
 * pointer, so a short table would be called past its end. */
static const fnptr callback3_vtbl[] = {
    /*  0 */ F(probe_query_interface),
    F(probe_add_ref),
    F(probe_release),
    F(cb_initialize),
    F(cb_shutdown),
    /*  5 */ F(cb_appdomain_creation_started),
    F(cb_appdomain_creation_finished),
    F(cb_appdomain_shutdown_started),
    F(cb_appdomain_shutdown_finished),
    F(cb_assembly_load_started),
    /* 10 */ F(cb_assembly_load_finished),
    F(cb_assembly_unload_started),
    F(cb_assembly_unload_finished),
    F(cb_module_load_started),
    F(cb_module_load_finished),
    /* 15 */ F(cb_module_unload_started),
    F(cb_module_unload_finished),
    F(cb_module_attached_to_assembly),
    F(cb_class_load_started),
    F(cb_class_load_finished),
    /* 20 */ F(cb_class_unload_started),
    F(cb_class_unload_finished),
    F(cb_function_unload_started),
    F(cb_jit_compilation_started),
    F(cb_jit_compilation_finished),
    /* 25 */ F(cb_jit_cached_search_started),
    F(cb_jit_cached_search_finished),
    F(cb_jit_function_pitched),
    F(cb_jit_inlining),
    F(cb_thread_created),
    /* 30 */ F(cb_thread_destroyed),
    F(cb_thread_assigned_to_os_thread),
    F(cb_remoting_client_invocation_started),
    F(cb_remoting_client_sending_message),
    F(cb_remoting_client_receiving_reply),
    /* 35 */ F(cb_remoting_client_invocation_finished),
    F(cb_remoting_server_receiving_message),
    F(cb_remoting_server_invocation_started),
    F(cb_remoting_server_invocation_returned),
    F(cb_remoting_server_sending_reply),
    /* 40 */ F(cb_unmanaged_to_managed_transition),
    F(cb_managed_to_unmanaged_transition),
    F(cb_runtime_suspend_started),
    F(cb_runtime_suspend_finished),
    F(cb_runtime_suspend_aborted),
    /* 45 */ F(cb_runtime_resume_started),
    F(cb_runtime_resume_finished),
    F(cb_runtime_thread_suspended),
    F(cb_runtime_thread_resumed),
    F(cb_moved_references),
    /* 50 */ F(cb_object_allocated),
    F(cb_objects_allocated_by_class),
    F(cb_object_references),
    F(cb_root_references),
    F(cb_exception_thrown),
    /* 55 */ F(cb_exception_search_function_enter),
    F(cb_exception_search_function_leave),
    F(cb_exception_search_filter_enter),
    F(cb_exception_search_filter_leave),
    F(cb_exception_search_catcher_found),
    /* 60 */ F(cb_exception_os_handler_enter),
    F(cb_exception_os_handler_leave),
    F(cb_exception_unwind_function_enter),
    F(cb_exception_unwind_function_leave),
    F(cb_exception_unwind_finally_enter),
    /* 65 */ F(cb_exception_unwind_finally_leave),
    F(cb_exception_catcher_enter),
    F(cb_exception_catcher_leave),
    F(cb_com_vtable_created),
    F(cb_com_vtable_destroyed),
    /* 70 */ F(cb_exception_clr_catcher_found),
    F(cb_exception_clr_catcher_execute),
    F(cb_thread_name_changed), /* v2 */
    F(cb_gc_started),
    F(cb_surviving_references),
    /* 75 */ F(cb_gc_finished),
    F(cb_finalizeable_object_queued),
    F(cb_root_references2),
    F(cb_handle_created),
    F(cb_handle_destroyed),
    /* 80 */ F(cb_initialize_for_attach), /* v3 */
    F(cb_profiler_attach_complete),
    F(cb_profiler_detach_succeeded),
};
_Static_assert(ARRAY_SIZE(callback3_vtbl) == CALLBACK3_SLOTS, "ICorProfilerCallback3 has 83 slots");

static struct com_object g_probe = {callback3_vtbl};

static HRESULT probe_query_interface(struct com_object *self, const struct guid *iid, void **ppv)
{
    (void)self;
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (!iid)
        return E_INVALIDARG;
    if (com_is_callback3(iid)) {
        probe_add_ref(&g_probe);
        *ppv = &g_probe;
        return S_OK;
    }
    return E_NOINTERFACE;
}

/* ---- class factory ------------------------------------------------------------------------ */

static HRESULT probe_create(const struct guid *iid, void **ppv)
{
    return probe_query_interface(&g_probe, iid, ppv);
}

static struct com_factory g_factory = {com_factory_vtbl, probe_create};

/* The only exported symbol (com.h checks the CLSID: CLRPROBE_CLSID is the one source). */
EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv);

EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv)
{
    return com_get_class_object(rclsid, riid, ppv, CLRPROBE_CLSID, &g_factory);
}
