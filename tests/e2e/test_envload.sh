#!/usr/bin/env bash
# The env loader (profiler/envload.c, libclrenvload.so) against a real runtime. The app starts
# with the loader as its profiler (CORECLR_PROFILER_PATH = the loader, CORECLR_PROFILER = the
# real profiler's CLSID), a settings file beside it naming the vendor-shaped profiler
# (vendorinert, which reports at Initialize) and VENDOR_SETTING_* values the app's environment
# lacks:
#   (a) the profiler's getenv() sees them ("settings_libc"), the runtime's own environment does
#       not ("settings": what clrattach's SetEnvironmentVariable is for), with the profiler's
#       path relative to the loader or absolute; it found its config and helper from its own path;
#   (b) a malformed settings file, none at all, a missing profiler: the app runs on, without the
#       profiler, and the loader's one stderr line names the cause;
#   (c) without a runtime, under glibc's and musl's dynamic linkers: the loader forwards to the
#       sample probe built for the same C library (profiler/envload-check.sh).
. "$(dirname "$0")/lib.sh"
require_env
require_vendorinert envload
LOADER="$ROOT/$BUILD/libclrenvload.so"
for f in "$LOADER" "$ROOT/$BUILD/musl/libclrenvload.so" "$ROOT/$BUILD/musl/libclrprobe.so"; do
    [ -e "$f" ] || { echo "FAIL envload-prerequisites: $f missing (make all profiler-musl)"; exit 1; }
done

# loader_dir NAME SETTINGS: a directory as a delivery would hold it: the loader, its settings file
# (SETTINGS, printf %b), and the real profiler's own directory in vi/. Prints the directory.
loader_dir() {
    local d="$WORK/$1"
    mkdir -p "$d"
    cp "$LOADER" "$d/"
    cp -r "$VI" "$d/vi"
    printf '%b' "$2" >"$d/clrenvload.conf"
    echo "$d"
}

# start_loaded NAME DIR: the app started with DIR's loader as its profiler, for the real one's
# CLSID; its own environment holds VENDOR_SETTING_C=app and no other VENDOR_SETTING_*.
start_loaded() {
    start_target "$1" --pidns --env CORECLR_ENABLE_PROFILING=1 --env "CORECLR_PROFILER=$VI_CLSID" \
        --env "CORECLR_PROFILER_PATH=$(ns_path "$2")/libclrenvload.so" --env VENDOR_SETTING_C=app
}

# (a) The settings reach getenv(); the profiler runs from its own directory.
SETTINGS='VENDOR_SETTING_A=from the loader\nVENDOR_SETTING_B=x=y\nVENDOR_SETTING_C=loader\n'
D=$(loader_dir relative "clrenvload 1\nprofiler=vi/$VI_LIB\n$SETTINGS")
if start_loaded envload-relative "$D"; then
    P=$TARGET_PID
    REP=$(vp_report "$P" /tmp/vendorprof-1.json)
    if python3 - "$REP" "$(ns_path "$D")" <<'PY' && ! grep -q clrenvload "$TARGET_LOG"; then
import json, sys
r, d = json.loads(sys.argv[1]), sys.argv[2]
assert r["settings_libc"] == {"VENDOR_SETTING_A": "from the loader", "VENDOR_SETTING_B": "x=y",
                              "VENDOR_SETTING_C": "loader"}, r["settings_libc"]
assert r["settings"] == {"VENDOR_SETTING_C": "app"}, r["settings"]
assert r["self"] == d + "/vi/OpenTelemetry.AutoInstrumentation.Native.so", r["self"]
assert r["config"] == "vendorprof-config-v1" and r["helper"] == "vendorhelper 1.0", r
PY
        ok "envload-settings-reach-getenv"
    else
        fail "envload-settings-reach-getenv" "report: $REP log: $(cat "$TARGET_LOG")"
    fi
    if grep -q "$(ns_path "$D")/libclrenvload.so" "/proc/$P/maps" &&
        grep -q "$(ns_path "$D")/vi/$VI_LIB" "/proc/$P/maps"; then
        ok "envload-both-mapped"
    else
        fail "envload-both-mapped" "$(grep -E 'clrenvload|OpenTelemetry' "/proc/$P/maps")"
    fi
fi

D=$(loader_dir absolute "clrenvload 1\nprofiler=$(ns_path "$VI")/$VI_LIB\nVENDOR_SETTING_A=abs\n")
if start_loaded envload-absolute "$D"; then
    REP=$(vp_report "$TARGET_PID" /tmp/vendorprof-1.json)
    if python3 - "$REP" "$(ns_path "$VI")" <<'PY'; then
import json, sys
r, d = json.loads(sys.argv[1]), sys.argv[2]
assert r["settings_libc"] == {"VENDOR_SETTING_A": "abs", "VENDOR_SETTING_C": "app"}, r
assert r["self"] == d + "/OpenTelemetry.AutoInstrumentation.Native.so", r["self"]
PY
        ok "envload-absolute-path"
    else
        fail "envload-absolute-path" "report: $REP log: $(cat "$TARGET_LOG")"
    fi
fi

# (b) Refusals: the app runs on (start_target waits for its Main), no profiler, one line naming
# the cause.
refused() { # name, settings ("-": no file), the stderr line expected (grep -x pattern)
    D=$(loader_dir "$1" "$2")
    [ "$2" = - ] && rm "$D/clrenvload.conf"
    local want=${3//@D@/$(ns_path "$D")}
    if start_loaded "envload-$1" "$D"; then
        if [ "$(grep -c '^clrenvload: ' "$TARGET_LOG")" = 1 ] && grep -qx "$want" "$TARGET_LOG" &&
            ! vp_report "$TARGET_PID" /tmp/vendorprof-1.json >/dev/null && ! grep -q "$VI_LIB" "/proc/$TARGET_PID/maps"; then
            ok "envload-$1-app-runs-on"
        else
            fail "envload-$1-app-runs-on" "want '$want', log: $(cat "$TARGET_LOG")"
        fi
    else
        fail "envload-$1-app-runs-on" "the app did not start"
    fi
}
refused malformed "clrenvload 1\nprofiler=vi/$VI_LIB\nVENDOR_SETTING_A\n" \
    'clrenvload: @D@/clrenvload.conf: line 3: not NAME=VALUE'
refused no-settings - 'clrenvload: @D@/clrenvload.conf: No such file or directory'
refused missing-profiler "clrenvload 1\nprofiler=vi/missing.so\n$SETTINGS" \
    'clrenvload: cannot load the profiler: @D@/vi/missing.so: .*No such file or directory'

# (c) Both C libraries, without a runtime.
check_libc() { # name, loader, probe, host compiler
    local line rest
    while IFS= read -r line; do
        case $line in
        ok\ *) ok "${line#ok }" ;;
        FAIL\ *) rest=${line#FAIL }; fail "${rest%%:*}" "${rest#*: }" ;;
        esac
    done < <(HOST_CC=$4 "$ROOT/profiler/envload-check.sh" "$2" "$3" "$1" 2>&1 ||
        echo "FAIL $1-envload-check: exit $?")
}
check_libc glibc "$LOADER" "$PROBE" gcc
check_libc musl "$ROOT/$BUILD/musl/libclrenvload.so" "$ROOT/$BUILD/musl/libclrprobe.so" musl-gcc

finish e2e-envload
