#!/usr/bin/env bash
# Profilers shaped like real vendor ones, against a real runtime. tests/vendorprof/ builds a
# profiler that finds its config beside itself (dladdr), needs a helper through RUNPATH
# $ORIGIN/lib, and can fail or crash the app after a failed attach. Each case checks the outcome,
# what the target's view holds, and what the profiler itself wrote. No vendor's binary is used:
# only open-source packages may enter the tests, and the vendor shape is ours (tests/vendorprof).
. "$(dirname "$0")/lib.sh"
require_env

VP="$ROOT/$BUILD/vendorprof"
VP_CLSID='{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}'
for f in "$VP/libvendorprof.so" "$VP/lib/libvendorhelper.so" "$VP/vendor.conf"; do
    [ -e "$f" ] || { echo "FAIL vendor-prerequisites: $f missing (make vendorprof)"; exit 1; }
done

# 1. A profiler directory: delivered whole, names kept; the profiler found its config beside
# itself and its helper through $ORIGIN/lib.
if start_target vendor-dir --pidns --uid 1000; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --client-data "out=/tmp/vp.json" \
        --settle 300 -o json
    DIR=$(json_get "$OUT" delivered_dir)
    REP=$(vp_report "$P" /tmp/vp.json)
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" delivered_path)" = "$DIR/libvendorprof.so" ] &&
        [ -f "/proc/$P/root$DIR/lib/libvendorhelper.so" ] && [ -f "/proc/$P/root$DIR/vendor.conf" ] &&
        [ "$(stat -c '%a %u' "/proc/$P/root$DIR")" = "555 1000" ] &&
        python3 -c 'import json,sys; r=json.loads(sys.argv[1]); d=sys.argv[2]
assert r["self"] == d + "/libvendorprof.so", r
assert r["config"] == "vendorprof-config-v1" and r["helper"] == "vendorhelper 1.0", r' "$REP" "$DIR" &&
        [ "$(json_get "$OUT" mapped)" = True ]; then
        ok "vendor-directory (delivered as $DIR, config and helper found)"
    else
        fail "vendor-directory" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi

    # 2. Placeholders and client data far above the sample probe's 4096 bytes.
    PAD=$(head -c 20000 /dev/zero | tr '\0' 'x')
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --settle 0 -o json \
        --client-data "out=/tmp/vp2.json;conf={dir}/vendor.conf;pad=$PAD"
    # The runtime takes one profiler: the second attach is refused as already active, and the
    # holder is named (our first delivery, which exports DllGetClassObject).
    if [ $RC -eq 3 ] && [ "$(json_get "$OUT" reused)" = True ] &&
        grep -q "libvendorprof.so" <<<"$(json_get "$OUT" holder)"; then
        ok "vendor-already-active-names-holder"
    else
        fail "vendor-already-active-names-holder" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

if start_target vendor-placeholders --pidns; then
    P=$TARGET_PID
    PAD=$(head -c 20000 /dev/zero | tr '\0' 'x')
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --settle 0 -o json \
        --client-data "out=/tmp/vp2.json;conf={dir}/vendor.conf;pad=$PAD"
    DIR=$(json_get "$OUT" delivered_dir)
    REP=$(vp_report "$P" /tmp/vp2.json)
    if [ $RC -eq 0 ] && python3 -c 'import json,sys; r=json.loads(sys.argv[1]); d=sys.argv[2]
assert r["conf_path"] == d + "/vendor.conf" and r["conf"] == "vendorprof-config-v1", r
assert r["client_data_len"] > 20000, r' "$REP" "$DIR"; then
        ok "vendor-placeholders-and-big-client-data ($(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["client_data_len"])' "$REP") bytes)"
    else
        fail "vendor-placeholders-and-big-client-data" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
fi

