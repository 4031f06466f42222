#!/usr/bin/env bash
# A filesystem that stops answering in some process's TMPDIR holds neither `ps` nor `watch`
# (issue 25, item 6). A FUSE daemon of our own (tests/tools/fuse_stall.py, raw /dev/fuse) answers
# INIT and then reads every request of the clrattach under test and never answers it: the
# caller waits uninterruptibly, as under a hung NFS/CIFS hard mount or a stuck CSI volume. A
# process that is not .NET (sleep) has its TMPDIR there, in a private mount namespace; a real
# .NET target runs beside it.
#  (a) `ps` returns in bounded time, names the stuck process as unreachable and still lists the
#      good runtime;
#  (b) `watch` attaches the good runtime, says once which directory stopped answering, and stops
#      within a second of SIGTERM;
#  (c) a SIGTERM that comes while the watcher waits for the stuck directory ends it at once;
#  (d) once the daemon is gone (the connection aborted), no process is left in the D state.
# Other suites on the machine scan that process too: only requests from processes carrying this
# test's token in their environment are held, the rest are answered at once (EIO).
. "$(dirname "$0")/lib.sh"
require_env

TOKEN="stall-$$-$RANDOM"
SEL="ClrTarget.dll --seconds 163"
DAEMON=""
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# The daemon first: its end aborts every request it holds, so nothing stays in D state.
stop_daemon() {
    [ -n "$DAEMON" ] && kill -KILL "$DAEMON" 2>/dev/null
    DAEMON=""
}
trap 'stop_daemon; cleanup_targets' EXIT
# held: the requests the daemon holds so far.
held() { grep -c '^held' "$WORK/stall.log" 2>/dev/null; }

mkdir -p "$WORK/stallmnt"
: >"$WORK/stall.log"
# unshare execs python: $! is the daemon itself.
unshare --mount --propagation private python3 "$ROOT/tests/tools/fuse_stall.py" \
    --mount "$WORK/stallmnt" --token "$TOKEN" --log "$WORK/stall.log" -- sleep 600 \
    >"$WORK/stall.out" 2>"$WORK/stall.err" &
DAEMON=$!
disown "$DAEMON"
STUCK=""
for _ in $(seq 100); do
    STUCK=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$WORK/stall.out")
    [ -n "$STUCK" ] && break
    sleep 0.05
done
[ -n "$STUCK" ] || { echo "FAIL stall-prerequisites: the FUSE daemon did not start: $(cat "$WORK/stall.err")"; exit 1; }
TARGET_PIDS+=("$STUCK")
case $(tr '\0' '\n' <"/proc/$STUCK/environ") in
*"TMPDIR=$WORK/stallmnt/"*) ;;
*) echo "FAIL stall-prerequisites: the stuck process has no TMPDIR on the mount"; exit 1 ;;
esac

start_target stall-good --pidns --seconds 163 || { echo "FAIL stall-prerequisites: the .NET target did not start"; exit 1; }
GOOD=$TARGET_PID

# run_bounded SECONDS OUT ERR CMD...: CMD with the token, in the background; RC is its exit
# code, or 124 while it still runs after SECONDS (stuck in D state, it outlives any timeout and
# even SIGKILL: it is left to the daemon's end).
run_bounded() {
    local secs=$1 out=$2 err=$3 p
    shift 3
    FUSE_STALL_TOKEN=$TOKEN "$@" >"$out" 2>"$err" &
    p=$!
    TARGET_PIDS+=("$p")
    for _ in $(seq $((secs * 20))); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$p" 2>/dev/null; then
        RC=124
        kill -KILL "$p" 2>/dev/null
    else
        wait "$p"
        RC=$?
    fi
}

# ---- (a) ps -------------------------------------------------------------------------------
before=$(held)
t0=$(now_ms)
run_bounded 20 "$WORK/ps.json" "$WORK/ps.err" "$CLRATTACH" ps -o json
ms=$(($(now_ms) - t0))
verdict=$(python3 - "$WORK/ps.json" "$STUCK" "$GOOD" <<'PY' 2>&1
import json, sys
rows = {r["pid"]: r for r in json.load(open(sys.argv[1]))["processes"]}
stuck, good = rows.get(int(sys.argv[2])), rows.get(int(sys.argv[3]))
if not stuck or stuck.get("state") != "unreachable":
    print("the stuck process: %s" % stuck)
elif not good or good.get("state") != "ready":
    print("the good runtime: %s" % good)
else:
    print("ok")
PY
)
if [ $RC -eq 0 ] && [ "$verdict" = ok ] && [ "$(held)" -gt "$before" ]; then
    ok "ps-returns-beside-a-stuck-filesystem ($ms ms, the stuck process unreachable, the runtime ready)"
