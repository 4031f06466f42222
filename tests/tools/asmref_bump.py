#!/usr/bin/env python3
"""Rewrites, in place, the major version of one assembly reference of a .NET assembly: the stand-in
for an agent built against a newer framework than the app runs (tests/e2e/test_otel_agent.sh: an
OpenTelemetry.Api.dll that references System.Diagnostics.DiagnosticSource 99.0.0.0).

Usage: asmref_bump.py FILE NAME MAJOR. Finds NAME in the #Strings heap, then the AssemblyRef row
whose name is that string (its version, flags 0, any public key blob, that name index), and writes
MAJOR over the version's first field. Exits 1 when it finds no such row, or more than one.
"""
import struct
import sys


def rva_to_offset(pe, rva):
    e_lfanew = struct.unpack_from("<I", pe, 0x3C)[0]
    nsec = struct.unpack_from("<H", pe, e_lfanew + 6)[0]
    opt_size = struct.unpack_from("<H", pe, e_lfanew + 20)[0]
    sec = e_lfanew + 24 + opt_size
    for i in range(nsec):
        va, raw_size, raw_ptr = struct.unpack_from("<III", pe, sec + 40 * i + 12)
        if va <= rva < va + raw_size:
            return rva - va + raw_ptr
    raise ValueError(f"RVA {rva:#x} in no section")


def streams(pe):
    e_lfanew = struct.unpack_from("<I", pe, 0x3C)[0]
    magic = struct.unpack_from("<H", pe, e_lfanew + 24)[0]
    dirs = e_lfanew + 24 + (96 if magic == 0x10B else 112)
    cli_rva = struct.unpack_from("<I", pe, dirs + 14 * 8)[0]
    cli = rva_to_offset(pe, cli_rva)
    md = rva_to_offset(pe, struct.unpack_from("<I", pe, cli + 8)[0])
    vlen = struct.unpack_from("<I", pe, md + 12)[0]
    p = md + 16 + vlen + 2
    count = struct.unpack_from("<H", pe, p)[0]
    p += 2
    out = {}
    for _ in range(count):
        off, size = struct.unpack_from("<II", pe, p)
        p += 8
        end = pe.index(b"\0", p)
        name = pe[p:end].decode()
        p = (end + 4) & ~3
        out[name] = (md + off, size)
    return out


def main():
    path, name, major = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    pe = bytearray(open(path, "rb").read())
    st = streams(pe)
    s_off, s_size = st["#Strings"]
    heap = bytes(pe[s_off:s_off + s_size])
    k = heap.find(b"\0" + name + b"\0")
    if k < 0:
        print(f"{path}: no string {name.decode()}", file=sys.stderr)
        return 1
    idx = k + 1
    t_off, t_size = st["#~"]
    wide_strings = pe[t_off + 6] & 1
    wide_blobs = pe[t_off + 6] & 4
    name_idx = struct.pack("<I" if wide_strings else "<H", idx)
    blob_len = 4 if wide_blobs else 2
    hits = []
    tables = bytes(pe[t_off:t_off + t_size])
    for i in range(len(tables) - 12 - blob_len - len(name_idx)):
        j = i + 12 + blob_len
        if tables[j:j + len(name_idx)] == name_idx and tables[i + 8:i + 12] == b"\0\0\0\0" and \
                tables[i + 2:i + 4] == b"\0\0" and 0 < tables[i] < 100 and tables[i + 1] == 0:
            hits.append(i)
    if len(hits) != 1:
        print(f"{path}: {len(hits)} candidate rows for {name.decode()}", file=sys.stderr)
        return 1
    struct.pack_into("<H", pe, t_off + hits[0], major)
    open(path, "wb").write(pe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
