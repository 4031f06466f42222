/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libvendorprof.so: a test profiler shaped like the vendor ones (CLR Instrumentation Engine,
 * Datadog, OpenTelemetry, ...), for the end-to-end tests of profiler directories. Like them it
 *   - finds its own files relative to its own path (dladdr): it refuses to start without the
 *     sibling `vendor.conf`;
 *   - needs a sibling library through DT_NEEDED, found by RUNPATH $ORIGIN/lib
 *     (lib/libvendorhelper.so);
 *   - takes client data that may name files that must exist in the target's view (conf=).
 * It can also misbehave on request, as real profilers were seen to: fail InitializeForAttach
 * (mode=fail), or fail it and crash the process from a thread left behind (mode=crash).
 *
 * Built with -DVENDOR_INERT it is startup-only, shaped like OpenTelemetry's .NET profiler (and
 * given its CLSID and file name by vendorprof.mk, so that attach's table of known no-op
 * profilers names it): InitializeForAttach returns S_OK and does nothing, Initialize starts it
 * (report at the default path, no client data at startup).
 *
 * Its settings come from the environment, as vendor profilers' do: VENDOR_SETTING_A ..
 * VENDOR_SETTING_Z, read through ICorProfilerInfo11::GetEnvironmentVariable (the runtime's own
 * view, where the diagnostic command SetEnvironmentVariable writes) into the report's "settings",
 * and with getenv() (the C library's copy) into "settings_libc": the proof that `attach --env`
 * reached the profiler, and through which door.
 *
 * Client data: `key=value` pairs separated by ';': mode=ok|fail|crash, out=<absolute report
 * path> (default /tmp/vendorprof-<pid>.json), conf=<absolute path of a config that must exist>,
 * any other key is ignored (pad= makes large client data). The report is one JSON object.
 *
 * The event mask stays 0, so the runtime calls no callback past the attach ones and Shutdown.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../../profiler/com.h"
#include "../../profiler/corprof.h"
#include "vendorhelper.h"

#define EXPORT        __attribute__((visibility("default")))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifdef VENDOR_INERT
/* OpenTelemetry's: src/OpenTelemetry.AutoInstrumentation.Native/dllmain.cpp. */
#define VENDORPROF_CLSID "{918728DD-259F-4A6A-AC2B-B85E1B658318}"
#else
#define VENDORPROF_CLSID "{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}"
#endif
#define CLIENT_DATA_MAX 65535
#define PATH_MAX_       1024
#define CONF_MAX        4096

/* CORPROF_E_PROFILER_CANCEL_ACTIVATION: what CLRIE answers when it gives up. */
#define CORPROF_E_PROFILER_CANCEL_ACTIVATION ((HRESULT)0x80131375)

enum mode { MODE_OK, MODE_FAIL, MODE_CRASH };

struct options {
    enum mode mode;
    char out[PATH_MAX_];
    char conf[PATH_MAX_];
};

/* Copies the value [v, end) into dst as a C string; absolute paths without control bytes. */
static int take_path(const char *v, const char *end, char *dst, size_t size)
{
    size_t n = (size_t)(end - v);
    if (n == 0 || n >= size || v[0] != '/')
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return -EINVAL;
    memcpy(dst, v, n);
    dst[n] = '\0';
    return 0;
}

static int parse_options(const char *buf, size_t len, struct options *o)
{
    memset(o, 0, sizeof(*o));
    if (len > CLIENT_DATA_MAX)
        return -E2BIG;
    if (len > 0 && buf[len - 1] == '\0')
        len--;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *pe = semi ? semi : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        if (!eq)
            return -EINVAL;
        size_t klen = (size_t)(eq - p);
        const char *v = eq + 1;
        size_t vlen = (size_t)(pe - v);
        if (klen == 4 && memcmp(p, "mode", 4) == 0) {
            if (vlen == 2 && memcmp(v, "ok", 2) == 0)
                o->mode = MODE_OK;
            else if (vlen == 4 && memcmp(v, "fail", 4) == 0)
                o->mode = MODE_FAIL;
            else if (vlen == 5 && memcmp(v, "crash", 5) == 0)
                o->mode = MODE_CRASH;
            else
                return -EINVAL;
        } else if (klen == 3 && memcmp(p, "out", 3) == 0) {
            if (take_path(v, pe, o->out, sizeof(o->out)) < 0)
                return -EINVAL;
        } else if (klen == 4 && memcmp(p, "conf", 4) == 0) {
            if (take_path(v, pe, o->conf, sizeof(o->conf)) < 0)
                return -EINVAL;
        }
        p = semi ? semi + 1 : end;
    }
    return 0;
}