# 3. Layouts: a bundle of directories per RID, and a NuGet package (runtimes/<rid>/native/).
mkdir -p "$WORK/vbundle" "$WORK/vnuget/runtimes/linux-x64" "$WORK/vnuget/lib/net8.0"
cp -r "$VP" "$WORK/vbundle/linux-x64"
mkdir -p "$WORK/vbundle/linux-musl-x64" && cp "$PROBE" "$WORK/vbundle/linux-musl-x64/"
cp -r "$VP" "$WORK/vnuget/runtimes/linux-x64/native"
for layout in vbundle vnuget; do
    if start_target "vendor-$layout" --pidns; then
        P=$TARGET_PID
        clr attach --pid "$P" --profiler "$WORK/$layout" --clsid "$VP_CLSID" --settle 0 -o json \
            --client-data "out=/tmp/vp.json"
        if [ $RC -eq 0 ] && [ "$(json_get "$OUT" variant)" = linux-x64 ] &&
            vp_report "$P" /tmp/vp.json | grep -q '"helper":"vendorhelper 1.0"'; then
            ok "vendor-layout-$layout"
        else
            fail "vendor-layout-$layout" "exit $RC $(cat "$OUT" "$ERR")"
        fi
    fi
done

# 4. A missing dependency is named before anything is sent, and what was delivered is removed.
mkdir -p "$WORK/vnohelper"
cp "$VP/libvendorprof.so" "$VP/vendor.conf" "$WORK/vnohelper/"
if start_target vendor-missing-dep --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$WORK/vnohelper" --clsid "$VP_CLSID" --settle 0 -o json
    if [ $RC -eq 13 ] && [ "$(json_get "$OUT" outcome)" = dependency_missing ] &&
        grep -q "libvendorprof.so needs libvendorhelper.so" "$ERR" && grep -q "lib" "$ERR" &&
        ! grep -q "libvendorprof" "/proc/$P/maps" &&
        [ -z "$(ls "/proc/$P/root/tmp" | grep '^libvendorprof-')" ]; then
        ok "vendor-missing-dependency-refused"
    else
        fail "vendor-missing-dependency-refused" "exit $RC $(cat "$OUT" "$ERR"; ls "/proc/$P/root/tmp")"
    fi
    # Forced anyway: the runtime's bare 0x8007007E, and the delivery removed afterwards.
    clr attach --pid "$P" --profiler "$WORK/vnohelper" --clsid "$VP_CLSID" --settle 0 -o json \
        --skip-dependency-check
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" hresult)" = 0x8007007E ] &&
        [ "$(json_get "$OUT" removed)" = True ] &&
        [ -z "$(ls "/proc/$P/root/tmp" | grep '^libvendorprof-')" ]; then
        ok "vendor-skip-dependency-check-load-failed-removed"
    else
        fail "vendor-skip-dependency-check-load-failed-removed" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# 5. A profiler that fails InitializeForAttach: load_failed, files removed; --keep keeps them.
if start_target vendor-fail --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --settle 500 -o json --keep \
        --client-data "mode=fail;out=/tmp/vpf.json"
    DIR=$(json_get "$OUT" delivered_dir)
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" hresult)" = 0x80004005 ] && [ -d "/proc/$P/root$DIR" ] &&
        kill -0 "$P"; then
        ok "vendor-load-failed-keep"
    else
        fail "vendor-load-failed-keep" "exit $RC $(cat "$OUT" "$ERR")"
    fi
    # Another profiler takes the slot; the vendor one is then refused, the holder named.
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --settle 0
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --settle 0 -o json \
        --client-data "out=/tmp/vp3.json"
    if [ $RC -eq 3 ] && grep -q "libclrprobe-" <<<"$(json_get "$OUT" holder)" &&
        grep -q "libclrprobe-.* is loaded and exports DllGetClassObject" "$ERR"; then
        ok "vendor-already-active-other-holder"
    else
        fail "vendor-already-active-other-holder" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# 6. A profiler that fails and leaves a thread that kills the app: target_died, not load_failed.
if start_target vendor-crash --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" -o json \
        --client-data "mode=crash;out=/tmp/vpc.json"
    if [ $RC -eq 12 ] && [ "$(json_get "$OUT" outcome)" = target_died ] &&
        [ -n "$(json_get "$OUT" died_after_ms)" ] && grep -qE "then the app died|app died during the attach" "$ERR" &&
        ! kill -0 "$P" 2>/dev/null; then
        ok "vendor-target-died ($(json_get "$OUT" died_after_ms) ms after the answer)"
    else
        fail "vendor-target-died" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# 7. watch reports the death too, as its own outcome.
