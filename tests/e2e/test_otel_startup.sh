#!/usr/bin/env bash
# docs/bundles.md "OpenTelemetry at startup": its one command, word for word (paths replaced by
# the test's), against tests/vendorprof's home in OpenTelemetry's release layout (make
# vendorhome: linux-x64/ with the OpenTelemetry-named native library, net/, LICENSE), in an app
# started paused in its own namespaces as uid 1000. The home arrives whole; the test profiler's
# own report shows that both environments (the runtime's, read by managed code, and the C
# library's, read by native code with getenv()) hold the user's settings and every variable
# OpenTelemetry's code needs, CORECLR_PROFILER_PATH the real library in the home.
. "$(dirname "$0")/lib.sh"
require_env
require_vendorinert otel-startup

VH="$ROOT/$BUILD/vendorhome"
[ -e "$VH/linux-x64/$VI_LIB" ] || { echo "FAIL otel-startup-prerequisites: $VH (make vendorhome)"; exit 1; }

# The command, as docs/bundles.md prints it.
DOC=$(sed -n '/^### OpenTelemetry at startup/,/^### A real one/p' "$ROOT/docs/bundles.md" |
    sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' | tr -d '\\' | tr -s ' \n' ' ')
if start_target otel-startup --pidns --uid 1000 --suspended; then
    P=$TARGET_PID
    CMD=${DOC/clrattach /}
    CMD=${CMD/--pid 4242/--pid $P}
    CMD=${CMD//\/opt\/opentelemetry-dotnet-instrumentation/$VH}
    # shellcheck disable=SC2086 # the documented command, split as a shell splits it
    eval "set -- $CMD"
    clr "$@" -o json
    REP=$(vp_report "$P" /tmp/vendorprof-1.json)
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = loaded_at_startup ] &&
        [ "$(json_get "$OUT" layout)" = home ] &&
        python3 - "$REP" "$OUT" <<'PY'; then
import json, sys
rep, out = json.loads(sys.argv[1]), json.loads(open(sys.argv[2]).readline())
d, e = out["delivered_dir"], out["delivered_path"]
assert e.endswith("/linux-x64/OpenTelemetry.AutoInstrumentation.Native.so"), e
want = {"CORECLR_ENABLE_PROFILING": "1",
        "CORECLR_PROFILER": "{918728DD-259F-4A6A-AC2B-B85E1B658318}",
        "CORECLR_PROFILER_PATH": e, "CORECLR_PROFILER_PATH_64": " ",
        "OTEL_DOTNET_AUTO_HOME": d}
assert rep["vendor_settings"] == want, rep["vendor_settings"]
assert rep["vendor_settings_libc"] == want, rep["vendor_settings_libc"]
assert rep["self"] == e, rep["self"]
assert "OTEL_SERVICE_NAME" in out["env"] and "OTEL_EXPORTER_OTLP_ENDPOINT" in out["env"], out["env"]
PY
        ok "otel-startup-documented-command (the home whole, both environments hold every setting)"
    else
        fail "otel-startup-documented-command" "command: $CMD; exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
    D=$(json_get "$OUT" delivered_dir)
    if [ -f "/proc/$P/root$D/LICENSE" ] && [ -d "/proc/$P/root$D/net" ]; then
        ok "otel-startup-home-whole (net/ and LICENSE delivered)"
    else
        fail "otel-startup-home-whole" "$D: $(ls "/proc/$P/root$D" 2>&1)"
    fi
    grep -q '^ready' "$TARGET_LOG" && ok otel-startup-app-runs || fail otel-startup-app-runs "$(cat "$TARGET_LOG")"
else
    fail otel-startup-start "the app did not start"
fi
finish otel-startup
