#!/usr/bin/env bash
# `ps` tells a runtime paused at startup (DOTNET_DefaultDiagnosticPortSuspend=1, no managed code
# run yet) from a running one: state "paused" with the next step, not "ready" (a plain attach
# would get exit 8). Once resumed, the same runtime is "ready". A runtime whose environment asks
# for no pause is "ready" from the start.
. "$(dirname "$0")/lib.sh"
require_env

state_of() { # PID: the state ps -o json gives the process
    clr ps --pid "$1" -o json
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["processes"][0]["state"])' "$OUT" 2>/dev/null
}

if start_target paused --pidns --uid 1000 --suspended; then
    P=$TARGET_PID
    s=$(state_of "$P")
    if [ "$s" = paused ]; then ok ps-paused-state; else fail ps-paused-state "state '$s': $(cat "$OUT" "$ERR")"; fi
    clr ps --pid "$P"
    if grep -q 'paused' "$OUT" && grep -q -- '--startup' "$OUT" "$ERR"; then
        ok ps-paused-text-next-step
    else
        fail ps-paused-text-next-step "$(cat "$OUT" "$ERR")"
    fi
    grep -q '^ready' "$TARGET_LOG" && fail ps-leaves-it-paused "ps resumed the app" || ok ps-leaves-it-paused
    # Resumed (a startup load of the sample profiler), it is ready.
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --startup -o json
    s=""
    for _ in $(seq 50); do
        s=$(state_of "$P")
        [ "$s" = ready ] && break
        sleep 0.1
    done
    if [ "$s" = ready ]; then ok ps-resumed-ready; else fail ps-resumed-ready "state '$s' after exit $RC"; fi
else
    fail ps-paused-start "the paused target did not start"
fi

if start_target running --pidns --uid 1000; then
    s=$(state_of "$TARGET_PID")
    if [ "$s" = ready ]; then ok ps-running-ready; else fail ps-running-ready "state '$s': $(cat "$OUT")"; fi
else
    fail ps-running-start "the target did not start"
fi

finish ps-paused
