#!/usr/bin/env bash
# A hostile target cannot turn clrattach against us (issue 3). Each trap is built for real: a
# fake runtime (tests/tools/fake_runtime.py) in its own mount and PID namespace plants a file, a
# FIFO, a symlink or a misbehaving server under its diagnostic socket name, or a real .NET target
# gets a symlink where the profiler will be written. Every case asserts the documented exit code,
# a clear message, a bounded wall time, no crash (exit < 128), and exactly what was written.
. "$(dirname "$0")/lib.sh"
require_env
command -v valgrind >/dev/null || { echo "FAIL valgrind-missing: install valgrind (make deps)"; exit 1; }

VICTIM_SERVER="$ROOT/tests/tools/victim_server.py"
# Per exchange; a case must end well within 3x this even when every exchange stalls.
TIMEOUT_S=2
MAX_MS=6000


# snapshot PID: every entry under the target's /tmp, /var/tmp and /dev/shm (its view) with type,
# size, owner and mtime: two equal snapshots mean nothing was created, removed or rewritten.
snapshot() {
    (cd "/proc/$1/root" && find tmp var/tmp dev/shm -printf '%p %y %s %U %T@\n' 2>&1 | sort)
}

# timed_attach PID [args...]: clr attach with the probe and a short deadline; MS is the wall time.
# VERBOSE=1 shows what a person would read for each case.
timed_attach() {
    local pid=$1
    shift
    local t0 t1
    t0=$(date +%s%N)
    clr attach --pid "$pid" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S "$@"
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" >&2
    return 0
}

# check_refused NAME WANT_RC PATTERN BEFORE AFTER: the common verdict of a refused attach.
check_refused() {
    local name=$1 want=$2 pattern=$3 before=$4 after=$5
    if [ $RC -ge 128 ]; then
        fail "$name" "crashed: exit $RC (signal $((RC - 128))): $(cat "$ERR")"
    elif [ $RC -ne "$want" ]; then
        fail "$name" "exit $RC, want $want: $(cat "$ERR")"
    elif ! grep -qiE "$pattern" "$ERR"; then
        fail "$name" "message does not match /$pattern/: $(cat "$ERR")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "$name" "took $MS ms with --timeout $TIMEOUT_S"
    elif [ "$before" != "$after" ]; then
        fail "$name" "the target's filesystem changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
    else
        ok "$name (exit $RC in $MS ms)"
    fi
}

# hostile_case NAME MODE WANT_RC PATTERN [start_fake options]: the fake refuses, nothing written.
hostile_case() {
    local name=$1 mode=$2 want=$3 pattern=$4
    shift 4
    if ! start_fake "$name" "$mode" "$@"; then
        fail "$name" "fake runtime did not start"
        return
    fi
    local before after
    before=$(snapshot "$TARGET_PID")
    timed_attach "$TARGET_PID"
    after=$(snapshot "$TARGET_PID")
    check_refused "$name" "$want" "$pattern" "$before" "$after"
}

# The socket name holds something that is not a socket: refused before any connect().
hostile_case not-socket-file file 9 "not a socket"
hostile_case not-socket-fifo fifo 9 "not a socket"

# The socket name is a symlink to a live socket in OUR root: connect() would follow it and talk
# to that server with our privileges. The victim records every connection it receives.
VICTIM_SOCK=/run/clrattach-test-victim.sock
VICTIM_LOG="$WORK/victim.log"
python3 "$VICTIM_SERVER" "$VICTIM_SOCK" "$VICTIM_LOG" >"$WORK/victim.out" 2>&1 &
VICTIM=$!
disown "$VICTIM"
TARGET_PIDS+=("$VICTIM")
for _ in $(seq 100); do grep -q ready "$WORK/victim.out" 2>/dev/null && break; sleep 0.05; done
# The victim must really be reachable, or "no connection" would prove nothing.
if python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
    "$VICTIM_SOCK" && sleep 0.2 && [ "$(wc -l <"$VICTIM_LOG")" = 1 ]; then
    : >"$VICTIM_LOG"
    hostile_case symlink-socket symlink-socket 9 "not a socket" --link-to "$VICTIM_SOCK"
    sleep 0.2
    n=$(wc -l <"$VICTIM_LOG")
    [ "$n" = 0 ] && ok "symlink-socket-victim-untouched" ||
        fail "symlink-socket-victim-untouched" "the victim socket received $n connection(s)"
else
    fail "symlink-socket" "the victim server at $VICTIM_SOCK does not record connections"
fi

# Misbehaving servers: each ends with a clear protocol error within the deadline, before any
# delivery (ProcessInfo comes first).
hostile_case garbage garbage 9 "magic"
hostile_case truncated truncated 9 "truncated"
hostile_case huge-stall huge 9 "truncated|deadline|timed out"
hostile_case silent silent 9 "no reply before the deadline|timed out"
hostile_case no-accept no-accept 9 "backlog|timed out|deadline"
hostile_case stale-socket stale 9 "stale"

