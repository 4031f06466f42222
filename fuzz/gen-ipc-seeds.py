#!/usr/bin/env python3
"""Writes hand-built diagnostic IPC reply frames into fuzz/corpus/ipc/ (run from the repo root).

Layouts as the runtime sends them (ds-protocol.c): 20-byte header "DOTNET_IPC_V1\\0", u16 size,
u8 command set, u8 command id, u16 reserved; strings are u32 UTF-16 unit count (NUL included)
then the units. The fuzz target reads a whole frame and hands the payload to every decoder.
"""
import os
import struct

OUT = "fuzz/corpus/ipc"


def frame(cset, cid, payload):
    return b"DOTNET_IPC_V1\0" + struct.pack("<HBBH", 20 + len(payload), cset, cid, 0) + payload


def s(text):
    if text is None:
        return struct.pack("<I", 0)
    units = text.encode("utf-16-le") + b"\0\0"
    return struct.pack("<I", len(units) // 2) + units


COOKIE = bytes(range(16))


def info(version, rid_version=1, pid=42):
    p = b""
    if version == 3:
        p += struct.pack("<I", rid_version)
    p += struct.pack("<Q", pid) + COOKIE
    p += s("dotnet /app/Orders.Api.dll --urls http://+:8080") + s("Linux") + s("x64")
    if version >= 2:
        p += s("Orders.Api") + s("10.0.0+b40c44502deeb17c1b1d2c8d4e6b3e1e")
    if version == 3 and rid_version >= 1:
        p += s("linux-x64")
    return p


SEEDS = {
    "status_ok": frame(0xFF, 0x00, struct.pack("<I", 0)),
    "status_error_already_attached": frame(0xFF, 0xFF, struct.pack("<I", 0x8013136A)),
    "status_error_unknown_command": frame(0xFF, 0xFF, struct.pack("<I", 0x80131385)),
    # The replies to EnablePerfMap, DisablePerfMap and ApplyStartupHook are the same bare HRESULT:
    # a managed exception in a startup hook comes back as its HRESULT (TypeLoadException here),
    # a runtime without perf maps (NativeAOT, Mono) answers NOTSUPPORTED.
    "status_error_startup_hook_typeload": frame(0xFF, 0xFF, struct.pack("<I", 0x80131522)),
    "status_error_perfmap_notsupported": frame(0xFF, 0xFF, struct.pack("<I", 0x80131515)),
    "processinfo1": frame(0xFF, 0x00, info(1)),
    "processinfo2": frame(0xFF, 0x00, info(2)),
    "processinfo3": frame(0xFF, 0x00, info(3)),
    "processinfo3_v0_no_rid": frame(0xFF, 0x00, info(3, rid_version=0)),
    "processinfo3_surrogates": frame(0xFF, 0x00, struct.pack("<I", 1) + struct.pack("<Q", 7) +
                                     COOKIE + s("app \U0001F600 caf\u00e9") + s(None) + s("arm64") +
                                     s("") + s("9.0.1") + s("linux-musl-arm64")),
    "header_only": frame(0xFF, 0x00, b""),
    "guid_braced": b"{846F5F1C-F9AE-4B07-969E-05C26BC060D8}",
    "guid_bare": b"846f5f1c-f9ae-4b07-969e-05c26bc060d8",
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
