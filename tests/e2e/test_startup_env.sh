#!/usr/bin/env bash
# Startup loads that are what they say, the profiler's environment, and an app never left paused
# (issue 27). On a runtime started paused (DOTNET_DefaultDiagnosticPortSuspend=1):
#   (a) --startup --env: the variables go first (SetEnvironmentVariable), {dir} expanded, then
#       StartupProfiler and ResumeRuntime; the outcome is loaded_at_startup, and the profiler's
#       own report shows the settings it read;
#   (b) a wrong CLSID: the runtime takes StartupProfiler and resumes, but never loads the
#       profiler: startup_load_failed (exit 7), and the app runs on;
#   (c) every failing step resumes the app: a dependency missing, a variable over the cap once
#       {dir} is expanded, SIGTERM during delivery; with the fake runtime acting paused: a
#       variable refused, StartupProfiler refused, StartupProfiler never answered;
#   (d) --env on a running app without --force is refused, with the next step;
#   (e) with --force it is sent, and the env loader hands it to the profiler's getenv() too;
#       --force on an inert profiler says it holds the app's only profiler slot.
# Every load with --env goes through the env loader: the report's settings_libc (getenv) must
# equal its settings (the runtime's environment).
. "$(dirname "$0")/lib.sh"
require_env

VI="$ROOT/$BUILD/vendorinert"
VI_LIB=OpenTelemetry.AutoInstrumentation.Native.so
VI_CLSID="{918728DD-259F-4A6A-AC2B-B85E1B658318}"
[ -e "$VI/$VI_LIB" ] || { echo "FAIL startup-env-prerequisites: $VI/$VI_LIB missing (make vendorprof)"; exit 1; }

# runs_on NAME: the paused app was resumed and runs (its Main printed "ready").
runs_on() {
    local i
    for i in $(seq 1 100); do grep -q '^ready' "$TARGET_LOG" && break; sleep 0.1; done
    if grep -q '^ready' "$TARGET_LOG"; then ok "$1-app-runs-on"; else fail "$1-app-runs-on" "the app never started"; fi
}

# (a) The settings reach the profiler through the runtime's environment (one inline, one from
# an @FILE with a comment and an empty line).
printf '# the profiler home\n\nVENDOR_SETTING_B={dir}\n' >"$WORK/vendor.env"
if start_target startup-env --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --startup -o json \
        --env VENDOR_SETTING_A=1 --env "@$WORK/vendor.env"
    DIR=$(json_get "$OUT" delivered_dir)
    REP=""
    for _ in $(seq 1 100); do
        REP=$(cat "/proc/$P/root/tmp/vendorprof-1.json" 2>/dev/null) && [ -n "$REP" ] && break
        sleep 0.1
    done
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = loaded_at_startup ] &&
        [ "$(json_get "$OUT" resumed)" = True ] && [ "$(json_get "$OUT" mapped)" = True ] &&
        [ -n "$DIR" ] && python3 - "$REP" "$DIR" "$OUT" <<'PY'; then
