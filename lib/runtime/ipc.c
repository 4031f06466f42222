/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnostic IPC frames: GUIDs, the requests we send (attach, startup profiler, perf map,
 * startup hook, environment) encoded into a caller's buffer, and the replies decoded from one.
 * Pure: no I/O. */
#include "runtime/ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/bounds.h"

/* 13 ASCII bytes and the NUL: the runtime compares with strcmp, so the NUL is required. */
static const uint8_t ipc_magic[14] = {'D', 'O', 'T', 'N', 'E', 'T', '_',
                                      'I', 'P', 'C', '_', 'V', '1', 0};

/* A little writer over a caller buffer; `err` latches the first overflow. */
struct writer {
    uint8_t *buf;
    size_t size;
    size_t pos;
    bool overflow;
};

static void put_bytes(struct writer *w, const void *p, size_t n)
{
    if (w->overflow || n > w->size - w->pos) {
        w->overflow = true;
        return;
    }
    memcpy(w->buf + w->pos, p, n);
    w->pos += n;
}

static void put_u16(struct writer *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put_bytes(w, b, 2);
}

static void put_u32(struct writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put_bytes(w, b, 4);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ipc_guid_parse(const char *s, struct ipc_guid *ret_guid)
{
    if (!s)
        return -EINVAL;
    size_t len = strlen(s);
    if (len == 38 && s[0] == '{' && s[37] == '}') {
        s++;
        len = 36;
    }
    if (len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
        return -EINVAL;
    /* 32 hex digits in text order; the first three groups are stored little-endian. */
    uint8_t t[16];
    size_t n = 0;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            continue;
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        t[n++] = (uint8_t)(hi << 4 | lo);
        i++;
    }
    struct ipc_guid g = {{t[3], t[2], t[1], t[0], t[5], t[4], t[7], t[6], t[8], t[9], t[10], t[11],
                          t[12], t[13], t[14], t[15]}};
    *ret_guid = g;
    return 0;
}

void ipc_guid_format(const struct ipc_guid *g, char out[39])
{
    static const char hex[] = "0123456789ABCDEF";
    static const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    size_t o = 0;
    out[o++] = '{';
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        uint8_t b = g->b[order[i]];
        out[o++] = hex[b >> 4];
        out[o++] = hex[b & 0xF];
    }
    out[o++] = '}';
    out[o] = '\0';
}

static void put_header(struct writer *w, uint8_t set, uint8_t id)
{
    put_bytes(w, ipc_magic, sizeof(ipc_magic));
    put_u16(w, 0); /* size, patched by finish_frame() */
    put_bytes(w, &set, 1);
    put_bytes(w, &id, 1);
    put_u16(w, 0);
}

static int finish_frame(struct writer *w, struct cla_error *e)
{
    if (w->overflow)
        return err_set(e, -ENOBUFS, "ipc: frame does not fit the %zu-byte buffer", w->size);
    if (w->pos > IPC_MAX_MESSAGE)
        return err_set(e, -E2BIG, "ipc: frame of %zu bytes exceeds the protocol's %d", w->pos,
                       IPC_MAX_MESSAGE);
    w->buf[14] = (uint8_t)w->pos;
    w->buf[15] = (uint8_t)(w->pos >> 8);
    return (int)w->pos;
}

/* Decodes one UTF-8 code point at s[*i]; rejects overlongs, surrogates and > U+10FFFF. */
static int utf8_next(const unsigned char *s, size_t len, size_t *i, uint32_t *ret_cp)
{
    unsigned char c = s[*i];
    uint32_t cp;
    size_t n;
    if (c < 0x80) {
        *ret_cp = c;
        (*i)++;
        return 0;
    } else if ((c & 0xE0) == 0xC0) {
        cp = c & 0x1F;
        n = 1;
    } else if ((c & 0xF0) == 0xE0) {
        cp = c & 0x0F;
        n = 2;
    } else if ((c & 0xF8) == 0xF0) {
        cp = c & 0x07;
        n = 3;
    } else {
        return -EINVAL;
    }
    if (len - *i <= n)
        return -EINVAL;
    for (size_t k = 1; k <= n; k++) {
        if ((s[*i + k] & 0xC0) != 0x80)
            return -EINVAL;
        cp = cp << 6 | (s[*i + k] & 0x3F);
    }
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -EINVAL;
    *i += n + 1;
    *ret_cp = cp;
    return 0;
}

