#!/usr/bin/env bash
# A listening clrattach cannot read the app's maps, so it verifies a startup load through the
# protocol: after ResumeRuntime, AttachProfiler with the same path and CLSID, which a runtime
# that loaded the profiler refuses as CORPROF_E_PROFILER_ALREADY_ACTIVE and one that did not
# answers with its load error. The real runtime, in its own mount and PID namespaces as uid
# 1000, sharing only a directory with clrattach:
#   (a) the probe with its CLSID: loaded_at_startup, verified, and the probe is in the app's maps;
#   (b) a wrong CLSID (the runtime records any at StartupProfiler): startup_load_failed, exit 7,
#       naming CLASS_E_CLASSNOTAVAILABLE; the app runs on, the probe is not mapped, and what was
#       delivered is removed;
#   (c) a library the profiler needs not shipped with it: startup_load_failed, exit 7,
#       ERROR_MOD_NOT_FOUND; the app runs on;
#   (d) the fake runtime (connect mode) refusing the verification with another error:
#       startup_load_failed; never answering it: protocol_error (exit 9), "not known", within
#       --timeout of the resume, never loaded_at_startup; exiting as it resumes: protocol_error,
#       without saying that the app runs on.
. "$(dirname "$0")/lib.sh"
require_env
require_vendorinert listen-verify

# The socket's path may have at most 107 bytes: in a short directory, not under $WORK.
make_sock_dir
SHARE="$SOCK_DIR/share"
mkdir -p "$SHARE"
chmod 0755 "$SHARE"
SOCK="$SHARE/port.sock"
require_sock_path listen-verify "$SOCK" "the listening socket"
APP=(--pidns --uid 1000 --pre "mount --bind '$SHARE' /mnt")