/* Reads the first line of a small text file into out. Returns 0 or -errno. */
static int read_first_line(const char *path, char *out, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    char buf[CONF_MAX];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int err = errno;
    close(fd);
    if (n < 0)
        return -err;
    buf[n] = '\0';
    size_t i = 0;
    for (; i + 1 < size && buf[i] && buf[i] != '\n'; i++)
        out[i] = (unsigned char)buf[i] < 0x20 || buf[i] == '"' || buf[i] == '\\' ? '?' : buf[i];
    out[i] = '\0';
    return 0;
}

/* JSON-safe copy of a path (ours, or from client data already checked for control bytes). */
static void json_safe(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; i + 1 < size && in[i]; i++)
        out[i] = in[i] == '"' || in[i] == '\\' ? '?' : in[i];
    out[i] = '\0';
}

/* ICorProfilerInfo11 (corprof.idl), asked of the runtime's Info object for its environment. */
static const struct guid iid_info11 = {
    0x06398876, 0x8987, 0x4154, {0xB6, 0x21, 0x40, 0xA0, 0x0D, 0x6E, 0x4D, 0x04}};
#define INFO11_SLOT_GET_ENV 99
typedef HRESULT (*qi_fn)(void *self, const struct guid *iid, void **ppv);
typedef uint32_t (*release_fn)(void *self);
typedef HRESULT (*get_env_fn)(void *self, const uint16_t *name, uint32_t cch, uint32_t *pcch,
                              uint16_t *value);

/* The Info object of the current Initialize / InitializeForAttach call, NULL outside it. */
static void *g_info_unk;

/* Appends `"NAME":"value",` to out (JSON-safe: ASCII kept, the rest '?'). */
static void add_setting(char *out, size_t size, const char *name, const char *value)
{
    size_t len = strlen(out);
    char v[256];
    size_t i = 0;
    for (; i + 1 < sizeof(v) && value[i]; i++)
        v[i] = (unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e ||
                       value[i] == '"' || value[i] == '\\'
                   ? '?'
                   : value[i];
    v[i] = '\0';
    snprintf(out + len, size - len, "%s\"%s\":\"%s\"", len > 1 ? "," : "", name, v);
}

/* The variables OpenTelemetry's managed half reads to decide whether to start (clrattach's
 * vendors.c sends them with a startup load of this variant): the report's "vendor_settings". */
static const char *const vendor_names[] = {
    "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",      "CORECLR_PROFILER_PATH",
    "CORECLR_PROFILER_PATH_64", "OTEL_DOTNET_AUTO_HOME",
};

/* {"VENDOR_SETTING_A":"..",...} (or with `vendor`, vendor_names) from the runtime's environment
 * (Info11) or getenv(). */
static void read_settings(void *info_unk, char *out, size_t size, bool libc, bool vendor)
{
    void *info11 = NULL;
    snprintf(out, size, "{");
    if (!libc &&
        (!info_unk || ((qi_fn)(*(void ***)info_unk)[0])(info_unk, &iid_info11, &info11) < 0 ||
         !info11)) {
        snprintf(out, size, "null");
        return;
    }
    for (size_t k = 0; k < (vendor ? ARRAY_SIZE(vendor_names) : 26); k++) {
        char name[32];
        if (vendor)
            snprintf(name, sizeof(name), "%s", vendor_names[k]);
        else
            snprintf(name, sizeof(name), "VENDOR_SETTING_%c", (char)('A' + k));
        if (libc) {
            const char *v = getenv(name);
            if (v)
                add_setting(out, size, name, v);
            continue;
        }
        uint16_t wname[32], wvalue[256];
        char value[256];
        size_t i = 0;
        for (; name[i]; i++)
            wname[i] = (uint16_t)name[i];
        wname[i] = 0;
        uint32_t n = 0;
        get_env_fn get = (get_env_fn)(*(void ***)info11)[INFO11_SLOT_GET_ENV];
        if (get(info11, wname, 256, &n, wvalue) < 0 || n == 0)
            continue;
        /* The count may or may not include the NUL: stop at either. */
        for (i = 0; i < n && i < 256 && i + 1 < sizeof(value) && wvalue[i]; i++)
            value[i] = wvalue[i] < 0x80 ? (char)wvalue[i] : '?';
        value[i] = '\0';
        add_setting(out, size, name, value);
    }
    size_t len = strlen(out);
    snprintf(out + len, size - len, "}");
    if (info11)
        ((release_fn)(*(void ***)info11)[2])(info11);
}

static int write_report(const char *path, const char *text)
{
    char tmp[PATH_MAX_ + 16];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            return -err;
        }
        off += (size_t)w;
    }
    close(fd);
    return rename(tmp, path) < 0 ? -errno : 0;
}

