/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostic IPC frames of CoreCLR ("DOTNET_IPC_V1"), encoded and decoded on buffers only: no
 * I/O here, so every decoder is unit-tested and fuzzed on bytes. Layouts follow what the runtime
 * really does (ds-protocol.c), not the published spec where the two differ: GUIDs are
 * u32,u16,u16,u8[8]; every "void" OK reply carries a 4-byte HRESULT.
 */
#ifndef CLRATTACH_IPC_H
#define CLRATTACH_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum ipc_command_set {
    IPC_SET_DUMP = 0x01,
    IPC_SET_EVENTPIPE = 0x02,
    IPC_SET_PROFILER = 0x03,
    IPC_SET_PROCESS = 0x04,
    IPC_SET_SERVER = 0xFF,
};

enum {
    IPC_PROFILER_ATTACH = 0x01,
    IPC_PROFILER_STARTUP = 0x02,
    IPC_PROCESS_INFO = 0x00,
    IPC_PROCESS_RESUME = 0x01,
    IPC_PROCESS_SETENV = 0x03,
    IPC_PROCESS_INFO2 = 0x04,
    IPC_PROCESS_ENABLE_PERFMAP = 0x05,
    IPC_PROCESS_DISABLE_PERFMAP = 0x06,
    IPC_PROCESS_APPLY_STARTUP_HOOK = 0x07,
    IPC_PROCESS_INFO3 = 0x08,
    IPC_SERVER_OK = 0x00,
    IPC_SERVER_ERROR = 0xFF,
};

struct ipc_guid {
    uint8_t b[16]; /* wire (= in-memory little-endian GUID) layout */
};

struct ipc_header {
    uint16_t size; /* whole message, header included */
    uint8_t command_set;
    uint8_t command_id;
    uint16_t reserved;
};

/* What ProcessInfo, ProcessInfo2 and ProcessInfo3 replies carry; strings are valid UTF-8 without
 * NULs, owned by the struct (free with ipc_process_info_free), and the target's own text: render
 * them (render.h) before showing them. Fields a version lacks stay NULL. */
struct ipc_process_info {
    int version; /* 1, 2 or 3: which command answered */
    uint64_t pid;
    struct ipc_guid cookie;
    char *command_line;
    char *os;
    char *arch;
    char *entrypoint_assembly;
    char *clr_product_version;
    char *runtime_identifier;
};

/* Parses "{12345678-9ABC-DEF0-1122-334455667788}" (braces optional, any hex case).
 * Returns 0 or -EINVAL. */
int ipc_guid_parse(const char *s, struct ipc_guid *ret_guid);

/* Formats as "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" into out (39 bytes with the NUL). */
void ipc_guid_format(const struct ipc_guid *g, char out[39]);

/* Encodes a payload-less request (ProcessInfo*, ResumeRuntime). Returns the frame length (20)
 * or -ENOBUFS. */
int ipc_encode_simple(uint8_t command_set, uint8_t command_id, uint8_t *buf, size_t size,
                      struct cla_error *e);

/* Encodes AttachProfiler: u32 timeout (ms), GUID, UTF-16 path (count includes the NUL), u32
 * client-data size, the bytes. `path` must be valid UTF-8. Returns the frame length, -EINVAL for
 * a bad path, -E2BIG when the frame would exceed IPC_MAX_MESSAGE or the caps, -ENOBUFS. */
int ipc_encode_attach(uint32_t timeout_ms, const struct ipc_guid *clsid, const char *path,
                      const void *client_data, size_t client_len, uint8_t *buf, size_t size,
                      struct cla_error *e);

/* The most bytes ipc_encode_attach / ipc_encode_startup can write for this path (valid UTF-8
 * takes at most two UTF-16 bytes per byte) and client data, capped at IPC_MAX_MESSAGE, where
 * encoding reports a frame too large: a buffer of this size always suffices. */
size_t ipc_attach_frame_room(const char *path, size_t client_len);
size_t ipc_startup_frame_room(const char *path);

/* Encodes StartupProfiler: GUID and UTF-16 path. Returns as ipc_encode_attach. */
int ipc_encode_startup(const struct ipc_guid *clsid, const char *path, uint8_t *buf, size_t size,
                       struct cla_error *e);

/* Checks one "NAME=VALUE" for SetEnvironmentVariable: a non-empty name before the first '=',
 * name and value valid UTF-8 without control characters (the runtime keeps them as UTF-16 and
 * the result shows them), at most ENV_VAR_BYTES_MAX bytes in all. Returns 0 with *ret_name_len,
 * -EINVAL or -E2BIG with e naming what is wrong (never the value: it may hold a token). */
