#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A pty planted under a name, for tests/e2e/test_hostile_files.sh.

Usage: pty_trap.py PATH

Run as root inside the target's mount namespace (nsenter): opens a pty pair and bind-mounts the
slave over PATH (devpts serves a slave only through its own dentry, so a mknod copy would give
EIO), prints "ready /dev/pts/N", then holds the master and waits for signals:
  SIGUSR1  writes ^C to the master: SIGINT to the foreground process group of the terminal,
           if the pty became anyone's controlling terminal
  SIGUSR2  closes the master: SIGHUP to the terminal's controlling process, if any
Each action is acknowledged with a line ("intr", "hangup").
"""

import os
import signal
import subprocess
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    master, slave = os.openpty()
    slave_path = os.ttyname(slave)
    # Only the master needs to stay open: the slave can be opened again while it is.
    os.close(slave)
    open(path, "a").close()
    subprocess.run(["mount", "--bind", slave_path, path], check=True)
    state = {"master": master}

    def intr(*_):
        if state["master"] >= 0:
            os.write(state["master"], b"\x03")
        print("intr", flush=True)

    def hangup(*_):
        if state["master"] >= 0:
            os.close(state["master"])
            state["master"] = -1
        print("hangup", flush=True)

    signal.signal(signal.SIGUSR1, intr)
    signal.signal(signal.SIGUSR2, hangup)
    print("ready", slave_path, flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