if start_target vendor-crash-watch --pidns; then
    P=$TARGET_PID
    timeout 60 "$CLRATTACH" watch --profiler "$VP" --clsid "$VP_CLSID" --events off -o json \
        --client-data "mode=crash;out=/tmp/vpc.json" --match-cmdline ClrTarget.dll --interval 100 \
        >"$WORK/watch.out" 2>"$WORK/watch.err" &
    W=$!
    for _ in $(seq 1 100); do
        grep -q '"outcome":"target_died"' "$WORK/watch.out" 2>/dev/null && break
        sleep 0.1
    done
    kill -TERM $W 2>/dev/null
    wait $W 2>/dev/null
    if grep -q '"outcome":"target_died"' "$WORK/watch.out" && ! grep -q '"outcome":"load_failed"' "$WORK/watch.out"; then
        ok "vendor-watch-target-died"
    else
        fail "vendor-watch-target-died" "$(cat "$WORK/watch.out" "$WORK/watch.err" | tail -5)"
    fi
fi

# 8. A tar stream of the directory on stdin (what kubectl clrattach streams from a laptop).
if start_target vendor-stdin --pidns; then
    P=$TARGET_PID
    OUT="$WORK/stdin.out" ERR="$WORK/stdin.err"
    tar -C "$VP" -c . | "$CLRATTACH" attach --pid "$P" --profiler - --clsid "$VP_CLSID" \
        --settle 0 -o json --client-data "out=/tmp/vps.json" >"$OUT" 2>"$ERR"
    RC=$?
    if [ $RC -eq 0 ] && vp_report "$P" /tmp/vps.json | grep -q '"helper":"vendorhelper 1.0"'; then
        ok "vendor-stdin-tar"
    else
        fail "vendor-stdin-tar" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# 9. A package with two libraries that export DllGetClassObject (an engine and its plugin, as
# instrumentation engines ship): without --entry both are named and nothing is sent.
mkdir -p "$WORK/two/plugins"
cp -a "$VP/." "$WORK/two/"
cp "$VP/libvendorprof.so" "$WORK/two/plugins/libvendorplugin.so"
clr attach --pid 1 --profiler "$WORK/two" --clsid "$VP_CLSID"
[ $RC -eq 2 ] && grep -q "libvendorprof.so, plugins/libvendorplugin.so" "$ERR" &&
    grep -q -- "--entry" "$ERR" && ok "vendor-entry-candidates" ||
    fail "vendor-entry-candidates" "exit $RC $(cat "$ERR")"

# 10. --startup cannot carry client data: refused, and said why.
clr attach --pid 1 --profiler "$VP" --clsid "$VP_CLSID" --startup --client-data x
[ $RC -eq 2 ] && grep -q "StartupProfiler" "$ERR" && ok "vendor-startup-refuses-client-data" ||
    fail "vendor-startup-refuses-client-data" "exit $RC $(cat "$ERR")"