/* Left behind by mode=crash: the runtime unloads a profiler whose InitializeForAttach failed,
 * and a thread of it that is still running takes the process down, as seen with real ones. */
static void *crasher(void *arg)
{
    (void)arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 40 * 1000000L};
    nanosleep(&ts, NULL);
    void (*volatile jump)(void) = NULL;
    jump(); /* SIGSEGV at address 0, outside managed code: the runtime lets it kill */
    return NULL;
}

static void leave_crasher(void)
{
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&t, NULL, crasher, NULL) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static HRESULT start(const void *client_data, uint32_t client_data_len)
{
    struct options o;
    if (parse_options(client_data, client_data_len, &o) < 0)
        return E_INVALIDARG;
    if (o.out[0] == '\0')
        snprintf(o.out, sizeof(o.out), "/tmp/vendorprof-%d.json", (int)getpid());

    /* Where am I? Real profilers find their configuration and plugins this way. */
    Dl_info di;
    if (!dladdr((void *)start, &di) || !di.dli_fname || di.dli_fname[0] != '/')
        return E_FAIL;
    char self[PATH_MAX_], dir[PATH_MAX_], sibling[PATH_MAX_ + 16];
    json_safe(di.dli_fname, self, sizeof(self));
    snprintf(dir, sizeof(dir), "%s", self);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    snprintf(sibling, sizeof(sibling), "%s/vendor.conf", dir);
    char conf_line[256], extra_line[256] = "";
    int r = read_first_line(sibling, conf_line, sizeof(conf_line));
    if (r < 0)
        return HRESULT_FROM_WIN32(2); /* ERROR_FILE_NOT_FOUND, as a missing config is */
    if (o.conf[0] && read_first_line(o.conf, extra_line, sizeof(extra_line)) < 0)
        return HRESULT_FROM_WIN32(2);

    char conf_safe[PATH_MAX_];
    json_safe(o.conf, conf_safe, sizeof(conf_safe));
    char settings[26 * 300], settings_libc[26 * 300], vendor[6 * 300], vendor_libc[6 * 300];
    read_settings(g_info_unk, settings, sizeof(settings), false, false);
    read_settings(NULL, settings_libc, sizeof(settings_libc), true, false);
    read_settings(g_info_unk, vendor, sizeof(vendor), false, true);
    read_settings(NULL, vendor_libc, sizeof(vendor_libc), true, true);
    char report[4 * PATH_MAX_ + 2 * sizeof(settings) + 2 * sizeof(vendor) + 1024];
    snprintf(report, sizeof(report),
             "{\"pid\":%d,\"self\":\"%s\",\"config\":\"%s\",\"conf_path\":\"%s\","
             "\"conf\":\"%s\",\"helper\":\"%s\",\"client_data_len\":%u,\"settings\":%s,"
             "\"settings_libc\":%s,\"vendor_settings\":%s,\"vendor_settings_libc\":%s,"
             "\"mode\":\"%s\"}\n",
             (int)getpid(), self, conf_line, conf_safe, extra_line, vendorhelper_version(),
             client_data_len, settings, settings_libc, vendor, vendor_libc,
             o.mode == MODE_OK     ? "ok"
             : o.mode == MODE_FAIL ? "fail"
                                   : "crash");
    if (write_report(o.out, report) < 0)
        return HRESULT_FROM_WIN32(5);
    if (o.mode == MODE_FAIL)
        return E_FAIL;
    if (o.mode == MODE_CRASH) {
        leave_crasher();
        return CORPROF_E_PROFILER_CANCEL_ACTIVATION;
    }
    return S_OK;
}