/* Writes the IPC string: u32 count of UTF-16 units including the terminating NUL, then units. */
static int put_string(struct writer *w, const char *s, struct cla_error *e)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), units = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        if (utf8_next(u, len, &i, &cp) < 0)
            return err_set(e, -EINVAL, "ipc: string is not valid UTF-8 (byte %zu)", i);
        units += cp >= 0x10000 ? 2 : 1;
    }
    if (units + 1 > IPC_MAX_STRING_UNITS)
        return err_set(e, -E2BIG, "ipc: string of %zu UTF-16 units exceeds the cap of %d", units,
                       IPC_MAX_STRING_UNITS);
    put_u32(w, (uint32_t)(units + 1));
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        (void)utf8_next(u, len, &i, &cp);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put_u16(w, (uint16_t)(0xD800 | (cp >> 10)));
            put_u16(w, (uint16_t)(0xDC00 | (cp & 0x3FF)));
        } else {
            put_u16(w, (uint16_t)cp);
        }
    }
    put_u16(w, 0);
    return 0;
}

int ipc_encode_simple(uint8_t command_set, uint8_t command_id, uint8_t *buf, size_t size,
                      struct cla_error *e)
{
    struct writer w = {buf, size, 0, false};
    put_header(&w, command_set, command_id);
    return finish_frame(&w, e);
}

/* The header, then (attach) u32 timeout, the GUID, the string's u32 count and its units with
 * the NUL, (attach) the u32 client-data size and the bytes. */
static size_t frame_room(size_t fixed, const char *path, size_t client_len)
{
    size_t len = strlen(path);
    if (len > IPC_MAX_MESSAGE || client_len > IPC_MAX_MESSAGE)
        return IPC_MAX_MESSAGE;
    size_t room = IPC_HEADER_SIZE + fixed + 4 + 2 * (len + 1) + client_len;
    return room < IPC_MAX_MESSAGE ? room : IPC_MAX_MESSAGE;
}

size_t ipc_attach_frame_room(const char *path, size_t client_len)
{
    return frame_room(4 + 16 + 4, path, client_len);
}

size_t ipc_startup_frame_room(const char *path)
{
    return frame_room(16, path, 0);
}

int ipc_encode_attach(uint32_t timeout_ms, const struct ipc_guid *clsid, const char *path,
                      const void *client_data, size_t client_len, uint8_t *buf, size_t size,
                      struct cla_error *e)
{
    if (!path || !*path)
        return err_set(e, -EINVAL, "ipc: empty profiler path");
    if (client_len > IPC_MAX_CLIENT_DATA)
        return err_set(e, -E2BIG, "ipc: client data of %zu bytes exceeds the cap of %d", client_len,
                       IPC_MAX_CLIENT_DATA);
    struct writer w = {buf, size, 0, false};
    put_header(&w, IPC_SET_PROFILER, IPC_PROFILER_ATTACH);
    put_u32(&w, timeout_ms);
    put_bytes(&w, clsid->b, 16);
    int r = put_string(&w, path, e);
    if (r < 0)
        return r;
    /* The runtime requires clientDataSize to equal the bytes that remain, exactly. */
    put_u32(&w, (uint32_t)client_len);
    if (client_len)
        put_bytes(&w, client_data, client_len);
    return finish_frame(&w, e);
}

