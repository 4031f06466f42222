#!/usr/bin/env bash
# A hostile target's files cannot hang, steer or kill clrattach (issue 11). Each trap is built for
# real in a fake runtime's own mount and PID namespace (tests/tools/fake_runtime.py, "good" mode:
# it answers like a runtime, so only the file traps decide): a FIFO under the profiler's
# content-addressed name; an inotify racer that renames a FIFO over every temporary file it sees
# (tests/tools/tmp_racer.py); a pty under the name while `clrattach watch` is a session leader
# without a terminal, as a container's entrypoint is (tests/tools/pty_trap.py); and the operator's
# own inputs naming a FIFO. Every clrattach run is under `timeout`: a hang is a failure, not a
# stuck suite. Each case asserts the exit code, a clear message, a bounded wall time and what the
# target's filesystem holds afterwards.
. "$(dirname "$0")/lib.sh"
require_env
command -v valgrind >/dev/null || { echo "FAIL valgrind-missing: install valgrind (make deps)"; exit 1; }

RACER="$ROOT/tests/tools/tmp_racer.py"
PTY_TRAP="$ROOT/tests/tools/pty_trap.py"
TIMEOUT_S=2
MAX_MS=6000
HANG_S=${HANG_S:-30} # `timeout` for each run: far above MAX_MS, only there so a hang cannot stall the suite
# The content-addressed name clrattach gives the probe: "<stem>-<16 hex of its sha256>.so".
NAME="libclrprobe-$(sha256sum "$PROBE" | cut -c1-16).so"
# Every fake carries this in its command line, so a watcher here selects this run's fakes only,
# never those of another suite running on the machine.
TOKEN="hostile-files-$$"

# start_good NAME [start_fake options]: the fake runtime in "good" mode (it answers like a
# runtime, so only the file traps decide), its command line marked with this run's token.
start_good() {
    local n=$1
    shift
    start_fake "$n" good --arg "$TOKEN-$n" "$@"
}

# in_target PID LOG CMD...: runs CMD in the target's mount namespace (as root), in the
# background, output to LOG; waits for its "ready" line. Sets HELPER_PID.
in_target() {
    local pid=$1 log=$2
    shift 2
    nsenter --mount="/proc/$pid/ns/mnt" "$@" >"$log" 2>&1 &
    HELPER_PID=$!
    disown "$HELPER_PID"
    TARGET_PIDS+=("$HELPER_PID")
    local i
    for i in $(seq 1 100); do
        grep -q '^ready' "$log" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "in_target: $* did not start: $(cat "$log")" >&2
    return 1
}

# snapshot PID: every entry under the target's /tmp, /var/tmp and /dev/shm with type, size,
# owner and mtime: equal snapshots mean nothing was created, removed or rewritten.
snapshot() {
    (cd "/proc/$1/root" && find tmp var/tmp dev/shm -printf '%p %y %s %U %T@\n' 2>&1 | sort)
}

# timed_attach PID [args...]: an attach of the probe with a short deadline, under `timeout`;
# MS is the wall time, RC the exit code (124: still running after HANG_S).
timed_attach() {
    local pid=$1
    shift
    local t0 t1
    t0=$(date +%s%N)
    OUT="$WORK/out.txt" ERR="$WORK/err.txt"
    timeout -s KILL $HANG_S "$CLRATTACH" attach --pid "$pid" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" >&2
    return 0
}

# verdict NAME WANT_RC PATTERN: exit code, message and wall time of the last timed_attach.
verdict() {
    local name=$1 want=$2 pattern=$3
    if [ $RC -eq 137 ] || [ $RC -eq 124 ]; then
        fail "$name" "hung: killed after $HANG_S s ($(tr '\n' ' ' <"$ERR"))"
    elif [ $RC -ge 128 ]; then
        fail "$name" "crashed: exit $RC (signal $((RC - 128))): $(cat "$ERR")"
    elif [ $RC -ne "$want" ]; then
        fail "$name" "exit $RC, want $want: $(cat "$ERR")"
    elif ! grep -qiE "$pattern" "$ERR"; then
        fail "$name" "message does not match /$pattern/: $(cat "$ERR")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "$name" "took $MS ms with --timeout $TIMEOUT_S"
    else
        return 0
    fi
    return 1
}

