#!/usr/bin/env bash
# watch --startup, the sidecar for apps started with DOTNET_DefaultDiagnosticPortSuspend=1, on the
# real runtime with the seccomp filter on (kill). Apps run as uid 1000, each in its own pid and
# mount namespace; the selector names this test's own --seconds values.
#   (a) three paused apps and one already running, a profiler inert on attach (the vendor test
#       profiler, shaped like OpenTelemetry's) with --env: each paused app gets the variables
#       (its profiler's report shows them), is loaded at startup and runs on; the running one is
#       skipped (inert_on_attach), before anything is delivered; one started paused but resumed
#       before the watcher came is told apart by StartupProfiler's E_INVALIDARG and skipped too,
#       its delivery taken back; one result line per instance, however many scans follow;
#   (b) a profiler that attaches (the probe): a paused app is loaded at startup, a running one
#       (started with the suspend variable, and resumed before the watcher came) is attached;
#   (c) SIGTERM to the watcher while its children deliver a large profiler to three paused
#       apps: every one of them runs on (the watcher resumes each after its child).
. "$(dirname "$0")/lib.sh"
require_env

VI="$ROOT/$BUILD/vendorinert"
VI_CLSID="{918728DD-259F-4A6A-AC2B-B85E1B658318}"
[ -e "$VI/OpenTelemetry.AutoInstrumentation.Native.so" ] ||
    { echo "FAIL watch-startup-prerequisites: $VI missing (make vendorprof)"; exit 1; }

# runs_on NAME LOG: the paused app was resumed and runs (its Main printed "ready").
runs_on() {
    local i
    for i in $(seq 1 100); do grep -q '^ready' "$2" && break; sleep 0.1; done
    if grep -q '^ready' "$2"; then ok "$1-app-runs-on"; else fail "$1-app-runs-on" "never started: $(cat "$2")"; fi
}

# start_watch OUT ERR ARGS...: a watcher in the background (W), under timeout.
start_watch() {
    local out=$1 err=$2
    shift 2
    timeout 120 "$CLRATTACH" watch --startup --uid 1000 --events off -o json --interval 100 \
        "$@" >"$out" 2>"$err" &
    W=$!
    disown "$W"
    TARGET_PIDS+=("$W")
}

# lines FILE PID [OUTCOME]: result lines for that pid (with that outcome).
lines() {
    python3 - "$@" <<'PY'
import json, sys
n = 0
for l in open(sys.argv[1]):
    if l.strip():
        d = json.loads(l)
        n += d["pid"] == int(sys.argv[2]) and (len(sys.argv) < 4 or d["outcome"] == sys.argv[3])
print(n)
PY
}

