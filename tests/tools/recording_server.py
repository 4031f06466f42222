#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A root-only Unix socket of the host that records who talks to it.

Usage: recording_server.py SOCKET_PATH LOG_FILE
Binds SOCKET_PATH with mode 0600 (owned by the user running it: root), and for every accepted
connection appends "connection uid=U exe=PATH" (the peer, from SO_PEERCRED) and then
"bytes N exe=PATH" (what it sent within a second) to LOG_FILE (created empty at start). Prints
"ready" once listening. The peer's executable tells our clrattach from any other process on the
machine that scans for .NET processes. tests/e2e/test_hostile_creds.sh
bind-mounts it over a target's diagnostic socket name: an empty log proves clrattach never
connected to it with rights the target lacks.
"""

import os
import socket
import struct
import sys


def peer(conn):
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
    except OSError:
        exe = "?"
    return uid, exe


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, log_path = sys.argv[1], sys.argv[2]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    open(log_path, "w").close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    s.bind(path)
    os.umask(old)
    os.chmod(path, 0o600)
    s.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = s.accept()
        uid, exe = peer(conn)
        with open(log_path, "a") as f:
            f.write("connection uid=%d exe=%s\n" % (uid, exe))
        conn.settimeout(1.0)
        n = 0
        try:
            while True:
                b = conn.recv(65536)
                if not b:
                    break
                n += len(b)
        except OSError:
            pass
        with open(log_path, "a") as f:
            f.write("bytes %d exe=%s\n" % (n, exe))
        conn.close()


if __name__ == "__main__":
    main()
