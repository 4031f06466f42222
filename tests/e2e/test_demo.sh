#!/usr/bin/env bash
# The README's first command: `make demo` attaches the sample profiler for real, prints its
# report, and leaves nothing running behind it (the app it started is gone when it ends).
. "$(dirname "$0")/lib.sh"
require_env

before=$(pgrep -f 'ClrTarget.dll --seconds 60' | sort)
out=$(BUILD=$BUILD timeout -k 5 120 "$ROOT/scripts/demo.sh" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q 'attached' <<<"$out" && grep -q '"gc_started"' <<<"$out"; then
    ok demo-attaches
else
    fail demo-attaches "exit $rc: $(tail -20 <<<"$out")"
fi
left=""
for _ in $(seq 30); do
    left=$(comm -13 <(echo "$before") <(pgrep -f 'ClrTarget.dll --seconds 60' | sort))
    [ -z "$left" ] && break
    sleep 0.1
done
if [ -z "$left" ]; then ok demo-leaves-nothing-running; else fail demo-leaves-nothing-running "still running: $left"; fi
finish demo
