/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libclrenvload.so: the env loader. The runtime loads it as the profiler (path = the loader,
 * CLSID = the real profiler's); its DllGetClassObject setenv()s the variables of clrenvload.conf
 * beside it, then loads the real profiler and forwards the call to it (docs/profiler.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corprof.h"
#include "envload_conf.h"

#define EXPORT               __attribute__((visibility("default")))
#define ERROR_MOD_NOT_FOUND  126 /* what the runtime answers when its own dlopen() fails */
#define ERROR_PROC_NOT_FOUND 127 /* ... and when the library lacks DllGetClassObject */
#define PATH_BYTES           4096

typedef HRESULT (*gco_fn)(const struct guid *rclsid, const struct guid *riid, void **ppv);

/* Set once by load(), under g_once: the outcome, and the real entry point on success. */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static HRESULT g_hr = E_FAIL;
static gco_fn g_real;

/* One line on stderr in a single write(2): "clrenvload: WHAT: WHY". Returns hr. */
static HRESULT say(HRESULT hr, const char *what, const char *why)
{
    char line[2 * PATH_BYTES];
    int n = snprintf(line, sizeof(line), "clrenvload: %s: %s\n", what, why);
    if (n < 0)
        return hr;
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    return hr;
}

/* Reads the settings file whole: a regular file, at most ENVLOAD_CONF_MAX + 1 bytes (one more
 * than the cap, so that the parser sees an oversized file as such). NULL with *ret_why set. */
static char *read_conf(const char *path, size_t *ret_len, const char **ret_why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        *ret_why = strerror(errno);
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    if (fstat(fd, &st) < 0) {
        *ret_why = strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        *ret_why = "not a regular file";
    } else if (!(buf = malloc(ENVLOAD_CONF_MAX + 1))) {
        *ret_why = strerror(ENOMEM);
    } else {
        while (len < ENVLOAD_CONF_MAX + 1) {
            ssize_t r = read(fd, buf + len, ENVLOAD_CONF_MAX + 1 - len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                *ret_why = strerror(errno);
                free(buf);
                buf = NULL;
                break;
            }
            if (r == 0)
                break;
            len += (size_t)r;
        }
    }
    close(fd);
    *ret_len = len;
    return buf;
}

/* The variables set, then the real profiler loaded: its DllGetClassObject, or a failed HRESULT
 * with the cause on stderr. conf is the parsed buffer, turned into C strings in place. */
static HRESULT apply(char *buf, const struct envload_conf *c, const char *dir, const char *conf)
{
    char msg[PATH_BYTES + 64];
    char path[PATH_BYTES];
    const char *rel = buf + c->profiler.off;
    buf[c->profiler.off + c->profiler.len] = '\0';
    int n = rel[0] == '/' ? snprintf(path, sizeof(path), "%s", rel)
                          : snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= sizeof(path))
        return say(E_FAIL, conf, "the profiler's path is too long once joined to the directory");
    for (size_t i = 0; i < c->nvars; i++) {
        buf[c->name[i].off + c->name[i].len] = '\0';
        const char *v = buf + c->value[i].off;
        size_t need = envload_expand(v, c->value[i].len, dir, path, NULL, 0) + 1;
        char *value = malloc(need);
        if (!value)
            return say(E_FAIL, conf, strerror(ENOMEM));
        envload_expand(v, c->value[i].len, dir, path, value, need);
        int r = setenv(buf + c->name[i].off, value, 1);
        free(value);
        if (r < 0) {
            snprintf(msg, sizeof(msg), "%s: setenv %s", conf, buf + c->name[i].off);
            return say(E_FAIL, msg, strerror(errno));
        }
    }

    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return say(HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND), "cannot load the profiler",
                   why ? why : path);
    }
    /* Never dlclose()d: the runtime holds objects from it for as long as the process runs, or
     * until a detach, after which it unloads only the loader. */
    gco_fn real = (gco_fn)dlsym(h, "DllGetClassObject");
    Dl_info self, other;
    if (!real)
        return say(HRESULT_FROM_WIN32(ERROR_PROC_NOT_FOUND), path, "no DllGetClassObject");
    if (dladdr((void *)say, &self) && dladdr((void *)real, &other) &&
        self.dli_fbase == other.dli_fbase)
        return say(E_FAIL, path, "names the loader itself");
    g_real = real;
    return S_OK;
}

/* Finds the settings file beside this library, reads and parses it, and applies it. */
static void load(void)
{
    Dl_info self;
    if (!dladdr((void *)load, &self) || !self.dli_fname) {
        g_hr = say(E_FAIL, "dladdr", "cannot find the loader's own path");
        return;
    }
    char dir[PATH_BYTES], conf[PATH_BYTES + sizeof(ENVLOAD_CONF_NAME)];
    const char *slash = strrchr(self.dli_fname, '/');
    size_t dl = slash ? (size_t)(slash - self.dli_fname) : 1;
    if (dl >= sizeof(dir)) {
        g_hr = say(E_FAIL, self.dli_fname, "the loader's path is too long");
        return;
    }
    memcpy(dir, slash ? self.dli_fname : ".", dl);
    dir[dl] = '\0';
    snprintf(conf, sizeof(conf), "%s/%s", dir, ENVLOAD_CONF_NAME);

    size_t len = 0;
    const char *why = NULL;
    char *buf = read_conf(conf, &len, &why);
    if (!buf) {
        g_hr = say(E_FAIL, conf, why);
        return;
    }
    struct envload_conf c;
    struct envload_error err = {0, NULL};
    if (envload_conf_parse(buf, len, &c, &err) < 0) {
        char where[sizeof(conf) + 32];
        if (err.line)
            snprintf(where, sizeof(where), "%s: line %u", conf, err.line);
        else
            snprintf(where, sizeof(where), "%s", conf);
        g_hr = say(E_FAIL, where, err.why);
    } else {
        g_hr = apply(buf, &c, dir, conf);
    }
    free(buf); /* setenv() copied what it keeps */
}

EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv);

/* Forwards to the real profiler unchanged, CLSID included; it decides what it serves. */
EXPORT HRESULT DllGetClassObject(const struct guid *rclsid, const struct guid *riid, void **ppv)
{
    pthread_once(&g_once, load);
    if (g_hr < 0) {
        if (ppv)
            *ppv = NULL;
        return g_hr;
    }
    return g_real(rclsid, riid, ppv);
}
