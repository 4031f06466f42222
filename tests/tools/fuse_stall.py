#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A FUSE filesystem that stops answering: a hung NFS/CIFS hard mount or a stuck CSI volume.

Usage: fuse_stall.py --mount DIR --token TOKEN --log FILE -- COMMAND [ARGS...]

Run as root inside a private mount namespace (unshare --mount --propagation private): opens
/dev/fuse on raw file descriptors (no libfuse), mounts it on DIR, answers FUSE_INIT, then starts
COMMAND with TMPDIR=DIR/ (killed with us: PR_SET_PDEATHSIG) and prints "ready <its pid>".

Every later request is read and never answered when the process that made it carries
FUSE_STALL_TOKEN=TOKEN in its environment (the clrattach under test, and every process it
forks): the caller then waits, uninterruptibly, for as long as this daemon lives. A request from
anybody else is answered at once with EIO, so that another suite's `clrattach ps` or `watch`
running on the same machine, which scans this process too, is not held. Killing this daemon
closes /dev/fuse, which aborts the connection and ends every wait with an error.

Each request held is logged as "held <opcode> pid <pid>".
"""

import argparse
import ctypes
import os
import signal
import struct
import subprocess
import sys

FUSE_INIT = 26
FUSE_FORGET = 2
FUSE_INTERRUPT = 36
FUSE_BATCH_FORGET = 42
NO_REPLY = (FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_INTERRUPT)
IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HEADER = struct.Struct("<IiQ")  # len error unique
EIO = 5
MS_NOSUID, MS_NODEV = 2, 4
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def reply(fd, unique, error=0, payload=b""):
    os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), -error, unique) + payload)


def init_reply(fd, unique, body):
    major, minor, max_readahead = struct.unpack_from("<III", body)
    # fuse_init_out of protocol 7.31 (64 bytes): no feature flags, 4 KiB writes.
    out = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), max_readahead, 0, 0, 0, 4096, 1, 0, 0, 0)
    reply(fd, unique, payload=out + bytes(64 - len(out)))
    return major


def marked(pid, token):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return ("FUSE_STALL_TOKEN=%s" % token).encode() in f.read().split(b"\0")
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mount", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("command", nargs="+")
    a = ap.parse_args()
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other" % fd
    if libc.mount(b"fuse_stall", a.mount.encode(), b"fuse", MS_NOSUID | MS_NODEV,
                  opts.encode()) != 0:
        sys.exit("mount: %s" % os.strerror(ctypes.get_errno()))
    log = open(a.log, "a", buffering=1)
    child = None
    while True:
        buf = os.read(fd, 1 << 17)
        length, opcode, unique, _node, _uid, _gid, pid, _ext, _pad = IN_HEADER.unpack_from(buf)
        body = buf[IN_HEADER.size:length]
        if opcode == FUSE_INIT:
            init_reply(fd, unique, body)
            env = dict(os.environ, TMPDIR=a.mount.rstrip("/") + "/")
            env.pop("FUSE_STALL_TOKEN", None)
            child = subprocess.Popen(
                a.command, env=env, cwd="/", stdin=subprocess.DEVNULL,
                preexec_fn=lambda: libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
            print("ready %d" % child.pid, flush=True)
            continue
        if opcode in NO_REPLY:
            continue
        if marked(pid, a.token):
            log.write("held %d pid %d\n" % (opcode, pid))
            continue
        reply(fd, unique, EIO)


if __name__ == "__main__":
    main()