int ipc_encode_startup(const struct ipc_guid *clsid, const char *path, uint8_t *buf, size_t size,
                       struct cla_error *e)
{
    if (!path || !*path)
        return err_set(e, -EINVAL, "ipc: empty profiler path");
    struct writer w = {buf, size, 0, false};
    put_header(&w, IPC_SET_PROFILER, IPC_PROFILER_STARTUP);
    put_bytes(&w, clsid->b, 16);
    int r = put_string(&w, path, e);
    if (r < 0)
        return r;
    return finish_frame(&w, e);
}

int ipc_encode_enable_perfmap(uint32_t type, uint8_t *buf, size_t size, struct cla_error *e)
{
    if (type < IPC_PERFMAP_ALL || type > IPC_PERFMAP_PERFMAP)
        return err_set(e, -EINVAL,
                       "ipc: perf map type %u is not 1 (all), 2 (jitdump) or 3 "
                       "(perfmap)",
                       (unsigned)type);
    struct writer w = {buf, size, 0, false};
    put_header(&w, IPC_SET_PROCESS, IPC_PROCESS_ENABLE_PERFMAP);
    put_u32(&w, type);
    return finish_frame(&w, e);
}

int ipc_encode_disable_perfmap(uint8_t *buf, size_t size, struct cla_error *e)
{
    return ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_DISABLE_PERFMAP, buf, size, e);
}

size_t ipc_startup_hook_frame_room(const char *path)
{
    return frame_room(0, path, 0);
}

int ipc_encode_apply_startup_hook(const char *path, uint8_t *buf, size_t size, struct cla_error *e)
{
    if (!path || path[0] != '/')
        return err_set(e, -EINVAL, "ipc: a startup hook's path must be absolute");
    struct writer w = {buf, size, 0, false};
    put_header(&w, IPC_SET_PROCESS, IPC_PROCESS_APPLY_STARTUP_HOOK);
    int r = put_string(&w, path, e);
    if (r < 0)
        return r;
    return finish_frame(&w, e);
}

int ipc_env_check(const char *nv, size_t *ret_name_len, struct cla_error *e)
{
    const unsigned char *u = (const unsigned char *)nv;
    size_t len = strlen(nv);
    const char *eq = strchr(nv, '=');
    if (!eq)
        return err_set(e, -EINVAL, "--env '%.64s' is not NAME=VALUE", nv);
    if (eq == nv)
        return err_set(e, -EINVAL, "--env: an empty name before '='");
    size_t name_len = (size_t)(eq - nv);
    if (len > ENV_VAR_BYTES_MAX)
        return err_set(e, -E2BIG, "--env %.*s: %zu bytes exceed the cap of %d", (int)name_len, nv,
                       len, ENV_VAR_BYTES_MAX);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t at = i;
        if (utf8_next(u, len, &i, &cp) < 0)
            return err_set(e, -EINVAL, "--env: %s is not valid UTF-8 (byte %zu)",
                           at < name_len ? "a name" : "the value", at);
        /* A control character would reach the app's environment, and our output, unseen. */
        if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
            return err_set(e, -EINVAL, "--env: %s holds the control character U+%04X (byte %zu)",
                           at < name_len ? "a name" : "the value", (unsigned)cp, at);
    }
    *ret_name_len = name_len;
    return 0;
}

size_t ipc_setenv_frame_room(const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if (nl > IPC_MAX_MESSAGE || vl > IPC_MAX_MESSAGE)
        return IPC_MAX_MESSAGE;
    size_t room = IPC_HEADER_SIZE + 4 + 2 * (nl + 1) + 4 + 2 * (vl + 1);
    return room < IPC_MAX_MESSAGE ? room : IPC_MAX_MESSAGE;
}

