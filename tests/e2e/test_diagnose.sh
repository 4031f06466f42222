#!/usr/bin/env bash
# Causes clrattach detects before sending anything, each named with its next step, the target
# untouched: diagnostics disabled in the target's environment, a TMPDIR too long for sun_path.
. "$(dirname "$0")/lib.sh"
require_env

if start_target diag-off --pidns --env DOTNET_EnableDiagnostics=0; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
    if [ $RC -eq 4 ] && grep -q "DOTNET_EnableDiagnostics=0" "$ERR" && grep -q "next step" "$ERR" &&
        [ -z "$(ls "/proc/$P/root/tmp")" ]; then
        ok "diagnostics-disabled"
    else
        fail "diagnostics-disabled" "exit $RC: $(cat "$ERR") files: $(ls "/proc/$P/root/tmp")"
    fi
    clr ps -o json
    if python3 - "$OUT" "$P" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["processes"]
r = [x for x in rows if x["pid"] == int(sys.argv[2])]
assert len(r) == 1 and r[0]["state"] == "disabled", rows
PY
    then ok "ps-shows-disabled"; else fail "ps-shows-disabled" "$(cat "$OUT")"; fi
fi

long=/tmp/$(printf 'd%.0s' $(seq 1 90))
if start_target long-tmpdir --pidns --tmpdir "$long"; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 4 ] && grep -q "too long" "$ERR" && grep -q "shorter TMPDIR" "$ERR"; then
        ok "tmpdir-too-long"
    else
        fail "tmpdir-too-long" "exit $RC: $(cat "$ERR")"
    fi
fi

# A profiler the runtime cannot load: a real shared object without DllGetClassObject.
NOTPROF=$(ls "/usr/lib/$MULTIARCH/libz.so.1" "/lib/$MULTIARCH/libz.so.1" 2>/dev/null | head -1)
if start_target not-a-profiler --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$NOTPROF" --clsid "$PROBE_CLSID" -o json
    hr=$(json_get "$OUT" hresult)
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" outcome)" = load_failed ] && [ "$hr" = 0x8007007F ] &&
        grep -q "DllGetClassObject" "$ERR" && grep -q "next step" "$ERR"; then
        ok "load-failure-decoded ($hr)"
    else
        fail "load-failure-decoded" "exit $RC hr=$hr: $(cat "$ERR")"
    fi
    # An executable is refused before anything is sent (the runtime cannot dlopen a PIE).
    clr attach --pid "$P" --profiler "$CLRATTACH" --clsid "$PROBE_CLSID"
    [ $RC -eq 2 ] && grep -q "not an ELF shared object" "$ERR" && ok "executable-refused" ||
        fail "executable-refused" "exit $RC: $(cat "$ERR")"
fi

# A profiler that cannot write its output on a read-only file system (an app with
# readOnlyRootFilesystem): the probe answers HRESULT_FROM_WIN32(ERROR_WRITE_PROTECT), decoded by
# name with where to write instead, not as UNKNOWN.
if start_target read-only-out --pidns --pre "mkdir -p /tmp/ro && mount -t tmpfs -o ro tmpfs /tmp/ro"; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --client-data out=/tmp/ro/report.json -o json
    hr=$(json_get "$OUT" hresult)
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" outcome)" = load_failed ] && [ "$hr" = 0x80070013 ] &&
        grep -qF "HRESULT_FROM_WIN32(ERROR_WRITE_PROTECT)" "$ERR" && grep -q "writable path" "$ERR" &&
        ! grep -q UNKNOWN "$ERR"; then
        ok "write-protect-decoded ($hr)"
    else
        fail "write-protect-decoded" "exit $RC hr=$hr: $(cat "$ERR")"
    fi
fi

