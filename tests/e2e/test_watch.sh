#!/usr/bin/env bash
# Sidecar mode against the real runtime: the watcher attaches to every matching .NET process
# exactly once per runtime instance (a restarted app again), never to a non-matching one, and
# stops cleanly on SIGTERM. Seccomp on (kill). The selector names this test's own --seconds
# value, so .NET processes of other suites on the machine are not in the picture.
. "$(dirname "$0")/lib.sh"
require_env

WOUT=$WORK/watch.out
WERR=$WORK/watch.err
"$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 113" --uid 1000 --ready-file "$WORK/ready" \
    --client-data out=/tmp/probe-watch.json --events off -o json >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
for _ in $(seq 50); do [ -e "$WORK/ready" ] && break; sleep 0.1; done
[ -e "$WORK/ready" ] && ok "watch-ready-file" || fail "watch-ready-file" "$(cat "$WERR")"

# attached_count PID: result lines with outcome "attached" for that pid.
attached_count() {
    python3 - "$WOUT" "$1" <<'PY'
import json, sys
n = 0
for l in open(sys.argv[1]):
    l = l.strip()
    if l:
        d = json.loads(l)
        n += d["pid"] == int(sys.argv[2]) and d["outcome"] == "attached"
print(n)
PY
}
wait_attached() {
    local i
    for i in $(seq 100); do
        [ "$(attached_count "$1")" -ge 1 ] && return 0
        sleep 0.1
    done
    return 1
}

start_target match1 --pidns --uid 1000 --seconds 113 && A=$TARGET_PID
start_target match2 --uid 1000 --seconds 113 && B=$TARGET_PID
start_target other --pidns --seconds 113 && C=$TARGET_PID   # uid 0: does not match --uid 1000

if wait_attached "$A" && wait_attached "$B" && probe_report "$A" /tmp/probe-watch.json >/dev/null &&
    probe_report "$B" /tmp/probe-watch.json >/dev/null; then
    ok "watch-attaches-matching"
else
    fail "watch-attaches-matching" "$(cat "$WOUT") $(cat "$WERR")"
fi
sleep 1.5 # several more scans: nothing happens twice
if [ "$(attached_count "$A")" = 1 ] && [ "$(attached_count "$B")" = 1 ] &&
    [ "$(wc -l <"$WOUT")" = 2 ]; then
    ok "watch-exactly-once"
else
    fail "watch-exactly-once" "$(cat "$WOUT")"
fi
if ! grep -q "\"pid\":$C," "$WOUT" && ! ls "/proc/$C/root/tmp" | grep -q clrprobe; then
    ok "watch-ignores-non-matching"
else
    fail "watch-ignores-non-matching" "$(ls "/proc/$C/root/tmp")"
fi

# Restart one app: a new runtime instance, attached again.
kill -KILL "$A"
start_target match1-restarted --pidns --uid 1000 --seconds 113 && A2=$TARGET_PID
if wait_attached "$A2" && probe_report "$A2" /tmp/probe-watch.json >/dev/null; then
    ok "watch-restarted-app-attached-again"
else
    fail "watch-restarted-app-attached-again" "$(cat "$WOUT") $(cat "$WERR")"
fi
grep -q "watch: pid $B .*attached" "$WERR" && ok "watch-log-per-decision" || fail "watch-log-per-decision" "$(cat "$WERR")"

# A shell that outlives its young phase (WATCH_YOUNG_MS, 10 s: looked at seldom since) and then
# execs the app: same pid, same start time, a new program. The watcher notices the execve and
# attaches the runtime that now runs there.
start_target exec-later --pidns --uid 1000 --seconds 113 --pre "sleep 11" && X=$TARGET_PID
if wait_attached "$X" && probe_report "$X" /tmp/probe-watch.json >/dev/null &&
    [ "$(attached_count "$X")" = 1 ]; then
    ok "watch-attaches-after-exec"
else
    fail "watch-attaches-after-exec" "$(cat "$WOUT") $(tail -5 "$WERR")"
fi

# SIGTERM: a clean stop well within a grace period; the killed instance was dropped from the
# table (3 live instances tracked: the restarted app, the other one and the exec'd one).
kill -TERM "$W"
for _ in $(seq 30); do kill -0 "$W" 2>/dev/null || break; sleep 0.1; done
if ! kill -0 "$W" 2>/dev/null && grep -q "watch: stopped (4 attached, 0 failed, 3 instances tracked, [0-9]* processes known)" "$WERR"; then
    ok "watch-sigterm"
else
    fail "watch-sigterm" "$(tail -3 "$WERR")"
fi

finish e2e-watch
