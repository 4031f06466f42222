#!/usr/bin/env bash
# A runtime suspended at startup (DOTNET_DefaultDiagnosticPortSuspend=1) refuses AttachProfiler
# with 0x8013135B. Without --startup clrattach says so and what to do; with --startup it sends
# StartupProfiler and ResumeRuntime (each on its own connection) and the app starts with the
# profiler loaded as a startup profiler: outcome loaded_at_startup, once it is seen mapped.
# (tests/e2e/test_startup_env.sh: --env, a failed startup load, the resume on every way out.)
. "$(dirname "$0")/lib.sh"
require_env

if start_target suspended --pidns --uid 1000 --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
    if [ $RC -eq 8 ] && [ "$(json_get "$OUT" hresult)" = 0x8013135B ] && grep -q -- "--startup" "$ERR"; then
        ok "suspended-needs-startup-flag"
    else
        fail "suspended-needs-startup-flag" "exit $RC: $(cat "$OUT") $(cat "$ERR")"
    fi
    grep -q '^ready' "$TARGET_LOG" && fail "still-suspended" "the app ran without a resume" || ok "still-suspended"
    # The refusal removed what it delivered (--keep's promise holds for "not ready" too) ...
    if [ "$(json_get "$OUT" removed)" = True ] && ! compgen -G "/proc/$P/root/tmp/clrattach*" >/dev/null; then
        ok "not-ready-removes-delivery"
    else
        fail "not-ready-removes-delivery" "$(cat "$OUT") $(ls -a "/proc/$P/root/tmp")"
    fi
    # ... unless --keep; and the startup load after it reuses what --keep left, and says so.
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json --keep
    KEPT=$(json_get "$OUT" delivered_path)
    if [ $RC -eq 8 ] && [ -n "$KEPT" ] && [ -e "/proc/$P/root$KEPT" ]; then
        ok "not-ready-keep-keeps"
    else
        fail "not-ready-keep-keeps" "exit $RC $(cat "$OUT")"
    fi

    # A startup load is what it says, never "attached": seen mapped after the resume.
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --startup -o json
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" load)" = startup ] &&
        [ "$(json_get "$OUT" outcome)" = loaded_at_startup ] && [ "$(json_get "$OUT" mapped)" = True ] &&
        [ "$(json_get "$OUT" resumed)" = True ] && [ "$(json_get "$OUT" reused)" = True ] &&
        [ "$(json_get "$OUT" delivered_path)" = "$KEPT" ]; then
        ok "startup-load"
    else
        fail "startup-load" "exit $RC: $(cat "$OUT") $(cat "$ERR")"
    fi
    for _ in $(seq 1 100); do grep -q '^ready' "$TARGET_LOG" && break; sleep 0.1; done
    grep -q '^ready' "$TARGET_LOG" && ok "resumed" || fail "resumed" "the app never started"
    # The probe, loaded at startup, reports from inside (default path: its namespace pid is 1).
    if counters=$(probe_report "$P" /tmp/clrprobe-1.json) &&
        grep -q '"load":"startup"' "/proc/$P/root/tmp/clrprobe-1.json"; then
        ok "startup-probe-report ($counters)"
    else
        fail "startup-probe-report" "no startup report in the target"
    fi
fi

finish e2e-startup