int ipc_encode_setenv(const char *name, const char *value, uint8_t *buf, size_t size,
                      struct cla_error *e)
{
    if (!name || !*name || strchr(name, '=') || !value)
        return err_set(e, -EINVAL, "ipc: an environment variable needs a name without '='");
    struct writer w = {buf, size, 0, false};
    put_header(&w, IPC_SET_PROCESS, IPC_PROCESS_SETENV);
    int r = put_string(&w, name, e);
    if (r < 0)
        return r;
    /* An empty value is sent as the string "" (count 1), not as the protocol's null string
     * (count 0), which the runtime passes on as NULL: SetEnvironmentVariable's "remove". */
    if ((r = put_string(&w, value, e)) < 0)
        return r;
    return finish_frame(&w, e);
}

int ipc_decode_header(const uint8_t *buf, size_t len, struct ipc_header *ret_hdr,
                      struct cla_error *e)
{
    if (len < IPC_HEADER_SIZE)
        return err_set(e, -EPROTO, "ipc: short header (%zu of %d bytes)", len, IPC_HEADER_SIZE);
    if (memcmp(buf, ipc_magic, sizeof(ipc_magic)) != 0)
        return err_set(e, -EPROTO, "ipc: reply does not start with the DOTNET_IPC_V1 magic");
    struct ipc_header h = {
        .size = get_u16(buf + 14),
        .command_set = buf[16],
        .command_id = buf[17],
        .reserved = get_u16(buf + 18),
    };
    if (h.size < IPC_HEADER_SIZE)
        return err_set(e, -EPROTO, "ipc: declared size %u is smaller than the header", h.size);
    *ret_hdr = h;
    return 0;
}

int ipc_decode_status(const struct ipc_header *hdr, const uint8_t *payload, size_t len,
                      uint32_t *ret_hresult, struct cla_error *e)
{
    if (hdr->command_set != IPC_SET_SERVER ||
        (hdr->command_id != IPC_SERVER_OK && hdr->command_id != IPC_SERVER_ERROR))
        return err_set(e, -EPROTO, "ipc: unexpected reply command 0x%02x/0x%02x", hdr->command_set,
                       hdr->command_id);
    if (len != (size_t)hdr->size - IPC_HEADER_SIZE)
        return err_set(e, -EPROTO, "ipc: payload of %zu bytes, header says %u", len,
                       hdr->size - IPC_HEADER_SIZE);
    /* OK and Error replies of these commands carry exactly one int32 HRESULT. */
    if (len != 4)
        return err_set(e, -EPROTO, "ipc: status reply payload of %zu bytes, expected 4", len);
    uint32_t hr = get_u32(payload);
    if (hdr->command_id == IPC_SERVER_OK && hr != 0 && (hr & 0x80000000u))
        return err_set(e, -EPROTO, "ipc: OK reply carries failure HRESULT 0x%08X", hr);
    if (hdr->command_id == IPC_SERVER_ERROR && !(hr & 0x80000000u))
        return err_set(e, -EPROTO, "ipc: Error reply carries success HRESULT 0x%08X", hr);
    *ret_hresult = hr;
    return 0;
}

/* A bounded reader over an untrusted payload. */
struct reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
};

static int take(struct reader *r, size_t n, const uint8_t **ret)
{
    if (n > r->len - r->pos)
        return -EPROTO;
    *ret = r->p + r->pos;
    r->pos += n;
    return 0;
}

/* Appends code point cp as UTF-8 to out (room checked by the caller: 4 bytes per unit). */
static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * Reads an IPC string into a new UTF-8 buffer. A count of 0 is the protocol's null string and
 * gives "". The last unit must be the NUL (the runtime itself enforces this on requests); an
 * embedded NUL or an unpaired surrogate is malformed: a hostile target could otherwise smuggle
 * text past what a person sees in our output. Everything else is kept as the runtime sent it
 * (valid UTF-8, no NUL): controls, bidi and invisible characters are rendered visibly where the
 * strings are shown (render.h), not lost here.
 */
