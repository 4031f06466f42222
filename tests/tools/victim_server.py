#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A listening Unix socket in the helper's own root that a hostile target points a symlink at.

Usage: victim_server.py SOCKET_PATH LOG_FILE
Every accepted connection appends a line to LOG_FILE (created empty at start), so the test can
prove clrattach never connected through the planted link. Prints "ready" once listening.
"""

import os
import socket
import sys


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
    s.bind(path)
    # World-connectable: the test must catch a connection made under any fsuid.
    os.chmod(path, 0o777)
    s.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = s.accept()
        with open(log_path, "a") as f:
            f.write("connection\n")
        conn.close()


if __name__ == "__main__":
    main()
