#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a Python script as __main__ after prctl(PR_SET_DUMPABLE, 0).

Usage: undumpable.py SCRIPT [ARGS...]
A non-dumpable process keeps even its own user out of /proc/<pid>/environ and root: only
CAP_SYS_PTRACE gets in (tests/e2e/test_hostile_creds.sh).
"""

import ctypes
import os
import runpy
import sys

PR_SET_DUMPABLE = 4


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.exit("prctl: %s" % os.strerror(ctypes.get_errno()))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
