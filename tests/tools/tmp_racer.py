#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile target that knows no name, for tests/e2e/test_hostile_files.sh.

Usage: tmp_racer.py DIR

Watches DIR with inotify and renames a fresh FIFO over every ".clrattach-*.tmp" created there,
the moment it appears: a clrattach that opens its temporary file again by name would block on
that FIFO forever, and one that renames by name would publish it. Prints "ready" once the watch
is set, then "swapped NAME" (or "missed NAME: error") for each temporary file seen. Only IN_CREATE
is watched, so its own renames (IN_MOVED_TO) do not feed back.
"""

import ctypes
import os
import struct
import sys

IN_CREATE = 0x00000100
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the NUL-padded name


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, directory.encode(), IN_CREATE) < 0:
        sys.exit("tmp_racer: inotify: %s" % os.strerror(ctypes.get_errno()))
    print("ready", flush=True)
    n = 0
    while True:
        buf = os.read(fd, 65536)
        off = 0
        while off + EVENT.size <= len(buf):
            _, _, _, length = EVENT.unpack_from(buf, off)
            name = buf[off + EVENT.size:off + EVENT.size + length].split(b"\0", 1)[0].decode(
                errors="replace")
            off += EVENT.size + length
            if not (name.startswith(".clrattach-") and name.endswith(".tmp")):
                continue
            fifo = os.path.join(directory, ".racer-%d" % n)
            n += 1
            try:
                os.mkfifo(fifo)
                os.rename(fifo, os.path.join(directory, name))
                print("swapped", name, flush=True)
            except OSError as e:
                print("missed %s: %s" % (name, e), flush=True)


if __name__ == "__main__":
    main()
