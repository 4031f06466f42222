/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostic IPC replies as a target sends them: the input is a whole frame (20-byte header,
 * then payload). Every decoder sees it, the way attach.c could meet it from a hostile runtime:
 * header, bare-HRESULT status, and ProcessInfo 1..3 on the same payload. The GUID text parser
 * and formatter are checked as a round trip on the input's first bytes.
 */
#include "fuzz.h"
#include "runtime/ipc.h"
#include "base/render.h"

static void fuzz_guid(const uint8_t *data, size_t size)
{
    /* Text -> GUID -> text -> GUID must land on the same 16 bytes. 40 bytes covers the braced
     * form plus a little junk; ipc_guid_parse must reject anything longer than the form. */
    char *s = fuzz_strdup(data, size < 40 ? size : 40);
    struct ipc_guid g, g2;
    if (ipc_guid_parse(s, &g) == 0) {
        char out[39];
        ipc_guid_format(&g, out);
        FUZZ_CHECK(strlen(out) == 38);
        FUZZ_CHECK(ipc_guid_parse(out, &g2) == 0);
        FUZZ_CHECK(memcmp(g.b, g2.b, 16) == 0);
    }
    free(s);

    /* Bytes -> text -> bytes: any 16 bytes are a GUID. */
    if (size >= 16) {
        char out[39];
        memcpy(g.b, data, 16);
        ipc_guid_format(&g, out);
        FUZZ_CHECK(ipc_guid_parse(out, &g2) == 0);
        FUZZ_CHECK(memcmp(g.b, g2.b, 16) == 0);
    }
}

/* The input as a startup hook's path: whatever the encoder accepts is one well-formed frame of
 * the Process set whose string count matches its length, and never more than a frame holds. */
static void fuzz_startup_hook_frame(const uint8_t *data, size_t size)
{
    char *path = fuzz_strdup(data, size < 512 ? size : 512);
    size_t room = ipc_startup_hook_frame_room(path);
    uint8_t *buf = malloc(room);
    struct cla_error e = {0};
    int n = buf ? ipc_encode_apply_startup_hook(path, buf, room, &e) : -1;
    if (n >= 0) {
        struct ipc_header h;
        FUZZ_CHECK(path[0] == '/');
        FUZZ_CHECK((size_t)n <= room && n <= IPC_MAX_MESSAGE);
        FUZZ_CHECK(ipc_decode_header(buf, (size_t)n, &h, &e) == 0 && h.size == n);
        FUZZ_CHECK(h.command_set == IPC_SET_PROCESS &&
                   h.command_id == IPC_PROCESS_APPLY_STARTUP_HOOK);
        uint32_t units = (uint32_t)buf[20] | (uint32_t)buf[21] << 8 | (uint32_t)buf[22] << 16 |
                         (uint32_t)buf[23] << 24;
        FUZZ_CHECK((size_t)n == IPC_HEADER_SIZE + 4 + 2 * (size_t)units);
        FUZZ_CHECK(buf[n - 1] == 0 && buf[n - 2] == 0);
    }
    free(buf);
    free(path);
}

/* A decoded ProcessInfo string: NUL-terminated by construction, valid UTF-8 (ipc.c refuses
 * unpaired surrogates), and clean once rendered the way attach and ps show it. */
static void check_str(const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    char shown[256];
    size_t m = render_text(s, n, shown, sizeof(shown));
    FUZZ_CHECK(m < sizeof(shown) && fuzz_rendered_clean(shown, m));
    /* Nothing but escapes is added: a string without any escaped class comes out whole. */
    size_t at;
    uint32_t cp;
    if (render_find(s, n, &at, &cp) == RENDER_SAFE && !memchr(s, '\\', n) && n < sizeof(shown))
        FUZZ_CHECK(m == n && memcmp(shown, s, n) == 0);
    else
        FUZZ_CHECK(render_find(s, n, &at, &cp) != RENDER_INVALID);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cla_error e = {0};
    struct ipc_header hdr;

    fuzz_guid(data, size);

    /* The header decoder sees the raw input, short or not. */
    int r = ipc_decode_header(data, size, &hdr, &e);
    FUZZ_CHECK(r == 0 || r < 0);
    if (r == 0)
        FUZZ_CHECK(hdr.size >= IPC_HEADER_SIZE);

    /* The payload is whatever follows the first 20 bytes, as attach.c reads it after the header
     * (it reads hdr.size - 20 bytes; here the fuzzer chooses the length freely). A fabricated
     * header is used when the real one does not decode, so the payload decoders are always
     * reached. */
    const uint8_t *payload = size > IPC_HEADER_SIZE ? data + IPC_HEADER_SIZE : data;
    size_t plen = size > IPC_HEADER_SIZE ? size - IPC_HEADER_SIZE : size;
    if (r != 0) {
        hdr.size = (uint16_t)(IPC_HEADER_SIZE + (plen > 0xFFEB ? 0xFFEB : plen));
        hdr.command_set = IPC_SET_SERVER;
        hdr.command_id = size ? (data[0] & 1 ? IPC_SERVER_ERROR : IPC_SERVER_OK) : IPC_SERVER_OK;
        hdr.reserved = 0;
    }

    /* The reply to every command clrattach sends but ProcessInfo (AttachProfiler,
     * StartupProfiler, ResumeRuntime, SetEnvironmentVariable, EnablePerfMap, DisablePerfMap,
     * ApplyStartupHook) is this one bare HRESULT. */
    uint32_t hr = 0;
    ipc_decode_status(&hdr, payload, plen, &hr, &e);

    fuzz_startup_hook_frame(data, size);

    for (int v = 1; v <= 3; v++) {
        struct ipc_process_info info;
        memset(&info, 0xA5, sizeof(info));
        if (ipc_decode_process_info(v, payload, plen, &info, &e) == 0) {
            FUZZ_CHECK(info.version == v);
            check_str(info.command_line);
            check_str(info.os);
            check_str(info.arch);
            check_str(info.entrypoint_assembly);
            check_str(info.clr_product_version);
            check_str(info.runtime_identifier);
            if (v < 2)
                FUZZ_CHECK(!info.entrypoint_assembly && !info.clr_product_version);
            if (v < 3)
                FUZZ_CHECK(!info.runtime_identifier);
            ipc_process_info_free(&info);
        }
    }
    return 0;
}
