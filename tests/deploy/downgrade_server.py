#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TLS server that tries to downgrade its client, for tests/deploy/static_tls.sh.

It reads the ClientHello and answers with a forged TLS 1.2 ServerHello, one of:
  cipher    a cipher suite the client did not offer (CVE-2024-5814: a client that took it
            went on with a suite it never asked for);
  sentinel  a suite the client did offer, but the server random ending in the TLS 1.2
            downgrade sentinel (RFC 8446 4.1.3), which a TLS 1.3-capable client must refuse.
A client that does its job answers at once with a fatal illegal_parameter alert; one that does
not waits for the server's certificate, which never comes. One line per connection goes to the
log: whether the client offered TLS 1.3, the suite sent, and what the client answered.

    downgrade_server.py MODE PORT-FILE LOG
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fake_runtime import recv_exact  # noqa: E402  (the tests' one exact-read helper)

TLS13_SUITES = range(0x1301, 0x1306)
SCSV = (0x00FF, 0x5600)
# Suites to answer with in `cipher` mode, the first the client did not offer: each is one
# OpenSSL knows (so a refusal is about the offer, not an unknown code) but a TLS 1.3-era client
# at security level 2 leaves out.
UNOFFERED = (0x0005, 0x000A, 0x002F, 0x0035, 0x003C, 0x009C, 0xC013, 0xC014)
SENTINEL = b"DOWNGRD\x01"
HELLO_MAX = 16384


def read_exact(c, n):
    buf = recv_exact(c, n)
    if buf is None:
        raise EOFError
    return buf


def client_hello(c):
    """The ClientHello's cipher suites and whether it lists TLS 1.3 in supported_versions."""
    hdr = read_exact(c, 5)
    if hdr[0] != 22:
        raise ValueError("not a handshake record")
    (rlen,) = struct.unpack("!H", hdr[3:5])
    if rlen > HELLO_MAX:
        raise ValueError("record too long")
    body = read_exact(c, rlen)
    if body[0] != 1:
        raise ValueError("not a ClientHello")
    p = 4 + 2 + 32
    p += 1 + body[p]  # session id
    (n,) = struct.unpack("!H", body[p:p + 2])
    suites = [struct.unpack("!H", body[p + 2 + i:p + 4 + i])[0] for i in range(0, n, 2)]
    p += 2 + n
    p += 1 + body[p]  # compression methods
    tls13 = False
    if p + 2 <= len(body):
        (elen,) = struct.unpack("!H", body[p:p + 2])
        p += 2
        end = min(p + elen, len(body))
        while p + 4 <= end:
            etype, l = struct.unpack("!HH", body[p:p + 4])
            if etype == 43:  # supported_versions
                vers = body[p + 5:p + 4 + l]
                tls13 = any(vers[i:i + 2] == b"\x03\x04" for i in range(0, len(vers), 2))
            p += 4 + l
    return suites, tls13


def server_hello(suite, random):
    hs = struct.pack("!H", 0x0303) + random + b"\x00" + struct.pack("!H", suite) + b"\x00"
    msg = b"\x02" + struct.pack("!I", len(hs))[1:] + hs
    return b"\x16\x03\x03" + struct.pack("!H", len(msg)) + msg


def answer(c, mode):
    suites, tls13 = client_hello(c)
    random = os.urandom(32)
    if mode == "cipher":
        suite = next((s for s in UNOFFERED if s not in suites), UNOFFERED[0])
    else:
        offered = [s for s in suites if s not in TLS13_SUITES and s not in SCSV]
        if not offered:
            return "tls13=%s no TLS 1.2 suite offered" % tls13
        suite = offered[0]
        random = random[:24] + SENTINEL
    c.sendall(server_hello(suite, random))
    c.settimeout(5)
    try:
        reply = c.recv(7)
    except socket.timeout:
        reply = None
    if reply is None:
        got = "no answer"
    elif len(reply) == 7 and reply[0] == 21:
        got = "alert %d %d" % (reply[5], reply[6])
    elif not reply:
        got = "closed"
    else:
        got = "record %d" % reply[0]
    return "tls13=%s suite=0x%04x offered=%s %s" % (
        "yes" if tls13 else "no", suite, "yes" if suite in suites else "no", got)


def main():
    mode, port_file, log = sys.argv[1:4]
    if mode not in ("cipher", "sentinel"):
        sys.exit("mode: cipher or sentinel")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.replace(port_file + ".tmp", port_file)
    while True:
        c, _ = s.accept()
        c.settimeout(10)
        try:
            line = answer(c, mode)
        except (EOFError, ValueError, OSError, IndexError, struct.error) as e:
            line = "bad hello: %s" % e
        finally:
            c.close()
        with open(log, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
