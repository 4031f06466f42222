/* SPDX-License-Identifier: Apache-2.0 */
/* Lookups in a /proc/<pid>/environ block, and the TMPDIR the runtime would take from it. Pure:
 * no I/O. */
#include "target/proc_environ.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/render.h"

const char *proc_environ_diagnostics_off(const char *buf, size_t len)
{
    static const char *const names[] = {"DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics",
                                        "DOTNET_EnableDiagnostics_IPC",
                                        "COMPlus_EnableDiagnostics_IPC"};
    enum { N = sizeof(names) / sizeof(names[0]) };
    if (!buf)
        return NULL;
    const char *v[N];
    size_t vlen[N];
    proc_environ_get_many(buf, len, names, N, v, vlen);
    /* /proc/<pid>/environ is the environment as it was at execve: what the runtime read when it
     * started, not a variable the process set later. */
    for (size_t i = 0; i < N; i++)
        if (v[i] && vlen[i] == 1 && v[i][0] == '0')
            return names[i];
    return NULL;
}

void proc_environ_get_many(const char *buf, size_t len, const char *const *names, size_t n,
                           const char **values, size_t *lens)
{
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        const char *ve = z ? z : end;
        size_t elen = (size_t)(ve - p);
        /* A last entry without its NUL (the file cut at our read cap) still counts. */
        for (size_t i = 0; i < n; i++) {
            size_t nlen = strlen(names[i]);
            if (elen > nlen && p[nlen] == '=' && memcmp(p, names[i], nlen) == 0) {
                values[i] = p + nlen + 1;
                lens[i] = elen - nlen - 1;
            }
        }
        if (!z)
            break;
        p = z + 1;
    }
}

int proc_environ_get(const char *buf, size_t len, const char *name, const char **ret_value,
                     size_t *ret_len)
{
    const char *v;
    size_t vlen = 0;
    proc_environ_get_many(buf, len, &name, 1, &v, &vlen);
    if (!v)
        return 0;
    *ret_value = v;
    *ret_len = vlen;
    return 1;
}

/* Is there a "." or ".." component in the absolute path v[0..len)? Returns the one found
 * (".", "..") or NULL. */
static const char *dot_component(const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && v[i] == '/')
            i++;
        size_t start = i;
        while (i < len && v[i] != '/')
            i++;
        size_t n = i - start;
        if (n == 1 && v[start] == '.')
            return ".";
        if (n == 2 && v[start] == '.' && v[start + 1] == '.')
            return "..";
    }
    return NULL;
}

int proc_tmpdir_from_environ(const char *env, size_t env_len, char *out, size_t size,
                             struct cla_error *e)
{
    const char *v;
    size_t vlen;
    if (!proc_environ_get(env, env_len, "TMPDIR", &v, &vlen) || vlen == 0) {
        v = "/tmp/";
        vlen = 5;
    }
    /* The runtime would use such a TMPDIR as it is, but it is the target's text: it reaches our
     * messages, paths we print and paths we write under. Anything a terminal would act upon or
     * hide (render.h), and any "." or ".." (a path that says one place and resolves to another),
     * is refused here, before any of it is used; the value is quoted rendered. */
    char shown[160];
    size_t at;
    uint32_t cp;
    enum render_class c = render_find(v, vlen, &at, &cp);
    if (c != RENDER_SAFE) {
        render_text(v, vlen, shown, sizeof(shown));
        if (c == RENDER_INVALID)
            return err_set(e, -EPROTO, "the target's TMPDIR '%s' is not valid UTF-8 at byte %zu",
                           shown, at);
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' holds %s U+%04X at byte %zu", shown,
                       render_class_name(c), (unsigned)cp, at);
    }
    if (v[0] != '/') {
        render_text(v, vlen, shown, sizeof(shown));
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' is not an absolute path", shown);
    }
    const char *dot = dot_component(v, vlen);
    if (dot) {
        render_text(v, vlen, shown, sizeof(shown));
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' has a '%s' component", shown, dot);
    }
    bool slash = v[vlen - 1] == '/';
    if (vlen + (slash ? 0 : 1) + 1 > size)
        return err_set(e, -ENAMETOOLONG, "the target's TMPDIR of %zu bytes is too long", vlen);
    memcpy(out, v, vlen);
    if (!slash)
        out[vlen++] = '/';
    out[vlen] = '\0';
    return 0;
}
