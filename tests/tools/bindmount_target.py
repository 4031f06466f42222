#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A target that puts someone else's socket where its diagnostic socket should be.

Usage: bindmount_target.py SOCKET_PATH
Run it as root of its own user and mount namespace (unshare --user --map-root-user --mount,
started as an unprivileged uid), with a private tmpfs on /tmp. It bind-mounts SOCKET_PATH (a
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open("/proc/self/stat") as f:
        stat = f.read()
    # Fields are counted from the last ')': comm may hold anything.
    starttime = int(stat[stat.rindex(")") + 2:].split()[19])
    path = "/tmp/dotnet-diagnostic-%d-%d-socket" % (os.getpid(), starttime)
    open(path, "w").close()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(sys.argv[1].encode(), path.encode(), None, MS_BIND, None) != 0:
        sys.exit("mount --bind: %s" % os.strerror(ctypes.get_errno()))
    print("ready", path, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