/* ---- ICorProfilerCallback3 ---------------------------------------------------------------- */

static HRESULT cb_initialize_for_attach(struct com_object *self, void *info_unk, void *client_data,
                                        uint32_t client_data_len)
{
    (void)self;
    /* A real profiler would query ICorProfilerInfo here; proving the load needs none of it. */
#ifdef VENDOR_INERT
    (void)info_unk;
    /* OpenTelemetry's base class: S_OK, and nothing starts. */
    (void)client_data;
    (void)client_data_len;
    return S_OK;
#else
    g_info_unk = info_unk;
    HRESULT hr = start(client_data, client_data_len);
    g_info_unk = NULL;
    return hr;
#endif
}

static HRESULT cb_initialize(struct com_object *self, void *info_unk)
{
    (void)self;
    (void)info_unk;
#ifdef VENDOR_INERT
    g_info_unk = info_unk;
    HRESULT hr = start(NULL, 0);
    g_info_unk = NULL;
    return hr;
#else
    /* Startup loading is not what these tests are about. */
    return E_FAIL;
#endif
}

static HRESULT cb_no_args(struct com_object *self)
{
    (void)self;
    return S_OK;
}

/*
 * Every other slot. With the event mask at 0 the runtime calls none of them (only Initialize,
 * InitializeForAttach, ProfilerAttachComplete, ProfilerDetachSucceeded and Shutdown, all of
 * which take no argument beyond `self` or have their own function above); they are filled so
 * that a call through a wrong slot ends in S_OK rather than a jump to NULL.
 */
static HRESULT cb_unused(struct com_object *self)
{
    (void)self;
    return S_OK;
}

static uint32_t obj_add_ref(struct com_object *self)
{
    (void)self;
    return 2;
}

static uint32_t obj_release(struct com_object *self)
{
    (void)self;
    return 1;
}

static struct com_object g_obj;

static HRESULT obj_query_interface(struct com_object *self, const struct guid *iid, void **ppv)
{
    (void)self;
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (!iid)
        return E_INVALIDARG;
    if (com_is_callback3(iid)) {
        *ppv = &g_obj;
        return S_OK;
    }
    return E_NOINTERFACE;
}

static fnptr callback3_vtbl[CALLBACK3_SLOTS];

__attribute__((constructor)) static void fill_vtable(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(callback3_vtbl); i++)
        callback3_vtbl[i] = F(cb_unused);
    callback3_vtbl[0] = F(obj_query_interface);
    callback3_vtbl[1] = F(obj_add_ref);
    callback3_vtbl[2] = F(obj_release);
    callback3_vtbl[3] = F(cb_initialize);
    callback3_vtbl[4] = F(cb_no_args); /* Shutdown */
    callback3_vtbl[80] = F(cb_initialize_for_attach);
    callback3_vtbl[81] = F(cb_no_args); /* ProfilerAttachComplete */
    callback3_vtbl[82] = F(cb_no_args); /* ProfilerDetachSucceeded */
    g_obj.vtbl = callback3_vtbl;
}

/* ---- class factory ------------------------------------------------------------------------ */

static HRESULT obj_create(const struct guid *iid, void **ppv)
{
    return obj_query_interface(&g_obj, iid, ppv);
}

static struct com_factory g_factory = {com_factory_vtbl, obj_create};

EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv);

EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv)
{
    return com_get_class_object(rclsid, riid, ppv, VENDORPROF_CLSID, &g_factory);
}