# The target's TMPDIR is a symlink inside its own root (to a real, answering socket's directory):
# followed there, as the runtime follows it (resolved in the target's root, never ours: the
# escapes are tests/unit/test_diag_socket.c's), and the attach goes through.
if start_fake tmpdir-symlink good \
    --pre "mkdir -m 1777 /tmp/real && ln -s /tmp/real /tmp/link" --env TMPDIR=/tmp/link; then
    timed_attach "$TARGET_PID"
    if [ $RC -eq 0 ] && grep -aq '^request 03/01 ' "$TARGET_LOG"; then
        ok "tmpdir-symlink (exit 0 in $MS ms)"
    else
        fail "tmpdir-symlink" "exit $RC: $(cat "$ERR") $(cat -v "$TARGET_LOG")"
    fi
else
    fail "tmpdir-symlink" "fake runtime did not start"
fi

# ProcessInfo is answered correctly, AttachProfiler with garbage: the .so was delivered (the only
# new file, in the fake's /tmp, owned by the fake's uid) and the attach is a protocol error.
if start_fake bad-attach good-processinfo-bad-attach --uid 1000; then
    P=$TARGET_PID
    before=$(snapshot "$P")
    timed_attach "$P" -o json
    after=$(snapshot "$P")
    new=$(comm -13 <(echo "$before" | awk '{print $1}') <(echo "$after" | awk '{print $1}'))
    gone=$(comm -23 <(echo "$before" | awk '{print $1}') <(echo "$after" | awk '{print $1}'))
    dpath=$(json_get "$OUT" delivered_path)
    outcome=$(json_get "$OUT" outcome)
    if [ $RC -ne 9 ] || [ "$outcome" != protocol_error ]; then
        fail "bad-attach" "exit $RC, outcome '$outcome': $(cat "$OUT") $(cat "$ERR")"
    elif ! json_get "$OUT" error | grep -q "magic"; then
        fail "bad-attach" "the error does not say what was wrong: $(cat "$OUT")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "bad-attach" "took $MS ms"
    elif [ -n "$gone" ] || [ "$(echo "$new" | grep -c .)" != 1 ]; then
        fail "bad-attach" "want exactly one new file, got new: [$new] removed: [$gone]"
    else
        case $new in
        tmp/*.so)
            owner=$(stat -c %u "/proc/$P/root/$new")
            if [ "$owner" != 1000 ]; then
                fail "bad-attach" "/$new owned by uid $owner, not the fake's 1000"
            elif [ -n "$dpath" ] && [ "$dpath" != "/$new" ]; then
                fail "bad-attach" "delivered_path '$dpath' but the new file is /$new"
            else
                ok "bad-attach (exit 9, delivered /$new owned by 1000)"
            fi
            ;;
        *) fail "bad-attach" "the new file '$new' is not a .so in the fake's /tmp" ;;
        esac
    fi
    # The fake logged the AttachProfiler request: the garbage really answered it.
    grep -q "^request 03/01" "$TARGET_LOG" && ok "bad-attach-request-seen" ||
        fail "bad-attach-request-seen" "the fake never received AttachProfiler"
else
    fail "bad-attach" "fake runtime did not start"
fi

# The target exits when AttachProfiler arrives: a clear error, no hang. The app died during the
# attach, so that is what it is called (target_died, exit 12), never a plain protocol error.
if start_fake exit-on-attach exit-on-attach; then
    P=$TARGET_PID
    timed_attach "$P"
    if [ $RC -ge 128 ]; then
        fail "exit-on-attach" "crashed: exit $RC"
    elif [ $RC -ne 12 ]; then
        fail "exit-on-attach" "exit $RC, want 12 (target_died): $(cat "$ERR")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "exit-on-attach" "took $MS ms"
    elif ! grep -qiE "app died during the attach" "$ERR"; then
        fail "exit-on-attach" "unclear message: $(cat "$ERR")"
    else
        ok "exit-on-attach (exit $RC in $MS ms)"
    fi
else
    fail "exit-on-attach" "fake runtime did not start"
fi

# A symlink planted under the profiler's content-addressed name. First learn the name from a
# real delivery, then plant links under it in a fresh .NET target: (a) to a file in OUR root,
# (b) to another file inside the target's own root. Delivery must refuse, never write through.
if start_target learn-name; then
    clr attach --pid "$TARGET_PID" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
    LEARNED=$(json_get "$OUT" delivered_path)
    [ $RC -eq 0 ] && [ -n "$LEARNED" ] || fail "learn-delivered-name" "exit $RC: $(cat "$ERR")"
    kill -KILL "$TARGET_PID" 2>/dev/null
fi
if [ -n "${LEARNED:-}" ]; then
    NAME=$(basename "$LEARNED")
    OURS="$WORK/ours-victim.txt"
    OURS_NEW="$WORK/ours-never-created.so"
    echo "helper's file" >"$OURS"
    chmod 666 "$OURS"
    ours_before=$(stat -c '%s %Y %i' "$OURS"; sha256sum <"$OURS")
    if start_target planted --uid 1000 --pre "mkdir /tmp/d && chmod 1777 /tmp/d && ln -s '$OURS' '/tmp/$NAME' && echo inner >/tmp/inner.txt && chown 1000 /tmp/inner.txt && ln -s '$OURS_NEW' '/tmp/d/$NAME'"; then
        P=$TARGET_PID
        # (a) into our root: --target-dir pins the directory, so no other candidate can take it.
        before=$(snapshot "$P")
        timed_attach "$P" --target-dir /tmp
        after=$(snapshot "$P")
        check_refused "planted-link-ours" 6 "$NAME.*(symbolic link|ELOOP)" "$before" "$after"
        ours_after=$(stat -c '%s %Y %i' "$OURS"; sha256sum <"$OURS")
        [ "$ours_before" = "$ours_after" ] && ok "planted-link-ours-untouched" ||
            fail "planted-link-ours-untouched" "$OURS changed: $ours_before -> $ours_after"
        # A dangling link to a path in our root: nothing may be created there.
        timed_attach "$P" --target-dir /tmp/d
        check_refused "planted-link-dangling" 6 "$NAME.*(symbolic link|ELOOP)" "$before" "$(snapshot "$P")"
        [ ! -e "$OURS_NEW" ] && ok "planted-link-dangling-not-created" ||
            fail "planted-link-dangling-not-created" "$OURS_NEW was created"
        # (b) to another file inside the target's own root.
        ln -sfn /tmp/inner.txt "/proc/$P/root/tmp/$NAME"
        inner_before=$(stat -c '%s %Y %i' "/proc/$P/root/tmp/inner.txt"; sha256sum <"/proc/$P/root/tmp/inner.txt")
        before=$(snapshot "$P")
        timed_attach "$P" --target-dir /tmp
        after=$(snapshot "$P")
        check_refused "planted-link-inner" 6 "$NAME.*(symbolic link|ELOOP)" "$before" "$after"
        inner_after=$(stat -c '%s %Y %i' "/proc/$P/root/tmp/inner.txt"; sha256sum <"/proc/$P/root/tmp/inner.txt")
        [ "$inner_before" = "$inner_after" ] && ok "planted-link-inner-untouched" ||
            fail "planted-link-inner-untouched" "/tmp/inner.txt changed: $inner_before -> $inner_after"
        is_mapped "$P" "$NAME" && fail "planted-link-not-loaded" "$NAME is mapped in the target" ||
            ok "planted-link-not-loaded"
    else
        fail "planted-link" "target did not start"
    fi
    # Default placement (no --target-dir): the link rules /tmp out; another candidate directory
    # may take the profiler (then it must be loaded from there), or delivery fails (6). Either
    # way nothing is written through the link. /var/tmp and /dev/shm are the target's own here.
    if start_target planted-default --pre "mount -t tmpfs -o mode=1777 tmpfs /var/tmp && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && ln -s '$OURS' '/tmp/$NAME'"; then
        P=$TARGET_PID
        timed_attach "$P" -o json
        d=$(json_get "$OUT" delivered_path)
        ours_after=$(stat -c '%s %Y %i' "$OURS"; sha256sum <"$OURS")
        link=$(readlink "/proc/$P/root/tmp/$NAME")
        # start_target rewrote the --pre paths to the namespace's view of our checkout.
        if [ "$ours_before" != "$ours_after" ] || [ "$link" != "$(ns_path "$OURS")" ]; then
            fail "planted-link-default" "$OURS or the link changed ($link)"
        elif [ $RC -eq 6 ]; then
            ok "planted-link-default (refused, exit 6)"
        elif [ $RC -eq 0 ] && [ "$d" != "/tmp/$NAME" ] && [ -f "/proc/$P/root$d" ] &&
            [ ! -L "/proc/$P/root$d" ] && is_mapped "$P" "$d"; then
            ok "planted-link-default (delivered instead to $d)"
        else
            fail "planted-link-default" "exit $RC, delivered '$d': $(cat "$ERR")"
        fi
    else
        fail "planted-link-default" "target did not start"
    fi
fi

# has_ctl FILE: a control byte other than tab and newline, which a terminal would act upon.
has_ctl() { LC_ALL=C grep -q "[[:cntrl:]]" <(tr -d '\t\n' <"$1"); }

# Strings from the target reach a terminal: ProcessInfo with escape sequences and control
# characters (valid UTF-16, so the decoder takes them) must not come out raw on stdout or stderr,
# in text output or in ps. JSON escapes them by construction.
ESC=$'\e'
if start_fake ansi ansi --arg "${ESC}]0;argv${ESC}\\${ESC}[2J"; then
    P=$TARGET_PID
    timed_attach "$P"
    raw_out="$OUT" raw_err="$ERR"
    if [ $RC -ge 128 ]; then
        fail "ansi-attach-text" "crashed: exit $RC"
    elif has_ctl "$raw_out" || has_ctl "$raw_err"; then
        fail "ansi-attach-text" "raw control bytes in the output (exit $RC): $(cat -v "$raw_out" "$raw_err" | tr '\n' ' ')"
    else
        ok "ansi-attach-text (exit $RC)"
    fi
    clr ps
    if [ $RC -ge 128 ]; then
        fail "ansi-ps-text" "crashed: exit $RC"
    elif has_ctl "$OUT" || has_ctl "$ERR"; then
        fail "ansi-ps-text" "raw control bytes in the output: $(grep -a "^$P " "$OUT" | cat -v)"
    else
        ok "ansi-ps-text"
    fi
else
    fail "ansi" "fake runtime did not start"
fi
# The same from the error path: a process that is not .NET, whose comm (printed in the "no
# diagnostic socket" message) and argv carry escape sequences.
python3 -c 'import sys, time; open("/proc/self/comm", "w").write(sys.argv[1]); time.sleep(60)' \
    "${ESC}[2J${ESC}]0;x"$'\a' "${ESC}[31mred" &
EVILCOMM=$!
disown "$EVILCOMM"
TARGET_PIDS+=("$EVILCOMM")
for _ in $(seq 50); do grep -q "$ESC" "/proc/$EVILCOMM/comm" 2>/dev/null && break; sleep 0.05; done
timed_attach "$EVILCOMM"
if [ $RC -ne 4 ]; then
    fail "ansi-comm-error" "exit $RC, want 4 (not .NET): $(cat -v "$ERR")"
elif has_ctl "$OUT" || has_ctl "$ERR"; then
    fail "ansi-comm-error" "raw control bytes in the error: $(cat -v "$ERR" | tr '\n' ' ')"
else
    ok "ansi-comm-error"
fi
# TMPDIR comes from the target's environment and would be quoted in errors: one holding a control
# byte is refused as malformed target data (exit 9), and never printed raw.
if start_fake ansi-tmpdir stale --pre "mkdir -m 1777 '/tmp/${ESC}[2Jd'" --env "TMPDIR='/tmp/${ESC}[2Jd'"; then
    timed_attach "$TARGET_PID"
    if [ $RC -ne 9 ]; then
        fail "ansi-tmpdir-error" "exit $RC, want 9 (refused TMPDIR): $(cat -v "$ERR")"
    elif has_ctl "$OUT" || has_ctl "$ERR"; then
        fail "ansi-tmpdir-error" "raw control bytes in the error: $(cat -v "$ERR" | tr '\n' ' ')"
    else
        ok "ansi-tmpdir-error"
    fi
else
    fail "ansi-tmpdir-error" "fake runtime did not start"
fi

# Under valgrind: no memory error or definite leak on two hostile paths. valgrind itself makes
# syscalls the seccomp filter forbids, so these runs alone use --seccomp=off.
VG=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --track-fds=no)
VG_CLRATTACH=$(vg_clrattach) || { echo "FAIL valgrind-build: the plain build for valgrind did not build"; exit 1; }
vg_case() {
    local name=$1 mode=$2
    shift 2
    if ! start_fake "$name" "$mode" "$@"; then
        fail "$name" "fake runtime did not start"
        return
    fi
    OUT="$WORK/$name.out" ERR="$WORK/$name.err"
    "${VG[@]}" "$VG_CLRATTACH" attach --seccomp=off --pid "$TARGET_PID" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S >"$OUT" 2>"$ERR"
    RC=$?
    if [ $RC -eq 9 ] && ! grep -q "==[0-9]*==" "$ERR"; then
        ok "$name"
    else
        fail "$name" "exit $RC: $(head -40 "$ERR")"
    fi
}
vg_case valgrind-garbage garbage
: >"$VICTIM_LOG"
vg_case valgrind-symlink-socket symlink-socket --link-to "$VICTIM_SOCK"
sleep 0.2
[ "$(wc -l <"$VICTIM_LOG")" = 0 ] && ok "valgrind-symlink-socket-victim-untouched" ||
    fail "valgrind-symlink-socket-victim-untouched" "the victim socket received a connection"
rm -f "$VICTIM_SOCK"

finish e2e-hostile