# wait_lines FILE N: until the watcher printed N result lines (20 s at most).
wait_lines() {
    local i
    for i in $(seq 200); do
        [ "$(grep -c . "$1" 2>/dev/null)" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# start_paused NAME SECONDS: three apps paused at startup, as uid 1000 in their own namespaces;
# their pids in PAUSED, their logs in LOGS.
start_paused() {
    PAUSED=() LOGS=()
    local n
    for n in 1 2 3; do
        if start_target "$1$n" --pidns --uid 1000 --suspended --seconds "$2"; then
            PAUSED+=("$TARGET_PID")
            LOGS+=("$TARGET_LOG")
        fi
    done
}

# (a)
start_paused ws-paused 117
start_target ws-running --pidns --uid 1000 --seconds 117 && RUN=$TARGET_PID
# Started paused, then resumed (by a startup load of the probe) before the watcher came: its
# environment still asks for the pause, but it runs; StartupProfiler tells (E_INVALIDARG).
start_target ws-resumed --pidns --uid 1000 --suspended --seconds 117 && RES=$TARGET_PID RESLOG=$TARGET_LOG
clr attach --pid "$RES" --profiler "$PROBE" --clsid "$PROBE_CLSID" --startup --settle 0
runs_on watch-startup-resumed-first "$RESLOG"
WOUT=$WORK/wa.out WERR=$WORK/wa.err
start_watch "$WOUT" "$WERR" --profiler "$VI" --clsid "$VI_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 117" --env VENDOR_SETTING_A=watch --env 'VENDOR_SETTING_B={dir}'
wait_lines "$WOUT" 5
sleep 1.5 # more scans: nothing is done twice
for i in 0 1 2; do
    P=${PAUSED[$i]}
    REP=""
    for _ in $(seq 100); do
        REP=$(cat "/proc/$P/root/tmp/vendorprof-1.json" 2>/dev/null) && [ -n "$REP" ] && break
        sleep 0.1
    done
    if [ "$(lines "$WOUT" "$P" loaded_at_startup)" = 1 ] && [ "$(lines "$WOUT" "$P")" = 1 ] &&
        python3 - "$REP" <<'PY'; then
import json, sys
rep = json.loads(sys.argv[1])
s = rep["settings"]
assert s["VENDOR_SETTING_A"] == "watch" and s["VENDOR_SETTING_B"].startswith("/"), s
# Through the env loader, getenv() sees the same values.
assert rep["settings_libc"] == s, rep
assert rep["vendor_settings_libc"]["CORECLR_PROFILER_PATH"] == rep["self"], rep
PY
        ok "watch-startup-loaded-with-settings-$i"
    else
        fail "watch-startup-loaded-with-settings-$i" "report: $REP $(cat "$WOUT" "$WERR")"
    fi
    runs_on "watch-startup-paused-$i" "${LOGS[$i]}"
done
if [ "$(lines "$WOUT" "$RUN" inert_on_attach)" = 1 ] && [ "$(lines "$WOUT" "$RUN")" = 1 ] &&
    ! ls "/proc/$RUN/root/tmp" | grep -q '^clrattach' &&
    ! grep -q OpenTelemetry "/proc/$RUN/maps"; then
    ok "watch-startup-running-inert-skipped"
else
    fail "watch-startup-running-inert-skipped" "$(cat "$WOUT") $(ls "/proc/$RUN/root/tmp")"
fi
# Its next step is the app's restart, paused (or the listening mode), never this very mode again.
if python3 - "$WOUT" "$RUN" <<'PY'; then
import json, sys
d = next(json.loads(l) for l in open(sys.argv[1]) if l.strip() and json.loads(l)["pid"] == int(sys.argv[2]))
assert "DOTNET_DefaultDiagnosticPortSuspend=1" in d["next_step"], d
assert "watch --listen" in d["next_step"] and "watch --startup" not in d["next_step"], d
assert "note" not in d, d
PY
    ok "watch-startup-running-inert-next-step"
else
    fail "watch-startup-running-inert-next-step" "$(cat "$WOUT")"
fi
# Told apart by the runtime: StartupProfiler refused, the delivery taken back.
if [ "$(lines "$WOUT" "$RES" inert_on_attach)" = 1 ] && [ "$(lines "$WOUT" "$RES")" = 1 ] &&
    python3 - "$WOUT" "$RES" <<'PY'; then
import json, os, sys
d = next(json.loads(l) for l in open(sys.argv[1]) if l.strip() and json.loads(l)["pid"] == int(sys.argv[2]))
assert "StartupProfiler was refused with E_INVALIDARG" in d["error"], d
assert d.get("removed") is True and d["delivered_dir"], d
assert not os.path.exists("/proc/%s/root%s" % (sys.argv[2], d["delivered_dir"])), d
PY
    ok "watch-startup-resumed-inert-skipped"
else
    fail "watch-startup-resumed-inert-skipped" "$(cat "$WOUT") $(ls "/proc/$RES/root/tmp")"
fi
[ "$(grep -c . "$WOUT")" = 5 ] && ok "watch-startup-once-per-instance" ||
    fail "watch-startup-once-per-instance" "$(cat "$WOUT")"
kill -TERM "$W" 2>/dev/null
# W is disowned: `wait` would return at once, before the watcher printed its summary.
timeout 20 tail --pid="$W" -f /dev/null
grep -q "watch: stopped (3 attached, 0 failed" "$WERR" && ok "watch-startup-summary" ||
    fail "watch-startup-summary" "$(cat "$WERR")"

# (b) The probe: a paused app is loaded at startup; an app started with the suspend variable but
# resumed before the watcher came (by a startup load with a CLSID the probe does not serve: the
# runtime resumed and loaded nothing) runs, takes AttachProfiler, and is attached, not "loaded at
# startup".
start_target ws-probe-paused --pidns --uid 1000 --suspended --seconds 118 && PP=$TARGET_PID PPLOG=$TARGET_LOG
start_target ws-probe-resumed --pidns --uid 1000 --suspended --seconds 118 && PR=$TARGET_PID PRLOG=$TARGET_LOG
clr attach --pid "$PR" --profiler "$PROBE" --clsid "{00000000-0000-0000-0000-000000000001}" --startup --settle 0
runs_on watch-startup-resumed-before "$PRLOG"
WOUT=$WORK/wb.out WERR=$WORK/wb.err
start_watch "$WOUT" "$WERR" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 118"
wait_lines "$WOUT" 2
sleep 1
if [ "$(lines "$WOUT" "$PP" loaded_at_startup)" = 1 ] && [ "$(lines "$WOUT" "$PP")" = 1 ]; then
    ok "watch-startup-probe-paused-loaded"
else
    fail "watch-startup-probe-paused-loaded" "$(cat "$WOUT" "$WERR")"
fi
runs_on watch-startup-probe-paused "$PPLOG"
if [ "$(lines "$WOUT" "$PR" attached)" = 1 ] && [ "$(lines "$WOUT" "$PR")" = 1 ] &&
    grep -q "\"pid\":$PR,.*\"mapped\":true" "$WOUT" && ! grep -q "\"pid\":$PR,.*\"load\":\"startup\"" "$WOUT"; then
    ok "watch-startup-running-gets-plain-attach"
else
    fail "watch-startup-running-gets-plain-attach" "$(cat "$WOUT" "$WERR")"
fi
kill -TERM "$W" 2>/dev/null
# W is disowned: `wait` would return at once, before the watcher printed its summary.
timeout 20 tail --pid="$W" -f /dev/null

# (b2) A running app without a profiler, its environment asking for a pause: attached.
start_target ws-probe-running --pidns --uid 1000 --env DOTNET_DefaultDiagnosticPortSuspend=0 \
    --seconds 119 && PN=$TARGET_PID
WOUT=$WORK/wb2.out WERR=$WORK/wb2.err
start_watch "$WOUT" "$WERR" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 119"
wait_lines "$WOUT" 1
if [ "$(lines "$WOUT" "$PN" attached)" = 1 ] && grep -q "\"pid\":$PN,.*\"mapped\":true" "$WOUT"; then
    ok "watch-startup-running-attached"
else
    fail "watch-startup-running-attached" "$(cat "$WOUT" "$WERR")"
fi
kill -TERM "$W" 2>/dev/null
# W is disowned: `wait` would return at once, before the watcher printed its summary.
timeout 20 tail --pid="$W" -f /dev/null
# --client-data would reach running runtimes only: refused up front.
clr watch --startup --profiler "$PROBE" --clsid "$PROBE_CLSID" --client-data x=1 --events off
[ $RC -eq 2 ] && grep -q "does not go with 'watch --startup'" "$ERR" && ok "watch-startup-client-data-refused" ||
    fail "watch-startup-client-data-refused" "exit $RC $(cat "$ERR")"
clr watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --env A=1 --events off
[ $RC -eq 2 ] && grep -q "goes with --startup" "$ERR" && ok "watch-env-needs-startup" ||
    fail "watch-env-needs-startup" "exit $RC $(cat "$ERR")"

# (c) SIGTERM while the children deliver 100 MB each to three paused apps.
BIG=$WORK/big
big_profiler "$BIG"
start_paused ws-term 116
WOUT=$WORK/wc.out WERR=$WORK/wc.err
# The watcher waits behind a fifo until tests/tools/stop_on_create.py watches the first app's
# TMPDIR; its children are stopped the moment a delivery there creates its temporary, so the
# signal lands while they deliver, by construction.
GO=$WORK/go.c
mkfifo "$GO"
# shellcheck disable=SC2016 # expanded by the inner shell
timeout 120 bash -c 'read -r _ <"$0"; exec "$@"' "$GO" "$CLRATTACH" watch --startup --uid 1000 \
    --events off -o json --interval 100 --profiler "$BIG" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 116" >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
WP=""
for _ in $(seq 100); do
    WP=$(pgrep -P "$W") && break
    sleep 0.05
done
python3 "$ROOT/tests/tools/stop_on_create.py" --dir "/proc/${PAUSED[0]}/root/tmp" \
    --prefix .clrattach- --pid "$WP" --timeout 60 >"$WORK/stop.c" 2>&1 &
STOPPER=$!
for _ in $(seq 100); do
    grep -q '^watching' "$WORK/stop.c" && break
    sleep 0.1
done
echo go >"$GO"
timeout 70 tail --pid="$STOPPER" -f /dev/null
grep -q '^stopped' "$WORK/stop.c" || fail "watch-startup-sigterm-mid-delivery" "no delivery seen: $(cat "$WORK/stop.c" "$WERR")"
kill -TERM "$W" 2>/dev/null
timeout 20 tail --pid="$W" -f /dev/null
for i in 0 1 2; do runs_on "watch-startup-sigterm-$i" "${LOGS[$i]}"; done
# Each interrupted attach says the app was resumed after it.
if python3 - "$WOUT" <<'PY'; then
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cut = [r for r in rs if r["outcome"] == "interrupted"]
assert cut and all(r.get("resumed") is True for r in cut), rs
PY
    ok "watch-startup-sigterm-says-resumed"
else
    fail "watch-startup-sigterm-says-resumed" "$(cat "$WOUT" "$WERR")"
fi

finish e2e-watch-startup