import json, sys
rep, d, out = json.loads(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
assert rep["settings"] == {"VENDOR_SETTING_A": "1", "VENDOR_SETTING_B": d}, rep["settings"]
# Through the env loader, the C library's environment holds the very same values.
assert rep["settings_libc"] == rep["settings"], rep
assert out["env_loader"] == d + "/libclrenvload.so", out
assert out["delivered_path"] == d + "/OpenTelemetry.AutoInstrumentation.Native.so", out
assert rep["self"] == out["delivered_path"], rep
PY
        ok "startup-env-loaded-with-settings"
    else
        fail "startup-env-loaded-with-settings" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
    # OpenTelemetry's startup settings (vendors.c), sent with the operator's: CORECLR_PROFILER_PATH
    # names the real profiler, not the env loader; both environments hold them; names only.
    if python3 - "$REP" "$OUT" <<'PY'; then
import json, sys
rep, out = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
d = out["delivered_dir"]
want = {"CORECLR_ENABLE_PROFILING": "1",
        "CORECLR_PROFILER": "{918728DD-259F-4A6A-AC2B-B85E1B658318}",
        "CORECLR_PROFILER_PATH": out["delivered_path"], "CORECLR_PROFILER_PATH_64": " ",
        "OTEL_DOTNET_AUTO_HOME": d}
assert rep["vendor_settings"] == want, rep["vendor_settings"]
assert rep["vendor_settings_libc"] == want, rep["vendor_settings_libc"]
assert out["vendor_env"] == ", ".join(k for k in want), out["vendor_env"]
PY
        ok "startup-env-vendor-settings"
    else
        fail "startup-env-vendor-settings" "$(cat "$OUT") report: $REP"
    fi
    # Names only, unless --show-env: values may be tokens.
    if grep -q '"env":\["VENDOR_SETTING_A","VENDOR_SETTING_B","CORECLR_ENABLE_PROFILING",' "$OUT" && ! grep -q 'VENDOR_SETTING_A=1' "$OUT"; then
        ok "startup-env-names-only"
    else
        fail "startup-env-names-only" "$(cat "$OUT")"
    fi
    runs_on startup-env
fi

# --show-env shows the values (expanded), and the text result says loaded at startup, not attached.
if start_target startup-env-text --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --startup --show-env \
        --env VENDOR_SETTING_A=1 --env 'VENDOR_SETTING_B={dir}'
    if [ $RC -eq 0 ] && grep -q '^loaded at startup: pid' "$OUT" && ! grep -qi 'attached' "$OUT" &&
        grep -q 'env: .*VENDOR_SETTING_A=1, VENDOR_SETTING_B=/' "$OUT" && grep -q 'resumed:  yes' "$OUT"; then
        ok "startup-env-text"
    else
        fail "startup-env-text" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    runs_on startup-env-text
fi

# (b) A wrong CLSID: the runtime stores any CLSID and refuses the profiler only as it starts.
if start_target startup-wrong-clsid --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "{00000000-1111-2222-3333-444444444444}" \
        --startup -o json
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" outcome)" = startup_load_failed ] &&
        [ "$(json_get "$OUT" mapped)" = False ] && [ "$(json_get "$OUT" resumed)" = True ] &&
        grep -q "clsid" "$ERR" && grep -q "ProfilerMessage" "$ERR"; then
        ok "startup-wrong-clsid-failed"
    else
        fail "startup-wrong-clsid-failed" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    runs_on startup-wrong-clsid
fi

# (c) Every failing step resumes the app.
# A dependency missing: the library the profiler needs is not shipped with it.
mkdir -p "$WORK/vinohelper"
cp "$VI/$VI_LIB" "$VI/vendor.conf" "$WORK/vinohelper/"
if start_target startup-missing-dep --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$WORK/vinohelper" --clsid "$VI_CLSID" --startup -o json
    if [ $RC -eq 13 ] && [ "$(json_get "$OUT" resumed)" = True ]; then
        ok "startup-missing-dep-resumed"
    else
        fail "startup-missing-dep-resumed" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    runs_on startup-missing-dep
fi

# A variable within the cap as written, over it once {dir} is expanded: refused after delivery,
# before StartupProfiler.
LONG=$(head -c 4070 /dev/zero | tr '\0' x)
if start_target startup-env-over-cap --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --startup -o json \
        --env "VENDOR_SETTING_A=$LONG{dir}"
    if [ $RC -eq 2 ] && [ "$(json_get "$OUT" resumed)" = True ] && grep -q "once {dir}" "$ERR" &&
        ! grep -q "$VI_LIB" "/proc/$P/maps"; then
        ok "startup-env-over-cap-resumed"
    else
        fail "startup-env-over-cap-resumed" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    runs_on startup-env-over-cap
fi

# SIGTERM while the profiler is delivered: what was delivered is removed and the app resumed.
BIG=$WORK/bigprof
mkdir -p "$BIG"
cp "$PROBE" "$BIG/"
for i in $(seq 10); do head -c 10M /dev/zero >"$BIG/pad$i.bin"; done
if start_target startup-sigterm --pidns --suspended; then
    P=$TARGET_PID
    OUT="$WORK/out.term.txt" ERR="$WORK/err.term.txt"
    "$CLRATTACH" attach --pid "$P" --profiler "$BIG" --clsid "$PROBE_CLSID" --startup -o json \
        >"$OUT" 2>"$ERR" &
    apid=$!
    for _ in $(seq 200000); do
        compgen -G "/proc/$P/root/tmp/.clrattach-*.tmpdir" >/dev/null && break
        kill -0 "$apid" 2>/dev/null || break
    done
    kill -TERM "$apid" 2>/dev/null
    wait "$apid"
    RC=$?
    if [ $RC -eq 11 ] && [ "$(json_get "$OUT" resumed)" = True ]; then
        ok "startup-sigterm-resumed"
    else
        fail "startup-sigterm-resumed" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    runs_on startup-sigterm