static int take_string(struct reader *r, char **ret)
{
    const uint8_t *p;
    if (take(r, 4, &p) < 0)
        return -EPROTO;
    uint32_t units = get_u32(p);
    if (units == 0) {
        *ret = strdup("");
        return *ret ? 0 : -ENOMEM;
    }
    if (units > IPC_MAX_STRING_UNITS)
        return -EPROTO;
    if (take(r, (size_t)units * 2, &p) < 0)
        return -EPROTO;
    if (get_u16(p + (size_t)(units - 1) * 2) != 0)
        return -EPROTO;
    char *out = malloc((size_t)units * 3 + 1);
    if (!out)
        return -ENOMEM;
    size_t o = 0;
    for (uint32_t i = 0; i + 1 < units; i++) {
        uint32_t cu = get_u16(p + (size_t)i * 2);
        if (cu == 0)
            goto bad;
        if (cu >= 0xD800 && cu <= 0xDBFF) {
            if (i + 2 >= units)
                goto bad;
            uint32_t lo = get_u16(p + (size_t)(i + 1) * 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                goto bad;
            cu = 0x10000 + ((cu - 0xD800) << 10) + (lo - 0xDC00);
            i++;
        } else if (cu >= 0xDC00 && cu <= 0xDFFF) {
            goto bad;
        }
        o += put_utf8(out + o, cu);
    }
    out[o] = '\0';
    *ret = out;
    return 0;
bad:
    free(out);
    return -EPROTO;
}

void ipc_process_info_free(struct ipc_process_info *info)
{
    if (!info)
        return;
    free(info->command_line);
    free(info->os);
    free(info->arch);
    free(info->entrypoint_assembly);
    free(info->clr_product_version);
    free(info->runtime_identifier);
    memset(info, 0, sizeof(*info));
}

int ipc_decode_process_info(int version, const uint8_t *payload, size_t len,
                            struct ipc_process_info *ret_info, struct cla_error *e)
{
    if (version < 1 || version > 3)
        return err_set(e, -EINVAL, "ipc: no ProcessInfo version %d", version);
    struct reader r = {payload, len, 0};
    struct ipc_process_info info = {.version = version};
    const uint8_t *p;
    int rc = -EPROTO;
    const char *what = "version";

    bool has_rid = false;
    if (version == 3) {
        if (take(&r, 4, &p) < 0)
            goto fail;
        /* Reply version 0 has no RID; later versions may append fields, which we skip. */
        has_rid = get_u32(p) >= 1;
    }
    what = "pid";
    if (take(&r, 8, &p) < 0)
        goto fail;
    info.pid = get_u64(p);
    what = "runtime cookie";
    if (take(&r, 16, &p) < 0)
        goto fail;
    memcpy(info.cookie.b, p, 16);
    what = "command line";
    if ((rc = take_string(&r, &info.command_line)) < 0)
        goto fail;
    what = "OS";
    if ((rc = take_string(&r, &info.os)) < 0)
        goto fail;
    what = "architecture";
    if ((rc = take_string(&r, &info.arch)) < 0)
        goto fail;
    if (version >= 2) {
        what = "entrypoint assembly";
        if ((rc = take_string(&r, &info.entrypoint_assembly)) < 0)
            goto fail;
        what = "CLR product version";
        if ((rc = take_string(&r, &info.clr_product_version)) < 0)
            goto fail;
    }
    if (has_rid) {
        what = "runtime identifier";
        if ((rc = take_string(&r, &info.runtime_identifier)) < 0)
            goto fail;
    }
    /* Trailing bytes are tolerated only for ProcessInfo3, whose version field announces
     * additions; any other reply must be exact. */
    if (r.pos != r.len && version != 3) {
        what = "trailing bytes";
        rc = -EPROTO;
        goto fail;
    }
    *ret_info = info;
    return 0;
fail:
    ipc_process_info_free(&info);
    if (rc == -ENOMEM)
        return err_set(e, -ENOMEM, "ipc: out of memory decoding ProcessInfo");
    return err_set(e, -EPROTO,
                   "ipc: malformed ProcessInfo (v%d) reply at its %s (offset %zu of %zu)", version,
                   what, r.pos, len);
}