# type_of PID PATH: what the target holds at PATH ("fifo", "regular file", ... or "absent").
type_of() {
    stat -c %F "/proc/$1/root$2" 2>/dev/null || echo absent
}

# (a) A FIFO under the content-addressed name. The name is predictable: anyone with the .so can
# compute it. Delivery must refuse it at once (it used to block in open() forever, deaf to
# SIGTERM and --timeout), exit 6, and leave the target's files as they were.
if start_good fifo-name --uid 1000 --pre "mkfifo -m 666 /tmp/$NAME"; then
    P=$TARGET_PID
    before=$(snapshot "$P")
    timed_attach "$P" --target-dir /tmp
    after=$(snapshot "$P")
    if verdict fifo-name 6 "$NAME' exists and is not a regular file: it is a FIFO"; then
        if [ "$before" != "$after" ]; then
            fail fifo-name "the target's files changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
        else
            ok "fifo-name (exit 6 in $MS ms, target untouched)"
        fi
    fi
    # The same trap in every candidate directory, without --target-dir: each is passed over
    # with its reason, still in bounded time.
    for d in /var/tmp /dev/shm; do mkfifo "/proc/$P/root$d/$NAME"; done
    timed_attach "$P"
    verdict fifo-name-every-candidate 6 "/dev/shm.*not a regular file: it is a FIFO" &&
        ok "fifo-name-every-candidate (exit 6 in $MS ms)"
else
    fail fifo-name "fake runtime did not start"
fi

# (a'') The FIFO trap under valgrind (plain build, --seccomp=off as in test_valgrind.sh): refused
# in bounded time with no memory error or leak on that path.
if start_good fifo-valgrind --pre "mkfifo -m 666 /tmp/$NAME"; then
    P=$TARGET_PID
    VGF=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
    VGF_CLRATTACH=$(vg_clrattach) || VGF_CLRATTACH=""
    timeout -s KILL 120 "${VGF[@]}" "$VGF_CLRATTACH" attach --seccomp=off --pid "$P" \
        --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout "$TIMEOUT_S" --target-dir /tmp \
        >"$WORK/fifo-vg.out" 2>"$WORK/fifo-vg.err"
    vrc=$?
    if [ $vrc -eq 6 ] && grep -q "is a FIFO" "$WORK/fifo-vg.err" && ! grep -q "==[0-9]*==" "$WORK/fifo-vg.err" &&
        [ "$(type_of "$P" "/tmp/$NAME")" = fifo ]; then
        ok "fifo-name-valgrind (exit 6, no valgrind error)"
    else
        fail fifo-name-valgrind "exit $vrc: $(head -30 "$WORK/fifo-vg.err")"
    fi
else
    fail fifo-name-valgrind "fake runtime did not start"
fi

# (a') The same FIFO against `clrattach watch`: it reports the failure and still stops at once on
# SIGTERM (it used to sit in open() with SIGTERM pending).
if start_good fifo-watch --pre "mkfifo -m 666 /tmp/$NAME"; then
    P=$TARGET_PID
    WOUT="$WORK/fifo-watch.out" WERR="$WORK/fifo-watch.err"
    timeout -s KILL $HANG_S "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --match-cmdline "$TOKEN-fifo-watch" --target-dir /tmp --timeout $TIMEOUT_S \
        --interval 100 --events off -o json >"$WOUT" 2>"$WERR" &
    W=$!
    TARGET_PIDS+=("$W")
    for _ in $(seq 100); do grep -q '"outcome"' "$WOUT" 2>/dev/null && break; sleep 0.1; done
    t0=$(date +%s%N)
    kill -TERM "$W" 2>/dev/null
    wait "$W"
    wrc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if ! grep -q '"outcome":"delivery_failed"' "$WOUT"; then
        fail fifo-watch "no delivery_failed line (exit $wrc): $(cat "$WOUT" "$WERR" | head -20)"
    elif ! grep -q "not a regular file: it is a FIFO" "$WOUT"; then
        fail fifo-watch "the result does not name the FIFO: $(cat "$WOUT")"
    elif [ $wrc -ne 0 ] || [ $ms -ge 3000 ]; then
        fail fifo-watch "SIGTERM: exit $wrc after $ms ms: $(tail -5 "$WERR")"
    else
        ok "fifo-watch (delivery_failed reported; SIGTERM: exit 0 in $ms ms)"
    fi