# 11. A profiler whose attach is known to do nothing (built startup-only from tests/vendorprof
# with -DVENDOR_INERT, under OpenTelemetry's file name and CLSID): refused before anything is
# delivered, with its own outcome and a way to load it at startup.
VI="$ROOT/$BUILD/vendorinert"
VI_LIB=OpenTelemetry.AutoInstrumentation.Native.so
VI_CLSID='{918728DD-259F-4A6A-AC2B-B85E1B658318}'
[ -e "$VI/$VI_LIB" ] || { fail "vendor-inert-prerequisites" "$VI/$VI_LIB missing (make vendorprof)"; finish e2e-vendor; }
if start_target vendor-inert --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --settle 0 -o json
    if [ $RC -eq 14 ] && [ "$(json_get "$OUT" outcome)" = inert_on_attach ] &&
        [ -z "$(json_get "$OUT" delivered_path)" ] &&
        [ -z "$(ls "/proc/$P/root/tmp" | grep -v -e '^clr-debug-pipe-' -e '^dotnet-diagnostic-')" ] &&
        ! grep -q "$VI_LIB" "/proc/$P/maps" &&
        grep -q "DOTNET_DefaultDiagnosticPortSuspend=1" <<<"$(json_get "$OUT" next_step)" &&
        grep -q -- "--force" <<<"$(json_get "$OUT" next_step)" &&
        grep -q "opentelemetry-dotnet-instrumentation" <<<"$(json_get "$OUT" error)"; then
        ok "vendor-inert-refused-nothing-delivered"
    else
        fail "vendor-inert-refused-nothing-delivered" "exit $RC $(cat "$OUT" "$ERR"; ls "/proc/$P/root/tmp")"
    fi
    # The vendor's file name with another CLSID is someone else's profiler: attached as usual.
    mkdir -p "$WORK/vnamed"
    cp -a "$VP/." "$WORK/vnamed/" && mv "$WORK/vnamed/libvendorprof.so" "$WORK/vnamed/$VI_LIB"
    clr attach --pid "$P" --profiler "$WORK/vnamed" --clsid "$VP_CLSID" --settle 0 -o json \
        --client-data "out=/tmp/vpn.json"
    if [ $RC -eq 0 ] && [ -z "$(json_get "$OUT" expected_inert)" ] &&
        vp_report "$P" /tmp/vpn.json >/dev/null; then
        ok "vendor-inert-name-alone-not-refused"
    else
        fail "vendor-inert-name-alone-not-refused" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

# --force sends it anyway: the runtime says S_OK and maps it, the result says it is expected to
# stay inert, and the profiler indeed never starts (no report).
if start_target vendor-inert-force --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --settle 300 -o json --force
    sleep 0.5
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" expected_inert)" = True ] &&
        [ "$(json_get "$OUT" mapped)" = True ] && grep -q "$VI_LIB" "/proc/$P/maps" &&
        [ -z "$(ls "/proc/$P/root/tmp" | grep '^vendorprof-')" ]; then
        ok "vendor-inert-force-expected-inert"
    else
        fail "vendor-inert-force-expected-inert" "exit $RC $(cat "$OUT" "$ERR"; ls "/proc/$P/root/tmp")"
    fi
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --settle 0 --force
    # Already active now; the text result of a forced success is covered by the first run's JSON.
fi

# The same profiler loaded at startup on a paused runtime runs: Initialize starts it.
if start_target vendor-inert-startup --pidns --suspended; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$VI" --clsid "$VI_CLSID" --startup -o json
    REP=$(vp_report "$P" /tmp/vendorprof-1.json)
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" load)" = startup ] &&
        [ -z "$(json_get "$OUT" expected_inert)" ] && grep -q '"config":"vendorprof-config-v1"' <<<"$REP"; then
        ok "vendor-inert-startup-runs"
    else
        fail "vendor-inert-startup-runs" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
fi

# watch reports the refusal once for the instance and never sends it.
if start_target vendor-inert-watch --pidns; then
    P=$TARGET_PID
    timeout 60 "$CLRATTACH" watch --profiler "$VI" --clsid "$VI_CLSID" --events off -o json \
        --match-cmdline ClrTarget.dll --interval 100 >"$WORK/iwatch.out" 2>"$WORK/iwatch.err" &
    W=$!
    for _ in $(seq 1 100); do
        grep -q '"outcome":"inert_on_attach"' "$WORK/iwatch.out" 2>/dev/null && break
        sleep 0.1
    done
    sleep 1.5 # several scan intervals: a retry would show as a second line
    kill -TERM $W 2>/dev/null
    wait $W 2>/dev/null
    n=$(grep -c "\"pid\":$P," "$WORK/iwatch.out")
    if [ "$n" = 1 ] && grep -q '"outcome":"inert_on_attach"' "$WORK/iwatch.out" &&
        ! grep -q "$VI_LIB" "/proc/$P/maps"; then
        ok "vendor-inert-watch-once"
    else
        fail "vendor-inert-watch-once" "$n lines for pid $P: $(cat "$WORK/iwatch.out" "$WORK/iwatch.err" | tail -5)"
    fi
fi

finish e2e-vendor
