#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A target that puts someone else's socket where its diagnostic socket should be.

Usage: bindmount_target.py SOCKET_PATH
Run it as root of its own user and mount namespace (unshare --user --map-root-user --mount,
started as an unprivileged uid). It mounts a private tmpfs on /tmp (itself, so that a checkout
under /tmp stays readable until Python has loaded this file), then bind-mounts SOCKET_PATH (a
socket of the host it cannot connect to itself, e.g. root's 0600) over
/tmp/dotnet-diagnostic-<pid>-<starttime>-socket, the name clrattach looks for, prints
"ready <path>" and sleeps. A helper that connected there with its own rights would be talking
to the host's socket for the target (tests/e2e/test_hostile_creds.sh).
"""

import ctypes
import os
import sys
import time

MS_BIND = 4096


def mount(libc, src, dst, fstype, flags, data):
    if libc.mount(src.encode(), dst.encode(), fstype and fstype.encode(), flags,
                  data and data.encode()) != 0:
        sys.exit("mount %s on %s: %s" % (src, dst, os.strerror(ctypes.get_errno())))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    mount(libc, "tmpfs", "/tmp", "tmpfs", 0, "mode=1777")
    with open("/proc/self/stat") as f:
        stat = f.read()
    # Fields are counted from the last ')': comm may hold anything.
    starttime = int(stat[stat.rindex(")") + 2:].split()[19])
    path = "/tmp/dotnet-diagnostic-%d-%d-socket" % (os.getpid(), starttime)
    open(path, "w").close()
    mount(libc, sys.argv[1], path, None, MS_BIND, None)
    print("ready", path, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
