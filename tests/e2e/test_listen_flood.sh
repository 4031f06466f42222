#!/usr/bin/env bash
# A peer that floods a listening watcher (issue 37): anything that can connect to the socket can
# make up a runtime instance per connection (a fresh cookie), refuse the first command and go,
# again and again. Each made-up instance used to cost one result line and one Event write under
# the sidecar's service account. Now the results the runtimes cause are rate-limited
# (docs/events.md#rate-limit): over a 10-second flood the API server stand-in sees at most a
# series' burst of writes, the watcher prints at most that many results, its summary counts the
# rest, and a real runtime that connects during the flood is still served (loaded at startup,
# resumed, running).
. "$(dirname "$0")/lib.sh"
require_env

SHARE=$(mktemp -d /run/clrattach-flood.XXXXXX)
chmod 0755 "$SHARE"
SOCK=$SHARE/port.sock
trap 'cleanup_targets; rm -rf "$SHARE"' EXIT

start_apiserver flood || exit 1

LOUT=$WORK/watch.out LERR=$WORK/watch.err
env -i PATH=/usr/bin:/bin ASAN_OPTIONS="${ASAN_OPTIONS:-}" CLRATTACH_POD_NAME=orders-7d9c8b6f5-x2x7k \
    CLRATTACH_POD_NAMESPACE=shop CLRATTACH_CONTAINER_NAME=clrattach \
    "$CLRATTACH" watch --listen "$SOCK" --deliver-dir "$SHARE" --app-dir /mnt --socket-owner 1000:1000 \
    --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout 2 -o json \
    --api-url "$URL" --token-file "$WORK/token" --ca-file "$CA" >"$LOUT" 2>"$LERR" &
LPID=$!
TARGET_PIDS+=("$LPID")
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || { echo "FAIL flood-listening: $(cat "$LERR")"; exit 1; }
ctl POST /_test/reset >/dev/null

# The flood, as the socket's owner would run it (uid 1000), for 10 seconds.
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 "$FAKE" connect-churn "$SOCK" --seconds 10 \
    >"$WORK/churn.out" 2>"$WORK/churn.err" &
CHURN=$!
TARGET_PIDS+=("$CHURN")
sleep 2
# A real runtime, paused at startup, connecting in the middle of it.
T0=$(date +%s%N)
if start_target good --pidns --uid 1000 --pre "mount --bind '$SHARE' /mnt" \
    --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    GOOD=$TARGET_PID
    served=""
    for _ in $(seq 150); do
        grep -q '^ready' "$TARGET_LOG" && grep -q " /mnt/" "/proc/$GOOD/maps" 2>/dev/null && { served=1; break; }
        sleep 0.1
    done
    ms=$((($(date +%s%N) - T0) / 1000000))
    if [ -n "$served" ]; then
        ok "flood-good-runtime-served"
        echo "    (loaded at startup and running $ms ms after it started, during the flood)"
    else
        fail "flood-good-runtime-served" "after $ms ms: $(tail -5 "$TARGET_LOG") $(tail -5 "$LERR")"
    fi
else
    fail "flood-good-runtime-start" "the app did not start"
fi
for _ in $(seq 150); do grep -q '^churned' "$WORK/churn.out" && break; sleep 0.1; done
made=$(sed -n 's/^churned //p' "$WORK/churn.out")
sleep 1
writes=$(ctl GET /_test/requests | python3 -c 'import json,sys
print(sum(1 for r in json.load(sys.stdin) if r["method"] in ("POST", "PATCH") and "/events" in r["path"]))')
results=$(grep -c '"outcome"' "$LOUT")
# One series for the flood (a burst of 25), one Event for the good runtime.
if [ -n "$made" ] && [ "$made" -gt 100 ] && [ "$writes" -le 26 ] && [ "$results" -le 26 ]; then
    ok "flood-bounded"
    echo "    ($made made-up instances: $writes Event writes, $results result lines)"
else
    fail "flood-bounded" "instances '$made', Event writes $writes, result lines $results: $(tail -3 "$LERR")"
fi
kill -TERM "$LPID"
for _ in $(seq 50); do kill -0 "$LPID" 2>/dev/null || break; sleep 0.1; done
if grep -qE 'stopped \([0-9]+ runtimes served; [0-9]+ results not reported \(rate limit\)\)' "$LERR"; then
    ok "flood-summary-counts-suppressed"
else
    fail "flood-summary-counts-suppressed" "$(tail -3 "$LERR")"
fi
finish listen-flood
