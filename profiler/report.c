/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe's JSON report: formatting (pure) and the atomic file replacement. Hand-written JSON
 * keeps the probe free of library dependencies, which matters because it is loaded into a
 * foreign process that may run on musl or glibc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/base/bounds.h"
#include "clrprobe.h"
#include "corprof.h"
#include "report.h"

static int put(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int put(char *buf, size_t cap, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*pos >= cap)
        return -E2BIG;
    va_start(ap, fmt);
    n = vsnprintf(buf + *pos, cap - *pos, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *pos)
        return -E2BIG;
    *pos += (size_t)n;
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0..len), or 0. Overlong forms, surrogates and code
 * points above U+10FFFF are invalid (RFC 3629): a JSON consumer may reject them outright. */
static size_t utf8_seq_len(const unsigned char *s, size_t len)
{
    size_t n;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
        cp = s[0] & 0x1Fu;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        cp = s[0] & 0x0Fu;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

int report_escape(const void *s, size_t len, char *buf, size_t cap, size_t *pos)
{
    const unsigned char *p = s;
    size_t i = 0;
    int r;

    while (i < len) {
        unsigned char c = p[i];
        size_t n;

        if (c == '"' || c == '\\') {
            r = put(buf, cap, pos, "\\%c", c);
            n = 1;
        } else if (c < 0x20 || c == 0x7f) {
            r = put(buf, cap, pos, "\\u%04x", c);
            n = 1;
        } else if ((n = utf8_seq_len(p + i, len - i)) > 0) {
            r = put(buf, cap, pos, "%.*s", (int)n, (const char *)p + i);
        } else {
            /* One replacement per bad byte, so the output length stays bounded by 6x input. */
            r = put(buf, cap, pos, "\\ufffd");
            n = 1;
        }
        if (r < 0)
            return r;
        i += n;
    }
    return 0;
}

static const char *runtime_type_name(int t)
{
    switch (t) {
    case 1: return "DesktopCLR";
    case COR_PRF_CORE_CLR: return "CoreCLR";
    default: return "unknown";
    }
}

int report_format(const struct report *r, char *buf, size_t cap)
{
    const struct report_counters *c = &r->counters;
    const char *ver = r->runtime_version ? r->runtime_version : "";
    size_t pos = 0;
    int k;

    k = put(buf, cap, &pos,
            "{\"probe\":\"clrprobe\",\"version\":\"%s\",\"pid\":%d,\"clsid\":\"%s\","
            "\"load\":\"%s\",\"attach_unix_ms\":%lld,\"updated_unix_ms\":%lld,"
            "\"runtime\":{\"type\":\"%s\",\"major\":%u,\"minor\":%u,\"build\":%u,\"qfe\":%u,"
            "\"version\":\"",
            CLRPROBE_VERSION, r->pid, CLRPROBE_CLSID, r->startup ? "startup" : "attach",
            (long long)r->attach_unix_ms, (long long)r->updated_unix_ms,
            runtime_type_name(r->runtime_type), r->major, r->minor, r->build, r->qfe);
    if (k >= 0)
        k = report_escape(ver, strlen(ver), buf, cap, &pos);
    if (k >= 0)
        k = put(buf, cap, &pos, "\"},\"event_mask\":\"0x%08x\",\"client_data\":\"", r->event_mask);
    if (k >= 0)
        k = report_escape(r->client_data, r->client_data_len, buf, cap, &pos);
    if (k >= 0)
        k = put(buf, cap, &pos,
                "\",\"counters\":{\"gc_started\":%llu,\"gc_finished\":%llu,"
                "\"exceptions_thrown\":%llu,\"jit_compilations\":%llu,"
                "\"threads_created\":%llu,\"threads_destroyed\":%llu,\"class_loads\":%llu,"
                "\"module_loads\":%llu,\"assembly_loads\":%llu},"
                "\"attach_complete\":%s,\"detached\":%s}\n",
                (unsigned long long)c->gc_started, (unsigned long long)c->gc_finished,
                (unsigned long long)c->exceptions_thrown, (unsigned long long)c->jit_compilations,
                (unsigned long long)c->threads_created, (unsigned long long)c->threads_destroyed,
                (unsigned long long)c->class_loads, (unsigned long long)c->module_loads,
                (unsigned long long)c->assembly_loads, r->attach_complete ? "true" : "false",
                r->detached ? "true" : "false");
    if (k < 0)
        return k;
    return (int)pos;
}

int report_write_atomic(const char *path, const char *buf, size_t len)
{
    char tmp[CLRPROBE_OUT_PATH_MAX + 16];
    int fd, r = 0;

    /* The temporary sits in the report's own directory so rename(2) stays on one filesystem;
     * mkostemp's O_EXCL means a planted file or symlink under that name is never followed. */
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EIO;
            break;
        }
        done += (size_t)n;
    }
    /* No fsync: the report is rewritten every 200 ms and only has to survive the process,
     * not a power cut; syncing that often would cost the target real I/O. */
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    return r;
}
