#!/usr/bin/env bash
# A vendor home (OpenTelemetry's release layout, make vendorhome): linux-x64/ holding the native
# profiler and what it finds beside itself, next to net/ and LICENSE. `attach --startup` of the
# home delivers the whole tree as the app's user, names kept; the entry is linux-x64/'s library,
# {dir} the home's root as the app sees it (the profiler's report lists its settings); --entry
# takes a path inside the home ("./" too) and refuses one that climbs out of it.
. "$(dirname "$0")/lib.sh"
require_env
require_vendorinert vendor-home

VH="$ROOT/$BUILD/vendorhome"
[ -e "$VH/linux-x64/$VI_LIB" ] && [ -e "$VH/net" ] && [ -e "$VH/LICENSE" ] ||
    { echo "FAIL vendor-home-prerequisites: $VH incomplete (make vendorhome)"; exit 1; }

# home_case NAME [OPTIONS...]: attach --startup of the home to a paused app of uid 1000 with
# VENDOR_SETTING_H={dir}; checks the tree, the entry, {dir} and the load.
home_case() {
    local name=$1
    shift
    start_target "$name" --pidns --uid 1000 --suspended || { fail "$name" "the app did not start"; return; }
    local p=$TARGET_PID
    clr attach --pid "$p" --profiler "$VH" --clsid "$VI_CLSID" --startup -o json \
        --env 'VENDOR_SETTING_H={dir}' "$@"
    local d e rep
    d=$(json_get "$OUT" delivered_dir)
    e=$(json_get "$OUT" delivered_path)
    rep=$(vp_report "$p" /tmp/vendorprof-1.json)
    if [ $RC -ne 0 ] || [ "$(json_get "$OUT" outcome)" != loaded_at_startup ] || [ -z "$d" ]; then
        fail "$name" "exit $RC $(cat "$OUT" "$ERR")"
        return
    fi
    if [ "$e" = "$d/linux-x64/$VI_LIB" ] && [ "$(json_get "$OUT" variant)" = linux-x64 ] &&
        [ "$(json_get "$OUT" layout)" = home ] &&
        [ "$(json_get "$OUT" mapped)" = True ] && is_mapped "$p" "$e"; then
        ok "$name-entry (linux-x64/$VI_LIB of the home, mapped)"
    else
        fail "$name-entry" "$(cat "$OUT")"
    fi
    # The whole tree, names kept, owned by the app's user.
    local f missing=""
    for f in LICENSE net/OpenTelemetry.AutoInstrumentation.dll linux-x64/$VI_LIB \
        linux-x64/vendor.conf linux-x64/lib/libvendorhelper.so; do
        [ -f "/proc/$p/root$d/$f" ] && [ "$(stat -c %u "/proc/$p/root$d/$f")" = 1000 ] ||
            missing="$missing $f"
    done
    if [ -z "$missing" ] && cmp -s "$VH/LICENSE" "/proc/$p/root$d/LICENSE"; then
        ok "$name-whole-tree (net/ and LICENSE beside linux-x64/, as uid 1000)"
    else
        fail "$name-whole-tree" "missing or not the app's:$missing in $d"
    fi
    if python3 - "$rep" "$d" "$e" <<'PY'; then
import json, sys
rep, d, e = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
assert rep["settings"].get("VENDOR_SETTING_H") == d, rep["settings"]
assert rep["self"] == e, rep["self"]
PY
        ok "$name-dir-is-home-root ({dir} = $d)"
    else
        fail "$name-dir-is-home-root" "report: $rep"
    fi
}

home_case vendor-home
home_case vendor-home-entry-path --entry "linux-x64/$VI_LIB"
home_case vendor-home-entry-dot --entry "./linux-x64/$VI_LIB"

# A path that climbs out of the home, or an absolute one: refused before anything is sent.
if start_target vendor-home-refused --pidns --uid 1000; then
    P=$TARGET_PID
    for bad in "../vendorhome/linux-x64/$VI_LIB" "linux-x64/../../vendorinert/$VI_LIB" "/linux-x64/$VI_LIB"; do
        clr attach --pid "$P" --profiler "$VH" --clsid "$VI_CLSID" --startup -o json --entry "$bad"
        if [ $RC -eq 2 ] && grep -q -- "--entry" "$ERR" && grep -Eq "'\.\.'|absolute" "$ERR" &&
            ! ls "/proc/$P/root/tmp" | grep -q OpenTelemetry; then
            ok "vendor-home-entry-refused ($bad)"
        else
            fail "vendor-home-entry-refused ($bad)" "exit $RC $(cat "$OUT" "$ERR")"
        fi
    done
    # The text result says what was delivered: the whole home, the RID folder's library the entry
    # (--force: the profiler does nothing on attach, as OpenTelemetry's does not).
    clr attach --pid "$P" --profiler "$VH" --clsid "$VI_CLSID" --force
    if [ $RC -eq 0 ] && grep -q "with: *the whole home (its linux-x64/ folder's library the entry), in /tmp/OpenTelemetry" "$OUT"; then
        ok "vendor-home-text"
    else
        fail "vendor-home-text" "exit $RC $(cat "$OUT" "$ERR")"
    fi
fi

finish test_vendor_home
