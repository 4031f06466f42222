#!/usr/bin/env python3
"""Sets variables in a running .NET app's environment over its diagnostic IPC
(SetEnvironmentVariable, command 0x04/0x03), as `clrattach otel` is to do before it applies the
agent (tests/e2e/test_otel_agent.sh: the stop action, a forced start). Root reaches the app's
socket through /proc/PID/root/tmp. Usage: diag_setenv.py PID NAME=VALUE... Exits 0 when every
variable was answered S_OK, 1 otherwise.
"""
import glob
import socket
import struct
import sys

MAGIC = b"DOTNET_IPC_V1\0"


def ipc_string(s):
    data = (s + "\0").encode("utf-16-le")
    return struct.pack("<I", len(data) // 2) + data


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def setenv(path, name, value):
    payload = ipc_string(name) + ipc_string(value)
    header = MAGIC + struct.pack("<HBBH", 20 + len(payload), 0x04, 0x03, 0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(header + payload)
        h = recv_exact(s, 20)
        size, cset, cid = struct.unpack_from("<HBB", h, 14)
        body = recv_exact(s, size - 20)
        hr = struct.unpack_from("<I", body)[0] if len(body) >= 4 else 0
        return cset == 0xFF and cid == 0x00 and hr == 0, hr


def main():
    pid, assignments = sys.argv[1], sys.argv[2:]
    socks = sorted(glob.glob(f"/proc/{pid}/root/tmp/dotnet-diagnostic-*-socket"))
    if not socks:
        print(f"no diagnostic socket in /proc/{pid}/root/tmp", file=sys.stderr)
        return 1
    rc = 0
    for a in assignments:
        name, _, value = a.partition("=")
        good, hr = setenv(socks[-1], name, value)
        if not good:
            print(f"{name}: HRESULT 0x{hr:08x}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
