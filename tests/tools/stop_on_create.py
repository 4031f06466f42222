#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stops a process tree the moment a file whose name starts with PREFIX appears in DIR.

Usage: stop_on_create.py --dir DIR --prefix PREFIX --pid PID [--self] [--timeout S]

Watches DIR with inotify (IN_CREATE, IN_MOVED_TO), prints "watching" once the watch is in place,
and on the first matching name sends SIGSTOP to every descendant of PID (and to PID itself
with --self), twice
over so that a child forked in between is caught too, then prints "stopped NAME PIDS" and exits
0. The tests use it to hold a delivery in the middle: the writer is stopped within microseconds
of creating its temporary, while writing a large profiler directory takes tens of milliseconds
at the least, so the state the test then acts on is known instead of raced. Exits 1 after
--timeout seconds with nothing seen.
"""

import argparse
import ctypes
import os
import select
import signal
import struct
import sys
import time

IN_CREATE = 0x100
IN_MOVED_TO = 0x80
IN_CLOEXEC = 0o2000000
EVENT = struct.Struct("iIII")  # wd mask cookie len

libc = ctypes.CDLL(None, use_errno=True)


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            for k in kids:
                if k not in out:
                    out.append(k)
                    todo.append(k)
    return out


def stop_tree(pid, self_too):
    stopped = []
    for _ in range(2):
        for k in ([pid] if self_too else []) + descendants(pid):
            try:
                os.kill(k, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            if k not in stopped:
                stopped.append(k)
    return stopped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--self", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()

    fd = libc.inotify_init1(IN_CLOEXEC)
    if fd < 0:
        sys.exit(f"stop_on_create: inotify_init1: {os.strerror(ctypes.get_errno())}")
    if libc.inotify_add_watch(fd, a.dir.encode(), IN_CREATE | IN_MOVED_TO) < 0:
        sys.exit(f"stop_on_create: watch {a.dir}: {os.strerror(ctypes.get_errno())}")
    print("watching", flush=True)
    prefix = a.prefix.encode()
    deadline = time.monotonic() + a.timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            print("timeout", flush=True)
            sys.exit(1)
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        buf = os.read(fd, 65536)
        off = 0
        while off + EVENT.size <= len(buf):
            _, _, _, n = EVENT.unpack_from(buf, off)
            name = buf[off + EVENT.size:off + EVENT.size + n].rstrip(b"\0")
            off += EVENT.size + n
            if name.startswith(prefix):
                pids = stop_tree(a.pid, a.self)
                print("stopped", name.decode(errors="replace"), *pids, flush=True)
                return


if __name__ == "__main__":
    main()