# serve NAME ARGS...: a one-shot attach --listen for the next app started; its output in
# $LOUT/$LERR, its exit status in $LRC once the app was served.
serve() {
    local name=$1 i
    shift
    LOUT="$WORK/verify.$name.out"
    LERR="$WORK/verify.$name.err"
    # A fresh directory: what an earlier case delivered would be reused, not ours to remove.
    rm -rf "${SHARE:?}"/*
    timeout 60 "$CLRATTACH" attach --listen "$SOCK" --deliver-dir "$SHARE" --app-dir /mnt \
        --socket-owner 1000:1000 --events off -o json "$@" >"$LOUT" 2>"$LERR" &
    LPID=$!
    for i in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
    if start_target "listen-verify-$name" "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
        wait "$LPID"
        LRC=$?
        return 0
    fi
    kill "$LPID" 2>/dev/null
    wait "$LPID" 2>/dev/null
    return 1
}

# runs_on NAME: the app was resumed and its Main ran.
runs_on() {
    local i
    for i in $(seq 100); do grep -q '^ready' "$TARGET_LOG" && break; sleep 0.1; done
    if grep -q '^ready' "$TARGET_LOG"; then ok "$1-app-runs-on"; else fail "$1-app-runs-on" "$(cat "$TARGET_LOG")"; fi
}

end_apps() {
    local p
    for p in "${TARGET_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.2
}

# (a) A good startup load is reported loaded only once the runtime said so.
if serve good --profiler "$PROBE" --clsid "$PROBE_CLSID"; then
    if [ "$LRC" -eq 0 ] && [ "$(json_get "$LOUT" outcome)" = loaded_at_startup ] &&
        [ "$(json_get "$LOUT" resumed)" = True ] &&
        json_get "$LOUT" verified | grep -q 'CORPROF_E_PROFILER_ALREADY_ACTIVE'; then
        ok "listen-verify-loaded"
    else
        fail "listen-verify-loaded" "exit $LRC $(cat "$LOUT" "$LERR")"
    fi
    # What the verification said is what the maps say (visible here, not to a sidecar).
    if grep -q "$(basename "$(json_get "$LOUT" delivered_path)")" "/proc/$TARGET_PID/maps"; then
        ok "listen-verify-loaded-mapped"
    else
        fail "listen-verify-loaded-mapped" "not in the app's maps"
    fi
    runs_on listen-verify-good
fi
end_apps

# The text result says how it was verified.
if serve good-text --profiler "$PROBE" --clsid "$PROBE_CLSID" -o text; then
    if [ "$LRC" -eq 0 ] && grep -q '^loaded at startup: pid' "$LOUT" &&
        grep -q '^  verified: .*CORPROF_E_PROFILER_ALREADY_ACTIVE' "$LOUT"; then
        ok "listen-verify-loaded-text"
    else
        fail "listen-verify-loaded-text" "exit $LRC $(cat "$LOUT" "$LERR")"
    fi
fi
end_apps

# (b) A wrong CLSID: StartupProfiler takes it, the load fails after the resume.
if serve wrong-clsid --profiler "$PROBE" --clsid "{00000000-1111-2222-3333-444444444444}"; then
    D=$(json_get "$LOUT" delivered_path)
    if [ "$LRC" -eq 7 ] && [ "$(json_get "$LOUT" outcome)" = startup_load_failed ] &&
        [ "$(json_get "$LOUT" resumed)" = True ] && [ "$(json_get "$LOUT" removed)" = True ] &&
        [ -z "$(json_get "$LOUT" verified)" ] &&
        [ "$(json_get "$LOUT" hresult)" = 0x80040111 ] &&
        grep -q 'CLASS_E_CLASSNOTAVAILABLE' "$LERR" && grep -q 'clsid' "$LERR"; then
        ok "listen-verify-wrong-clsid-failed"
    else
        fail "listen-verify-wrong-clsid-failed" "exit $LRC $(cat "$LOUT" "$LERR")"
    fi
    if [ -n "$D" ] && ! grep -q "$(basename "$D")" "/proc/$TARGET_PID/maps" &&
        [ ! -e "$SHARE/$(basename "$D")" ]; then
        ok "listen-verify-wrong-clsid-not-mapped-removed"
    else
        fail "listen-verify-wrong-clsid-not-mapped-removed" "'$D': $(ls "$SHARE")"
    fi
    runs_on listen-verify-wrong-clsid
fi
end_apps

# (c) A library the profiler needs, not shipped with it: the runtime's dlopen fails.
mkdir -p "$WORK/vinohelper"
cp "$VI/$VI_LIB" "$VI/vendor.conf" "$WORK/vinohelper/"
if serve missing-dep --profiler "$WORK/vinohelper" --clsid "$VI_CLSID"; then
    if [ "$LRC" -eq 7 ] && [ "$(json_get "$LOUT" outcome)" = startup_load_failed ] &&
        [ "$(json_get "$LOUT" resumed)" = True ] && grep -q 'ERROR_MOD_NOT_FOUND' "$LERR" &&
        [ "$(json_get "$LOUT" hresult)" = 0x8007007E ] &&
        json_get "$LOUT" dependency_check | grep -q 'not checked: libvendorhelper'; then
        ok "listen-verify-missing-dep-failed"
    else
        fail "listen-verify-missing-dep-failed" "exit $LRC $(cat "$LOUT" "$LERR")"
    fi
    runs_on listen-verify-missing-dep
fi
end_apps

# serve_fake NAME FAKE-ARGS...: a one-shot attach --listen (--timeout 2) and the fake runtime in
# connect mode with FAKE-ARGS; its output in $LOUT/$LERR, its exit status in $LRC, its time in
# $T (s), the fake's log in $WORK/fake.NAME.log.
serve_fake() {
    local name=$1 t0
    shift
    LOUT="$WORK/verify.fake-$name.out"
    LERR="$WORK/verify.fake-$name.err"
    rm -f "$SOCK"
    timeout 30 "$CLRATTACH" attach --listen "$SOCK" --deliver-dir "$SHARE" --events off -o json \
        --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout 2 >"$LOUT" 2>"$LERR" &
    LPID=$!
    for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
    python3 "$FAKE" connect-good "$SOCK" "$@" >/dev/null 2>"$WORK/fake.$name.log" &
    FP=$!
    TARGET_PIDS+=("$FP")
    t0=$(date +%s)
    wait "$LPID"
    LRC=$?
    T=$(($(date +%s) - t0))
    kill -KILL "$FP" 2>/dev/null
    wait "$FP" 2>/dev/null
}

# (d) The fake runtime: the verification refused, or never answered.
for how in refuse stall; do
    serve_fake "$how" "--$how" attach
    want_rc=7 want=startup_load_failed
    [ $how = stall ] && want_rc=9 want=protocol_error
    if [ "$LRC" -eq $want_rc ] && [ "$(json_get "$LOUT" outcome)" = $want ] &&
        [ "$(json_get "$LOUT" resumed)" = True ] && grep -q '^resumed' "$WORK/fake.$how.log" &&
        grep -q 'request 03/01 attach' "$WORK/fake.$how.log" && [ "$T" -le 10 ] &&
        { [ $how = refuse ] || { grep -q 'is not known' "$LERR" && grep -q 'the app runs on' "$LERR"; }; }; then
        ok "listen-verify-fake-$how"
    else
        fail "listen-verify-fake-$how" "exit $LRC after ${T}s $(cat "$LOUT" "$LERR" "$WORK/fake.$how.log")"
    fi
done

# A runtime that exits as it resumes never connects again: not verified (protocol_error), and
# the result does not say that the app runs on.
serve_fake exit --exit-after resume
if [ "$LRC" -eq 9 ] && [ "$(json_get "$LOUT" outcome)" = protocol_error ] &&
    [ "$(json_get "$LOUT" resumed)" = True ] && grep -q '^exited' "$WORK/fake.exit.log" &&
    ! grep -q 'request 03/01 attach' "$WORK/fake.exit.log" &&
    json_get "$LOUT" error | grep -q 'did not connect again' &&
    ! grep -q 'runs on' "$LOUT" "$LERR"; then
    ok "listen-verify-fake-exit-not-said-running"
else
    fail "listen-verify-fake-exit-not-said-running" "exit $LRC $(cat "$LOUT" "$LERR" "$WORK/fake.exit.log")"
fi

echo "listen-verify: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