int ipc_env_check(const char *name_value, size_t *ret_name_len, struct cla_error *e);

/* The most bytes ipc_encode_setenv can write for this name and value (capped at
 * IPC_MAX_MESSAGE, where encoding reports a frame too large). */
size_t ipc_setenv_frame_room(const char *name, const char *value);

/* Encodes SetEnvironmentVariable (.NET 6+): the name and the value as two IPC strings, nothing
 * else (ds-process-protocol.c; the OK reply is a bare HRESULT like the others). Both must be
 * valid UTF-8, the name non-empty. Returns the frame length, -EINVAL, -E2BIG or -ENOBUFS. */
int ipc_encode_setenv(const char *name, const char *value, uint8_t *buf, size_t size,
                      struct cla_error *e);

/* What EnablePerfMap asks the runtime to write (the runtime's PerfMapType: 0 is "disabled",
 * which it takes as a no-op, so it is never sent). */
enum ipc_perfmap_type {
    IPC_PERFMAP_ALL = 1,     /* /tmp/perf-<pid>.map and /tmp/jit-<pid>.dump */
    IPC_PERFMAP_JITDUMP = 2, /* the jitdump alone (it also carries ReadyToRun code) */
    IPC_PERFMAP_PERFMAP = 3, /* the perf map alone (JIT-compiled code only) */
};

/*
 * The perf map and startup hook commands of the Process set (.NET 8+). Layouts as the runtime
 * parses them (dotnet/runtime src/native/eventpipe/ds-process-protocol.h: the
 * DiagnosticsEnablePerfmapPayload holds one uint32_t perfMapType, the
 * DiagnosticsApplyStartupHookPayload one UTF-16 string; ds-types.h: command ids 0x05, 0x06,
 * 0x07). The reply to each is the bare HRESULT of every "void" command: decode it with
 * ipc_decode_status().
 */

/* EnablePerfMap: the u32 type, nothing else. Returns the frame length (24), -EINVAL for a type
 * outside enum ipc_perfmap_type, -ENOBUFS. */
int ipc_encode_enable_perfmap(uint32_t type, uint8_t *buf, size_t size, struct cla_error *e);

/* DisablePerfMap: no payload. Returns the frame length (20) or -ENOBUFS. */
int ipc_encode_disable_perfmap(uint8_t *buf, size_t size, struct cla_error *e);

/* The most bytes ipc_encode_apply_startup_hook can write for this path (capped at
 * IPC_MAX_MESSAGE, where encoding reports a frame too large). */
size_t ipc_startup_hook_frame_room(const char *path);

/* ApplyStartupHook: the assembly's path as one UTF-16 string (count includes the NUL). The
 * runtime loads it with AssemblyLoadContext.LoadFromAssemblyPath only when it is fully
 * qualified: a relative one is taken as an assembly name, so `path` must be absolute and valid
 * UTF-8. Returns the frame length, -EINVAL, -E2BIG or -ENOBUFS. */
int ipc_encode_apply_startup_hook(const char *path, uint8_t *buf, size_t size, struct cla_error *e);

/* Decodes and checks a 20-byte header: magic with its NUL, size >= 20. Returns 0 or -EPROTO. */
int ipc_decode_header(const uint8_t *buf, size_t len, struct ipc_header *ret_hdr,
                      struct cla_error *e);

/* Decodes the reply to a command whose OK answer is a bare HRESULT (attach, startup, resume).
 * Gives the HRESULT from either an OK or an Error reply in *ret_hresult. Returns 0, or -EPROTO
 * for a reply that is neither, or whose payload is not the 4 bytes both carry. */
int ipc_decode_status(const struct ipc_header *hdr, const uint8_t *payload, size_t len,
                      uint32_t *ret_hresult, struct cla_error *e);

/* Decodes a ProcessInfo (version 1), ProcessInfo2 (2) or ProcessInfo3 (3) OK payload.
 * Returns 0, or -EPROTO for any malformed, truncated or over-long field (nothing allocated is
 * left behind). An Error reply must be handled with ipc_decode_status() first. */
int ipc_decode_process_info(int version, const uint8_t *payload, size_t len,
                            struct ipc_process_info *ret_info, struct cla_error *e);

void ipc_process_info_free(struct ipc_process_info *info);

#endif