else
    fail fifo-watch "fake runtime did not start"
fi

# (b) A racer that does not know the name: inotify in the target (as the target's own uid)
# renames a FIFO over every .clrattach-*.tmp the moment it is created. Every round must end in
# bounded time with either our exact file under the name (exit 0) or a refusal (exit 6, "the
# target replaced"); a FIFO must never be published under the name the runtime is given.
ROUNDS=20
if start_good racer --uid 1000; then
    P=$TARGET_PID
    if in_target "$P" "$WORK/racer-helper.log" env -i PATH=/usr/bin:/bin setpriv --reuid=1000 \
        --regid=1000 --clear-groups python3 "$(ns_path "$RACER")" /tmp; then
        refused=0 published=0 bad=""
        want_sum=$(sha256sum <"$PROBE")
        for round in $(seq $ROUNDS); do
            timed_attach "$P" --target-dir /tmp
            t=$(type_of "$P" "/tmp/$NAME")
            if [ $RC -eq 0 ]; then
                if [ "$t" != "regular file" ] || [ "$(sha256sum <"/proc/$P/root/tmp/$NAME")" != "$want_sum" ]; then
                    bad="round $round: exit 0 but /tmp/$NAME is a $t (or not our bytes)"
                    break
                fi
                published=$((published + 1))
                rm -f "/proc/$P/root/tmp/$NAME" # the next round delivers afresh
            elif verdict "racer-round-$round" 6 "the target replaced '/tmp/\.clrattach-.*\.tmp' while we wrote it"; then
                if [ "$t" != absent ]; then
                    bad="round $round: refused, but /tmp/$NAME is a $t"
                    break
                fi
                refused=$((refused + 1))
            else
                bad="round $round failed (above)"
                break
            fi
        done
        swaps=$(grep -c '^swapped' "$WORK/racer-helper.log")
        if [ -n "$bad" ]; then
            fail racer "$bad"
        elif [ "$swaps" -eq 0 ]; then
            fail racer "the racer never swapped a temporary file: $(cat "$WORK/racer-helper.log")"
        else
            ok "racer ($ROUNDS rounds: $refused refused, $published published intact; $swaps swaps)"
        fi
        fifos=$(find "/proc/$P/root/tmp" -maxdepth 1 -type p -name "$NAME" | wc -l)
        [ "$fifos" -eq 0 ] && ok "racer-never-published-fifo" ||
            fail racer-never-published-fifo "/tmp/$NAME is a FIFO"
    else
        fail racer "the racer did not start"
    fi
else
    fail racer "fake runtime did not start"
fi

