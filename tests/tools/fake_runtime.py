#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile stand-in for a CoreCLR runtime, for tests/e2e/test_hostile.sh.

Run it inside its own mount (and usually PID) namespace with a private tmpfs /tmp, as
start_fake does: it names its diagnostic "socket" exactly as the runtime would,
$TMPDIR/dotnet-diagnostic-<nspid>-<starttime>-socket, so clrattach's discovery finds it, and
then misbehaves according to MODE. It prints "ready <nspid> <path>" once the trap is set.

Modes:
  file, fifo             a regular file / FIFO under the socket name
  symlink-socket         the socket name is a symlink to --link-to (a socket in the helper's root)
  garbage                replies random bytes to any request
  truncated              a valid header announcing a 40-byte payload, then 5 bytes and close
  huge                   a header announcing 65535 bytes, then nothing (keeps the connection)
  silent                 accepts, reads, never replies
  silent-reexec          like silent, but when a client gives up (closes its connection) the
                         fake execs itself again: the same pid and start time, a new program
                         image, its socket bound anew under the same name ("reexec" logged)
  no-accept              never accepts; its own clients fill the listen backlog
  stale                  binds and closes: the file stays, nothing listens
  good                   a well-behaved runtime: ProcessInfo, then AttachProfiler answers S_OK
  good-processinfo-bad-attach   valid ProcessInfo replies, random bytes to AttachProfiler
  exit-on-attach         valid ProcessInfo replies; exits when AttachProfiler arrives
  ansi                   like good, but every ProcessInfo string carries terminal escape
                         sequences and control characters (valid UTF-16: no decoder rejects them)
  paused-refuse-env      a runtime paused at startup (start it with
                         DOTNET_DefaultDiagnosticPortSuspend=1): AttachProfiler answers
                         0x8013135B, SetEnvironmentVariable 0x80070057, ResumeRuntime S_OK
  paused-refuse-startup  the same, but SetEnvironmentVariable S_OK and StartupProfiler E_FAIL
  paused-stall-startup   the same, but StartupProfiler is never answered
  net9                   a .NET 9 runtime: as good, its ProcessInfo2 and 3 say 9.0.11
  net6                   a .NET 6 runtime: ProcessInfo only (ProcessInfo2 and 3, and every
                         .NET 8 command, answer UNKNOWN_COMMAND)
  exit-when-listed       a listening socket, and an inotify watch on its TMPDIR: exits as soon
                         as someone opens that directory (a watcher's discovery looking at it),
                         leaving its pid free for another process between selection and attach

Connect mode (a runtime started with DOTNET_DiagnosticPorts=PATH, for `--listen` tests): the
fake connects to PATH instead of listening, as the runtime's diagnostic port does, and sends
the 34-byte advertisement (ADVR_V1, cookie, pid, reserved) first on every connection.
  connect-good PATH      a runtime paused at startup: one command per connection, reconnecting
                         after each; ProcessInfo*, ProcessEnvironment (DiagnosticPorts=PATH, or
                         PATH,nosuspend with --nosuspend), SetEnvironmentVariable, StartupProfiler
                         and ResumeRuntime answered S_OK; AttachProfiler 0x8013135B while paused
                         (S_OK with --nosuspend, where StartupProfiler is 0x80070057). Logs
                         "request <set>/<id>" per command, "resumed" once resumed, then keeps
                         its last connection open as a runtime does
  connect-none PATH      connects and never sends anything (reconnects when closed)
  connect-bad PATH       sends 34 bytes that are not an advertisement (a zero cookie with
                         --zero-cookie), reconnecting when closed
  connect-slow PATH      sends the advertisement one byte every 200 ms
  connect-churn PATH     a made-up instance per connection (a fresh cookie), its first command
                         refused with E_FAIL, gone; again and again for --seconds S (default
                         10); prints "churned <instances>"
  connect-flood PATH     opens --count N (default 1000) connections that send nothing, holds
                         them, and prints "flood <connected>"
Connect-mode options: --cookie HEX (16 bytes; random by default), --nosuspend,
  --refuse CMD (answer that command with an error: setenv, startup, environment, processinfo,
  resume), --stall CMD (never answer it), --exit-after CMD (answer it, then exit at once: a
  runtime that dies as it resumes), --count N.

Options (any listening mode):
  --socket PATH          binds there instead of under its own name: an impostor of another
                         process, whose name (NSpid, start time) the caller read from /proc
  --socket-mode OCTAL    chmod of the socket once bound (an impostor of another uid makes it
                         0666 so that the victim's user, and clrattach acting as it, can connect)
  --link-to PATH         the target of symlink-socket
  --pi-extra TEXT        appended to every ProcessInfo string; Python escapes are decoded
                         (--pi-extra '\\u009b\\u202e' sends a C1 CSI and a bidi override)
  --comm HEX             sets the process name (/proc/self/comm) to these raw bytes
  --name NAME            sets the process name to NAME (15 bytes), once its socket is up
Further arguments are ignored: they only shape /proc/<pid>/cmdline, hostile input as well.
Every request received is logged to stderr ("request <set>/<id> <len> peer <pid>"), every
connection of the silent mode as "connection".
"""

import ctypes
import os
import socket
import struct
import sys
import threading
import time

MAGIC = b"DOTNET_IPC_V1\x00"
HEADER_SIZE = 20
SET_PROFILER, SET_PROCESS, SET_SERVER = 0x03, 0x04, 0xFF
PROFILER_ATTACH, PROFILER_STARTUP = 0x01, 0x02
PROCESS_INFO, PROCESS_INFO2, PROCESS_INFO3 = 0x00, 0x04, 0x08
PROCESS_RESUME, PROCESS_SETENV = 0x01, 0x03
SERVER_OK = 0x00


def self_identity():
    """(pid, starttime) as the runtime sees itself: the pid of OUR namespace (/proc is
    mounted for it), field 22 of /proc/self/stat. comm may hold spaces and parentheses, so
    the fields are counted from the last ')'."""
    with open("/proc/self/stat") as f:
        stat = f.read()
    rest = stat[stat.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); field 22 is rest[19].
    return int(stat.split(" ", 1)[0]), int(rest[19])


def header(size, cset, cid):
    return MAGIC + struct.pack("<HBBH", size, cset, cid, 0)


def frame(cset, cid, payload):
    return header(HEADER_SIZE + len(payload), cset, cid) + payload


def ipc_string(s):
    """u32 count of UTF-16 units including the NUL, then the units (little-endian)."""
    units = (s + "\x00").encode("utf-16-le")
    return struct.pack("<I", len(units) // 2) + units


# OSC 0 retitles the terminal, CSI 2J clears it, CR rewrites the line: what a person reads
# would no longer be what clrattach meant to say.
EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31m\rFAKE\x08"


def process_info_payload(version, pid, evil=False, extra="", runtime="10.0.0-fake"):
    """ProcessInfo (1), ProcessInfo2 (2) or ProcessInfo3 (3, reply version 1 with a RID)."""
    x = (EVIL if evil else "") + extra
    p = b""
    if version == 3:
        p += struct.pack("<I", 1)
    p += struct.pack("<Q", pid) + bytes(range(16))
    p += ipc_string("/usr/bin/dotnet fake.dll" + x) + ipc_string("Linux" + x)
    p += ipc_string("x64" + x)
    if version >= 2:
        p += ipc_string("fake" + x) + ipc_string(runtime + x)
    if version == 3:
        p += ipc_string("linux-x64" + x)
    return p


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_request(conn):
    """Returns (command_set, command_id, payload) or None when the peer is gone."""
    hdr = recv_exact(conn, HEADER_SIZE)
    if hdr is None or hdr[:14] != MAGIC:
        return None
    size, cset, cid, _ = struct.unpack("<HBBH", hdr[14:])
    payload = recv_exact(conn, max(0, size - HEADER_SIZE))
    if payload is None:
        return None
    return cset, cid, payload


# Connections the fake must keep open (silent, huge): closing them would end the client's wait.
held = []


def serve(conn, mode, nspid, log, extra=""):
    if mode == "silent":
        log.write("connection\n")
        log.flush()
        conn.recv(4096)
        held.append(conn)
        return
    if mode == "silent-reexec":
        log.write("connection\n")
        log.flush()
        # Reads until the client closes: it gave up waiting, and this "runtime" starts over as
        # a new image (each exec a new instance for a watcher that keys on the image).
        while conn.recv(4096):
            pass
        log.write("reexec\n")
        log.flush()
        os.execv(sys.executable, [sys.executable] + sys.argv)
    if mode == "garbage":
        conn.recv(4096)
        # Never the magic by accident: the first byte is forced off 'D'.
        conn.sendall(b"\x00" + os.urandom(63))
        conn.close()
        return
    if mode == "truncated":
        conn.recv(4096)
        conn.sendall(header(HEADER_SIZE + 40, SET_SERVER, SERVER_OK) + b"\x00" * 5)
        conn.close()
        return
    if mode == "huge":
        conn.recv(4096)
        conn.sendall(header(65535, SET_SERVER, SERVER_OK))
        held.append(conn)
        return
    req = read_request(conn)
    if req is None:
        conn.close()
        return
    cset, cid, payload = req
    # Who asks: the pid as this namespace sees it, 0 for a process outside it (another test's
    # `clrattach ps` on the same machine asks every runtime it can see).
    peer = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    log.write("request %02x/%02x %d peer %d\n" % (cset, cid, len(payload), peer))
    log.flush()
    if mode == "net6" and cset == SET_PROCESS and cid in (PROCESS_INFO2, PROCESS_INFO3):
        conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", 0x80131385)))
    elif cset == SET_PROCESS and cid in (PROCESS_INFO, PROCESS_INFO2, PROCESS_INFO3):
        version = {PROCESS_INFO: 1, PROCESS_INFO2: 2, PROCESS_INFO3: 3}[cid]
        conn.sendall(frame(SET_SERVER, SERVER_OK,
                           process_info_payload(version, nspid, mode == "ansi", extra,
                                                "9.0.11-fake" if mode == "net9" else "10.0.0-fake")))
    elif mode.startswith("paused-") and (cset, cid) != (SET_PROCESS, PROCESS_RESUME):
        # Paused at startup: what each command gets, by mode (ResumeRuntime below: S_OK).
        answers = {
            (SET_PROFILER, PROFILER_ATTACH): 0x8013135B,
            (SET_PROCESS, PROCESS_SETENV): 0x80070057 if mode == "paused-refuse-env" else 0,
            (SET_PROFILER, PROFILER_STARTUP): 0x80004005,
        }
        if (cset, cid) == (SET_PROFILER, PROFILER_STARTUP) and mode == "paused-stall-startup":
            held.append(conn)
            return
        hr = answers.get((cset, cid), 0x80131385)
        conn.sendall(frame(SET_SERVER, 0xFF if hr else SERVER_OK, struct.pack("<I", hr)))
    elif cset == SET_PROCESS and cid == PROCESS_RESUME:
        conn.sendall(frame(SET_SERVER, SERVER_OK, struct.pack("<I", 0)))
    elif cset == SET_PROFILER and cid == PROFILER_ATTACH:
        if mode == "exit-on-attach":
            # Pid 1 of its namespace ignores its own SIGKILL: leave with _exit instead.
            os._exit(0)
        if mode == "good-processinfo-bad-attach":
            conn.sendall(b"\x00" + os.urandom(31))
        else:
            conn.sendall(frame(SET_SERVER, SERVER_OK, struct.pack("<I", 0)))
    else:
        conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", 0x80131385)))
    conn.close()


IN_OPEN = 0x20


def set_comm(comm):
    with open("/proc/self/comm", "w") as f:
        f.write(comm[:15])


def wait_until_listed(directory, comm):
    """Says ready, then blocks until `directory` is opened by anyone (inotify IN_OPEN). The
    listing a discovery makes opens it; an O_PATH open (pinning, walking) does not count. The
    comm a watcher may select on is set only once the watch is in place."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, directory.encode(), IN_OPEN) < 0:
        sys.exit("fake_runtime: inotify: %s" % os.strerror(ctypes.get_errno()))
    if comm:
        set_comm(comm)
    nspid, _ = self_identity()
    print("ready %d %s" % (nspid, directory), flush=True)
    os.read(fd, 4096)


ADVERT_MAGIC = b"ADVR_V1\x00"
PROCESS_ENV = 0x02
CMD_NAMES = {
    (SET_PROCESS, PROCESS_INFO): "processinfo", (SET_PROCESS, PROCESS_INFO2): "processinfo",
    (SET_PROCESS, PROCESS_INFO3): "processinfo", (SET_PROCESS, PROCESS_ENV): "environment",
    (SET_PROCESS, PROCESS_SETENV): "setenv", (SET_PROCESS, PROCESS_RESUME): "resume",
    (SET_PROFILER, PROFILER_STARTUP): "startup", (SET_PROFILER, PROFILER_ATTACH): "attach",
}


def advertisement(cookie, pid):
    return ADVERT_MAGIC + cookie + struct.pack("<QH", pid, 0)


def connect_to(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    return c


def environment_block(port_cfg):
    vars_ = ["HOME=/root", "DOTNET_DiagnosticPorts=" + port_cfg]
    return struct.pack("<I", len(vars_)) + b"".join(ipc_string(v) for v in vars_)


def connect_good(path, cookie, nspid, opts, log):
    """One command per connection, as the runtime's connect port serves them."""
    paused = not opts["nosuspend"]
    # What StartupProfiler recorded is loaded as the runtime resumes: from then on an
    # AttachProfiler (clrattach's verification) is refused as the real runtime does.
    startup_taken = False
    port_cfg = path + (",nosuspend" if opts["nosuspend"] else "")
    while True:
        try:
            conn = connect_to(path)
        except OSError:
            time.sleep(0.01)
            continue
        conn.sendall(advertisement(cookie, nspid))
        req = read_request(conn)
        if req is None:
            # The tool closed without a command: the runtime resets and reconnects.
            conn.close()
            time.sleep(0.01)
            continue
        cset, cid, payload = req
        name = CMD_NAMES.get((cset, cid), "unknown")
        log.write("request %02x/%02x %s\n" % (cset, cid, name))
        log.flush()
        if name == opts["stall"]:
            held.append(conn)
            continue
        if name == opts["refuse"]:
            conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", 0x80004005)))
            conn.close()
            continue
        if name == "processinfo":
            version = {PROCESS_INFO: 1, PROCESS_INFO2: 2, PROCESS_INFO3: 3}[cid]
            p = process_info_payload(version, nspid)
            p = p.replace(bytes(range(16)), cookie, 1)
            conn.sendall(frame(SET_SERVER, SERVER_OK, p))
        elif name == "environment":
            block = environment_block(port_cfg)
            conn.sendall(frame(SET_SERVER, SERVER_OK, struct.pack("<IH", len(block), 0)) + block)
        elif name == "attach" and not paused and startup_taken:
            conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", 0x8013136A)))
            log.write("verified\n")
            log.flush()
        elif name in ("setenv", "resume") or (name == "startup" and paused) or \
                (name == "attach" and not paused):
            conn.sendall(frame(SET_SERVER, SERVER_OK, struct.pack("<I", 0)))
            startup_taken |= name == "startup"
            if name == "resume" and paused:
                paused = False
                log.write("resumed\n")
                log.flush()
            if name == "attach":
                log.write("attached\n")
                log.flush()
        else:
            hr = {"attach": 0x8013135B, "startup": 0x80070057}.get(name, 0x80131385)
            conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", hr)))
        conn.close()
        if name == opts["exit_after"]:
            log.write("exited\n")
            log.flush()
            os._exit(0)


def connect_main(mode, path, args):
    def opt(name):
        return args[args.index(name) + 1] if name in args[:-1] else None
    cookie = bytes.fromhex(opt("--cookie")) if opt("--cookie") else os.urandom(16)
    nspid, _ = self_identity()
    log = sys.stderr
    print("ready %d %s" % (nspid, path), flush=True)
    if mode == "connect-good":
        opts = {"nosuspend": "--nosuspend" in args, "refuse": opt("--refuse"),
                "stall": opt("--stall"), "exit_after": opt("--exit-after")}
        connect_good(path, cookie, nspid, opts, log)
    elif mode in ("connect-none", "connect-bad", "connect-slow"):
        while True:
            try:
                conn = connect_to(path)
            except OSError:
                time.sleep(0.05)
                continue
            try:
                if mode == "connect-bad":
                    adv = advertisement(bytes(16) if "--zero-cookie" in args else cookie, nspid)
                    conn.sendall(adv if "--zero-cookie" in args else b"X" * len(adv))
                elif mode == "connect-slow":
                    for b in advertisement(cookie, nspid):
                        conn.sendall(bytes([b]))
                        time.sleep(0.2)
                conn.recv(4096)  # until the tool closes it
            except OSError:
                pass
            conn.close()
            log.write("closed\n")
            log.flush()
            time.sleep(0.05)
    elif mode == "connect-churn":
        # A made-up instance per connection: a fresh cookie, the first command refused with
        # E_FAIL, gone; again and again (--seconds S, default 10), as fast as it is served.
        end = time.monotonic() + float(opt("--seconds") or 10)
        made = 0
        while time.monotonic() < end:
            try:
                conn = connect_to(path)
            except OSError:
                time.sleep(0.005)
                continue
            try:
                conn.sendall(advertisement(os.urandom(16), nspid))
                conn.settimeout(2)
                if read_request(conn) is not None:
                    conn.sendall(frame(SET_SERVER, 0xFF, struct.pack("<I", 0x80004005)))
                    made += 1
            except OSError:
                pass
            conn.close()
        print("churned %d" % made, flush=True)
        while True:
            time.sleep(3600)
    elif mode == "connect-flood":
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        count = int(opt("--count") or 1000)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 64)), hard))
        connected = 0
        give_up = time.monotonic() + 60
        while connected < count and time.monotonic() < give_up:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except (BlockingIOError, InterruptedError):
                # A Unix socket's full backlog: not connected. Wait for the tool to drain it.
                c.close()
                time.sleep(0.005)
                continue
            except OSError:
                c.close()
                time.sleep(0.005)
                continue
            connected += 1
            held.append(c)
        print("flood %d" % connected, flush=True)
        while True:
            time.sleep(3600)
    else:
        sys.exit("fake_runtime: unknown mode %s" % mode)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    mode = args[0]
    if mode.startswith("connect-"):
        if len(args) < 2:
            sys.exit(__doc__)
        connect_main(mode, args[1], args[2:])
        return
    # Further arguments are ignored: they only shape /proc/<pid>/cmdline, which is hostile
    # input for clrattach too.
    def opt(name):
        return args[args.index(name) + 1] if name in args[:-1] else None
    link_to = opt("--link-to")
    extra = opt("--pi-extra") or ""
    extra = extra.encode("utf-8", "surrogateescape").decode("unicode_escape")
    comm = opt("--comm")
    name = opt("--name")
    nspid, starttime = self_identity()
    tmpdir = os.environ.get("TMPDIR", "/tmp")
    path = opt("--socket") or os.path.join(
        tmpdir, "dotnet-diagnostic-%d-%d-socket" % (nspid, starttime))
    socket_mode = opt("--socket-mode")
    # The runtime's own socket is 0600; keep new files private as well.
    os.umask(0o077)
    log = sys.stderr

    listener = None
    if mode == "file":
        with open(path, "w") as f:
            f.write("not a socket\n")
    elif mode == "fifo":
        os.mkfifo(path)
    elif mode == "symlink-socket":
        os.symlink(link_to, path)
    elif mode == "stale":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
    elif mode == "no-accept":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(0)
        # Fill the backlog ourselves: a further connect() then gets EAGAIN, as with a runtime
        # whose server thread is wedged.
        for _ in range(16):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except (BlockingIOError, InterruptedError):
                break
            held.append(c)
    elif mode in ("garbage", "truncated", "huge", "silent", "silent-reexec", "good", "ansi", "net6", "net9",
                  "paused-refuse-env", "paused-refuse-startup", "paused-stall-startup",
                  "good-processinfo-bad-attach", "exit-on-attach", "exit-when-listed"):
        if mode == "silent-reexec" and os.path.lexists(path):
            os.unlink(path)  # our own, from before the exec
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(16)
    else:
        sys.exit("fake_runtime: unknown mode %s" % mode)
    if socket_mode:
        os.chmod(path, int(socket_mode, 8))
    if mode == "ansi":
        # comm is target-controlled as well (prctl PR_SET_NAME); 15 bytes at most.
        with open("/proc/self/comm", "w") as f:
            f.write("\x1b[2J\x1b]0;x\x07")
    if comm:
        with open("/proc/self/comm", "wb") as f:
            f.write(bytes.fromhex(comm))

    if mode == "exit-when-listed":
        wait_until_listed(tmpdir, name)
        os._exit(0)
    if name:
        set_comm(name)
    print("ready %d %s" % (nspid, path), flush=True)
    if listener is None or mode == "no-accept":
        while True:
            time.sleep(3600)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, mode, nspid, log, extra), daemon=True).start()


if __name__ == "__main__":
    main()