else
    fail "ps-returns-beside-a-stuck-filesystem" "exit $RC after $ms ms, held $before -> $(held): $verdict $(head -c 600 "$WORK/ps.json") $(tail -3 "$WORK/ps.err")"
fi

# ---- (b) watch ----------------------------------------------------------------------------
WOUT=$WORK/watch.out
WERR=$WORK/watch.err
before=$(held)
FUSE_STALL_TOKEN=$TOKEN "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "$SEL" --interval 250 --timeout 20 --events off -o json \
    --client-data out=/tmp/probe-stall.json >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
t0=$(now_ms)
attached() { grep "\"pid\":$GOOD," "$WOUT" 2>/dev/null | grep -q '"outcome":"attached"'; }
for _ in $(seq 600); do
    attached && break
    kill -0 "$W" 2>/dev/null || break
    sleep 0.05
done
ms=$(($(now_ms) - t0))
if attached && [ "$(held)" -gt "$before" ]; then
    ok "watch-attaches-beside-a-stuck-filesystem ($ms ms)"
else
    fail "watch-attaches-beside-a-stuck-filesystem" "after $ms ms, held $before -> $(held): $(cat "$WOUT") $(tail -5 "$WERR")"
fi
n=$(grep -c "warning: pid $STUCK: its TMPDIR '$WORK/stallmnt/'.*did not answer within" "$WERR")
[ "$n" -eq 1 ] && grep -q "Next step" "$WERR" && ok "watch-says-once-what-stopped-answering" ||
    fail "watch-says-once-what-stopped-answering" "$n warnings: $(grep warning "$WERR" | head -3)"
t0=$(now_ms)
kill -TERM "$W"
for _ in $(seq 200); do kill -0 "$W" 2>/dev/null || break; sleep 0.01; done
ms=$(($(now_ms) - t0))
if ! kill -0 "$W" 2>/dev/null && [ $ms -lt 2000 ] && grep -q "watch: stopped (" "$WERR"; then
    ok "watch-sigterm-beside-a-stuck-filesystem ($ms ms)"
else
    fail "watch-sigterm-beside-a-stuck-filesystem" "$ms ms, running: $(kill -0 "$W" 2>/dev/null && echo yes || echo no): $(tail -3 "$WERR")"
fi

# ---- (c) SIGTERM while the watcher waits for the stuck directory ---------------------------
before=$(held)
FUSE_STALL_TOKEN=$TOKEN "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "$SEL" --interval 250 --events off -o json \
    >"$WORK/watch2.out" 2>"$WORK/watch2.err" &
W2=$!
disown "$W2"
TARGET_PIDS+=("$W2")
for _ in $(seq 200); do [ "$(held)" -gt "$before" ] && break; sleep 0.02; done
if [ "$(held)" -gt "$before" ]; then
    sleep 0.2 # well inside the wait for the answer
    t0=$(now_ms)
    kill -TERM "$W2"
    for _ in $(seq 200); do kill -0 "$W2" 2>/dev/null || break; sleep 0.01; done
    ms=$(($(now_ms) - t0))
    if ! kill -0 "$W2" 2>/dev/null && [ $ms -lt 1000 ] && grep -q "watch: stopped (" "$WORK/watch2.err"; then
        ok "watch-sigterm-during-a-stall ($ms ms)"
    else
        fail "watch-sigterm-during-a-stall" "$ms ms, running: $(kill -0 "$W2" 2>/dev/null && echo yes || echo no): $(tail -3 "$WORK/watch2.err")"
    fi
else
    fail "watch-sigterm-during-a-stall" "the watcher never reached the stuck directory: $(tail -3 "$WORK/watch2.err")"
fi

# ---- (d) nothing left in D state once the daemon is gone -----------------------------------
# The holders of the requests, by pid: the helpers given up (and, without the isolation, the
# ps and watch processes themselves).
holders=$(sed -n 's/^held [0-9]* pid \([0-9]*\)$/\1/p' "$WORK/stall.log" | sort -u)
stop_daemon
left=""
for _ in $(seq 100); do
    left=""
    for p in $holders; do
        [ "$(awk '/^State:/ {print $2}' "/proc/$p/status" 2>/dev/null)" = D ] && left="$left $p"
    done
    [ -z "$left" ] && break
    sleep 0.05
done
[ -n "$holders" ] && [ -z "$left" ] && ok "stall-nothing-left-in-d-state ($(echo $holders | wc -w) holders released)" ||
    fail "stall-nothing-left-in-d-state" "holders [$holders], in D state:$left"

finish e2e-hostile-stall