# (c) A pty under the name, against `clrattach watch` running as a session leader without a
# terminal (a container's entrypoint is one), under valgrind (plain build, --seccomp=off as in
# test_valgrind.sh). An open of the pty without O_NOCTTY would make it the watcher's controlling
# terminal; the target could then stop it with ^C (SIGINT) or kill it by hanging up (SIGHUP).
VG=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --track-fds=no)
VG_CLRATTACH=$(vg_clrattach) || { echo "FAIL valgrind-build: the plain build for valgrind did not build"; exit 1; }
tty_nr() { awk '{ sub(/.*\) /, ""); print $5 }' "/proc/$1/stat" 2>/dev/null; }
if start_good pty && in_target "$TARGET_PID" "$WORK/pty-trap.log" env -i PATH=/usr/bin:/bin python3 "$(ns_path "$PTY_TRAP")" "/tmp/$NAME"; then
    P=$TARGET_PID
    TRAP=$HELPER_PID
    WOUT="$WORK/pty-watch.out" WERR="$WORK/pty-watch.err"
    # setsid: a new session, no controlling terminal; stdin from /dev/null, not the suite's tty.
    timeout -s KILL 120 setsid "${VG[@]}" "$VG_CLRATTACH" watch --seccomp=off --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --match-cmdline "$TOKEN-pty" --target-dir /tmp \
        --timeout $TIMEOUT_S --interval 100 --events off -o json </dev/null >"$WOUT" 2>"$WERR" &
    T=$!
    TARGET_PIDS+=("$T")
    # `timeout` runs setsid as its child, which becomes valgrind running clrattach.
    W=""
    for _ in $(seq 50); do
        W=$(tr -d ' ' <"/proc/$T/task/$T/children" 2>/dev/null)
        [ -n "$W" ] && break
        sleep 0.1
    done
    for _ in $(seq 300); do grep -q '"outcome"' "$WOUT" 2>/dev/null && break; sleep 0.1; done
    sid=$(awk '{ sub(/.*\) /, ""); print $4 }' "/proc/$W/stat" 2>/dev/null)
    if [ -z "$W" ] || [ "$sid" != "$W" ]; then
        fail pty-watch-setup "the watcher (pid '$W', session '$sid') is not a session leader"
    elif ! grep -q '"outcome":"delivery_failed"' "$WOUT" ||
        ! grep -q "not a regular file: it is a character device" "$WOUT"; then
        fail pty-watch-refused "$(cat "$WOUT" "$WERR" | head -20)"
    else
        ok "pty-watch-refused (delivery_failed: a character device)"
    fi
    t=$(tty_nr "$W")
    [ "$t" = 0 ] && ok "pty-watch-no-controlling-terminal" ||
        fail pty-watch-no-controlling-terminal "tty_nr of the watcher is '$t'"
    # ^C through the master, then a hangup: a watcher that took the pty would stop or die.
    kill -USR1 "$TRAP"
    sleep 0.5
    kill -0 "$W" 2>/dev/null && ok "pty-watch-survives-intr" ||
        fail pty-watch-survives-intr "the watcher is gone after ^C on the pty: $(tail -5 "$WERR")"
    kill -USR2 "$TRAP"
    sleep 0.5
    kill -0 "$W" 2>/dev/null && ok "pty-watch-survives-hangup" ||
        fail pty-watch-survives-hangup "the watcher is gone after the pty hung up: $(tail -5 "$WERR")"
    grep -q '^hangup' "$WORK/pty-trap.log" || fail pty-trap "the trap did not act: $(cat "$WORK/pty-trap.log")"
    kill -TERM "$W" 2>/dev/null
    wait "$T"
    wrc=$?
    if [ $wrc -ne 0 ] || grep -q "==[0-9]*==" "$WERR"; then
        fail pty-watch-valgrind "exit $wrc: $(grep -v '^clrattach: watch: pid' "$WERR" | head -30)"
    else
        ok "pty-watch-valgrind (clean exit on SIGTERM, no valgrind error)"
    fi
else
    fail pty-watch "the fake runtime or the pty trap did not start"
fi

# (d) The operator's own inputs naming a FIFO: a usage error (2) at once, naming the problem,
# before any target is touched (they used to block without deadline).
mkfifo "$WORK/fifo"
operator_case() {
    local name=$1 pattern=$2
    shift 2
    local t0
    t0=$(date +%s%N)
    OUT="$WORK/out.txt" ERR="$WORK/err.txt"
    timeout -s KILL $HANG_S "$CLRATTACH" attach --pid 1 --clsid "$PROBE_CLSID" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    MS=$((($(date +%s%N) - t0) / 1000000))
    verdict "$name" 2 "$pattern" && ok "$name (exit 2 in $MS ms)"
}
operator_case operator-profiler-fifo "'$WORK/fifo' given to --profiler is a FIFO, not a regular file" \
    --profiler "$WORK/fifo"
grep -q "next step: pass the profiler's .so itself" "$ERR" ||
    fail operator-profiler-fifo-hint "no next step: $(cat "$ERR")"
operator_case operator-client-data-fifo "'$WORK/fifo' given to --client-data is a FIFO, not a regular file" \
    --profiler "$PROBE" --client-data "@$WORK/fifo"

finish e2e-hostile-files