# Usage errors: exit 2, the problem named, nothing done.
clr attach --pid 1 --profiler "$PROBE" --clsid not-a-guid
[ $RC -eq 2 ] && grep -q "not a GUID" "$ERR" && ok "usage-bad-clsid" || fail "usage-bad-clsid" "exit $RC $(cat "$ERR")"
clr attach --pid 1 --profiler /nonexistent.so --clsid "$PROBE_CLSID"
[ $RC -eq 2 ] && grep -q "/nonexistent.so" "$ERR" && ok "usage-missing-profiler" || fail "usage-missing-profiler" "exit $RC $(cat "$ERR")"
clr attach --pid 1 --profiler "$ROOT/README.md" --clsid "$PROBE_CLSID"
[ $RC -eq 2 ] && grep -q "not an ELF" "$ERR" && ok "usage-not-elf" || fail "usage-not-elf" "exit $RC $(cat "$ERR")"
clr attach --pid 1
[ $RC -eq 2 ] && grep -q "required" "$ERR" && ok "usage-missing-options" || fail "usage-missing-options" "exit $RC"
clr frobnicate
[ $RC -eq 2 ] && grep -q "unknown command" "$ERR" && ok "usage-unknown-command" || fail "usage-unknown-command" "exit $RC"
# -o json: exactly one JSON document on stdout for every outcome, usage errors included.
json_one() {
    python3 -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(d) == 1, d
assert d[0]["outcome"] == sys.argv[2] and d[0]["exit_code"] == int(sys.argv[3]), d' "$OUT" "$1" "$2"
}
clr attach --pid 1 --profiler "$PROBE" --clsid not-a-guid -o json
[ $RC -eq 2 ] && json_one usage_error 2 && ok "json-usage-bad-clsid" || fail "json-usage-bad-clsid" "exit $RC $(cat "$OUT")"
head -c 70000 /dev/zero >"$WORK/big"
clr attach --pid 1 --profiler "$PROBE" --clsid "$PROBE_CLSID" --client-data "@$WORK/big" -o json
[ $RC -eq 2 ] && json_one usage_error 2 && ok "json-usage-client-data-too-big" ||
    fail "json-usage-client-data-too-big" "exit $RC $(cat "$OUT")"
clr frobnicate -o json
[ $RC -eq 2 ] && json_one usage_error 2 && ok "json-usage-unknown-command" || fail "json-usage-unknown-command" "exit $RC $(cat "$OUT")"
mkdir -p "$WORK/emptyproc"
clr ps -o json --proc "$WORK/emptyproc"
[ $RC -eq 0 ] && [ "$(cat "$OUT")" = '{"command":"ps","processes":[]}' ] && ok "json-ps-empty-list" ||
    fail "json-ps-empty-list" "exit $RC $(cat "$OUT" "$ERR")"
head -c 70000 /dev/zero >"$WORK/big"
clr attach --pid 1 --profiler "$PROBE" --clsid "$PROBE_CLSID" --client-data "@$WORK/big"
[ $RC -eq 2 ] && grep -q "exceeds" "$ERR" && ok "usage-client-data-too-big" || fail "usage-client-data-too-big" "exit $RC $(cat "$ERR")"
clr --version
[ $RC -eq 0 ] && grep -q "^clrattach " "$OUT" && ok "version" || fail "version" "exit $RC"

# The checked-in Kubernetes seccomp profile is exactly what the binary enforces on itself.
clr seccomp-profile
if [ $RC -eq 0 ] && python3 - "$OUT" "$ROOT/deploy/seccomp/clrattach.json" <<'PY'
import json, sys
assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])), "deploy/seccomp/clrattach.json drifted: regenerate it with 'clrattach seccomp-profile'"
PY
then ok "seccomp-profile-matches-deploy"; else fail "seccomp-profile-matches-deploy" "$(cat "$ERR")"; fi
clr seccomp-profile --stats
n=$(sed -n 's/^allowed syscalls: //p' "$OUT")
[ $RC -eq 0 ] && [ "${n:-0}" -gt 20 ] && [ "$n" -lt 150 ] && ok "seccomp-stats ($n)" || fail "seccomp-stats" "$(cat "$OUT")"

finish e2e-diagnose