fi

# The steps a real paused runtime does not fail on, played by the fake runtime: a variable it
# refuses, StartupProfiler refused, StartupProfiler never answered (clrattach's own deadline).
# Each time ResumeRuntime (request 04/01) reaches it, and the result says so.
for c in "paused-refuse-env 7 --env VENDOR_SETTING_A=1" "paused-refuse-startup 7 --env VENDOR_SETTING_A=1" \
    "paused-stall-startup 9 --resume-deadline 2"; do
    set -- $c
    mode=$1 want=$2
    shift 2
    if start_fake "$mode" "$mode" --env DOTNET_DefaultDiagnosticPortSuspend=1; then
        P=$TARGET_PID
        start=$(date +%s)
        clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --startup -o json "$@"
        took=$(($(date +%s) - start))
        if [ $RC -eq "$want" ] && [ "$(json_get "$OUT" resumed)" = True ] &&
            grep -q '^request 04/01' "$TARGET_LOG" &&
            [ "$took" -lt 10 ]; then
            ok "startup-$mode-resumed"
        else
            fail "startup-$mode-resumed" "exit $RC in ${took}s $(cat "$OUT" "$ERR" "$TARGET_LOG")"
        fi
    fi
done
# A refused variable stops the load before the runtime holds the profiler.
if ! grep -q '^request 03/02' "$WORK/paused-refuse-env.log"; then
    ok "startup-env-refused-no-startupprofiler"
else
    fail "startup-env-refused-no-startupprofiler" "$(cat "$WORK/paused-refuse-env.log")"
fi

# (d) --env on a running app, without --force: refused before anything is sent.
if start_target startup-env-running --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --env VENDOR_SETTING_A=1
    if [ $RC -eq 2 ] && grep -q -- "--startup" "$ERR" && grep -q -- "--force" "$ERR" &&
        ! grep -q "$VI_LIB" "/proc/$P/maps"; then
        ok "env-running-refused"
    else
        fail "env-running-refused" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --startup --env VENDOR_SETTING_A=1
    if [ $RC -eq 8 ] && grep -q "DefaultDiagnosticPortSuspend" "$ERR" && grep -q -- "--force" "$ERR" &&
        ! grep -q "$VI_LIB" "/proc/$P/maps"; then
        ok "env-startup-running-refused"
    else
        fail "env-startup-running-refused" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# (e) --force --env on a running app: SetEnvironmentVariable, then AttachProfiler of the env
# loader, which sets them in the C library's environment and hands over the profiler: both doors
# show the same values, and the maps show the real profiler.
VP="$ROOT/$BUILD/vendorprof"
VP_CLSID="{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}"
if start_target startup-env-force --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --force -o json \
        --env VENDOR_SETTING_A=1 --env 'VENDOR_SETTING_C={dir}/c'
    REP=$(vp_report "$P" /tmp/vendorprof-1.json)
    if [ $RC -eq 0 ] && python3 - "$REP" "$OUT" <<'PY'; then
import json, sys
rep, out = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
d = out["delivered_dir"]
assert out["outcome"] == "attached" and out["mapped"] is True, out
assert out["env_loader"] == d + "/libclrenvload.so", out
assert rep["settings"] == {"VENDOR_SETTING_A": "1", "VENDOR_SETTING_C": d + "/c"}, rep
assert rep["settings_libc"] == rep["settings"], rep
assert "vendor_env" not in out, out
PY
        ok "env-force-running-both-environments"
    else
        fail "env-force-running-both-environments" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
fi

# --force on a profiler known to do nothing on attach: it says the slot it now holds.
if start_target startup-env-force-inert --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --force -o json
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" expected_inert)" = True ] &&
        json_get "$OUT" note | grep -q "only profiler slot until the app restarts"; then
        ok "force-inert-holds-the-slot"
    else
        fail "force-inert-holds-the-slot" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

finish e2e-startup-env
