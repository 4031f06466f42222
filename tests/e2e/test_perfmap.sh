#!/usr/bin/env bash
# `clrattach perfmap enable|disable` against a real CoreCLR runtime in its own PID and mount
# namespaces, as another uid: the map appears in the app's view and grows, disable stops its
# growth, and a real perf names a managed method of the app from it. Also the jitdump route
# (perf inject) for an app with W^X on, and a runtime too old for the command (the fake).
. "$(dirname "$0")/lib.sh"
require_env

PERF=${PERF:-/usr/bin/perf}
[ -x "$PERF" ] || { fail perf-installed "$PERF missing: make deps installs linux-perf"; finish test_perfmap.sh; exit; }

# map_size PID: bytes of /tmp/perf-1.map in the target's view, -1 when absent.
map_size() {
    stat -c %s "/proc/$1/root/tmp/perf-1.map" 2>/dev/null || echo -1
}

# perf_names PERF_DATA: does perf report name the test app's spinning method?
perf_names() {
    "$PERF" report -i "$1" --stdio --no-children --sort dso,sym 2>"$WORK/perf-report.err" |
        grep -q 'Program::SpinForPerfMapProbe'
}

# 1. The text map. perf (6.1) names JIT code from a perf map only in anonymous executable
#    memory; with W^X on (the default since .NET 7) the runtime maps its code from a memfd
#    ("/memfd:doublemapper"), which that perf takes for a file: the app runs with W^X off here,
#    and the jitdump route below covers the default (docs/perfmap.md).
if start_target perfmap --pidns --uid 1000 --env CLRTARGET_SPIN_MS=20 \
    --env DOTNET_EnableWriteXorExecute=0; then
    P=$TARGET_PID
    [ "$(map_size "$P")" = -1 ] && ok "no perf map before enable" ||
        fail "no perf map before enable" "/tmp/perf-1.map already there"
    clr perfmap enable --pid "$P" -o json
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = perfmap_enabled ] &&
        [ "$(json_get "$OUT" kind)" = perfmap ] &&
        [ "$(json_get "$OUT" perf_map.target_path)" = /tmp/perf-1.map ] &&
        [ "$(json_get "$OUT" perf_map.node_path)" = "/proc/$P/root/tmp/perf-1.map" ] &&
        [ -z "$(json_get "$OUT" jitdump)" ]; then
        ok "enable: perfmap_enabled, the map's path in the app's view and from here"
    else
        fail "enable" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    # The runtime writes it as the app's user, in the app's own /tmp: the node path is the way in.
    owner=$(stat -c %u "/proc/$P/root/tmp/perf-1.map" 2>/dev/null)
    s1=$(map_size "$P")
    [ "$owner" = 1000 ] && [ "$s1" -gt 0 ] &&
        ok "the map is in the app's /tmp, its user's, with the methods compiled so far ($s1 bytes)" ||
        fail "map appears" "owner '$owner', size $s1"
    # The app compiles a new method every 500 ms: the map grows while enabled.
    grown=0
    for _ in $(seq 1 40); do
        sleep 0.1
        [ "$(map_size "$P")" -gt "$s1" ] && { grown=1; break; }
    done
    [ $grown = 1 ] && ok "the map grows with JIT activity" || fail "map grows" "still $s1 bytes"

    # A real perf, from the node's side: it reads /tmp/perf-<nspid>.map in the app's own mount
    # namespace, by the pid the app has there.
    if timeout 60 "$PERF" record -F 499 -p "$P" -o "$WORK/perf.data" -- sleep 2 \
        >"$WORK/perf-record.out" 2>&1 && perf_names "$WORK/perf.data"; then
        ok "perf record + perf report name Program::SpinForPerfMapProbe from the map"
    else
        fail "perf names the method" "$(tail -3 "$WORK/perf-record.out") $(tail -3 "$WORK/perf-report.err")"
    fi

    clr perfmap disable --pid "$P"
    if [ $RC -eq 0 ] && grep -q '^perf map disabled: pid' "$OUT" &&
        grep -qF "/proc/$P/root/tmp/perf-1.map" "$OUT" && ! grep -q 'jit-1.dump' "$OUT"; then
        ok "disable: perf map disabled (text), naming the map only (no jitdump was enabled)"
    else
        fail "disable" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    s3=$(map_size "$P")
    sleep 2
    s4=$(map_size "$P")
    [ "$s3" -gt 0 ] && [ "$s3" = "$s4" ] && ok "disable stops the growth; the file stays ($s4 bytes)" ||
        fail "disable stops growth" "$s3 -> $s4"

    # Under valgrind (which makes syscalls the filter forbids: --seccomp=off for it alone): no
    # memory error, no definite leak.
    if command -v valgrind >/dev/null; then
        valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "$(vg_clrattach)" perfmap enable --seccomp=off --pid "$P" -o json \
            >"$WORK/vg.out" 2>"$WORK/vg.err"
        vrc=$?
        [ $vrc -eq 0 ] && ! grep -q "==[0-9]*==" "$WORK/vg.err" && ok "valgrind: perfmap enable" ||
            fail "valgrind perfmap" "exit $vrc: $(head -30 "$WORK/vg.err")"
    fi

    # The Event: its own reason and action.
    clr perfmap enable --pid "$P" --kind all --dry-run-events --pod app-0 -o json
    if [ $RC -eq 0 ] && grep -q '"reason":"PerfMapEnabled"' "$OUT" &&
        grep -q '"action":"EnablePerfMap"' "$OUT" && [ -s "/proc/$P/root/tmp/jit-1.dump" ]; then
        ok "enable --kind all: the jitdump too, Event PerfMapEnabled"
    else
        fail "enable --kind all" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    clr perfmap disable --pid "$P" --dry-run-events --pod app-0 -o json
    grep -q '"reason":"PerfMapDisabled"' "$OUT" && [ $RC -eq 0 ] && grep -q '"jitdump"' "$OUT" &&
        grep -q '"perf_map"' "$OUT" &&
        ok "disable: Event PerfMapDisabled; both files named once both were written" ||
        fail "disable Event" "exit $RC: $(cat "$OUT" "$ERR")"
fi

# 2. The default W^X app: the jitdump, folded into the profile by perf inject --jit. perf must
#    record with the runtime's jitdump clock (CLOCK_MONOTONIC, -k mono).
if start_target perfmap-wx --pidns --uid 1000 --env CLRTARGET_SPIN_MS=20; then
    P=$TARGET_PID
    timeout 60 "$PERF" record -k mono -F 499 -p "$P" -o "$WORK/perf-wx.data" -- sleep 4 \
        >"$WORK/perf-record.out" 2>&1 &
    rec=$!
    sleep 1
    clr perfmap enable --pid "$P" --kind jitdump -o json
    wait $rec
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" jitdump.target_path)" = /tmp/jit-1.dump ] &&
        "$PERF" inject --jit -i "$WORK/perf-wx.data" -o "$WORK/perf-wx.jit.data" \
            >"$WORK/perf-inject.out" 2>&1 && perf_names "$WORK/perf-wx.jit.data"; then
        ok "W^X on: --kind jitdump, perf inject --jit, perf report names the method"
    else
        fail "jitdump route" "exit $RC: $(cat "$OUT" "$ERR") $(tail -3 "$WORK/perf-inject.out")"
    fi
    clr perfmap disable --pid "$P" -o json
    [ $RC -eq 0 ] && grep -q '"jitdump"' "$OUT" && ! grep -q '"perf_map"' "$OUT" &&
        ok "disable after --kind jitdump: names the jitdump only" ||
        fail "disable jitdump" "exit $RC: $(cat "$OUT" "$ERR")"
fi

# 3. A runtime older than .NET 8: refused from ProcessInfo's answer, nothing sent.
if start_fake perfmap-net6 net6; then
    clr perfmap enable --pid "$TARGET_PID" -o json
    if [ $RC -eq 15 ] && [ "$(json_get "$OUT" outcome)" = runtime_too_old ] &&
        grep -q 'needs .NET 8' "$OUT" && ! grep -q 'request 04/05' "$TARGET_LOG"; then
        ok "a .NET 6 runtime: runtime_too_old (exit 15), EnablePerfMap never sent"
    else
        fail "too old" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
else
    fail "fake net6" "did not start"
fi

# 4. watch --perfmap: every matching runtime once, and a new instance again. The selector is the
#    command line of these targets alone (other tests' runtimes may run on this machine).
SEL='ClrTarget.dll --seconds 117'
if start_target perfmap-w1 --pidns --uid 1000 --seconds 117 && W1=$TARGET_PID &&
    start_target perfmap-w2 --pidns --uid 1000 --seconds 117 && W2=$TARGET_PID; then
    "$CLRATTACH" watch --perfmap --match-cmdline "$SEL" --interval 100 -o json \
        >"$WORK/watch.out" 2>"$WORK/watch.err" &
    WATCHER=$!
    TARGET_PIDS+=("$WATCHER")
    enabled() { grep -c '"outcome":"perfmap_enabled"' "$WORK/watch.out"; }
    for _ in $(seq 1 100); do
        [ "$(enabled)" -ge 2 ] && break
        sleep 0.1
    done
    [ "$(enabled)" = 2 ] && [ "$(map_size "$W1")" -gt 0 ] && [ "$(map_size "$W2")" -gt 0 ] &&
        ok "watch --perfmap: both runtimes write their map" ||
        fail "watch two" "$(enabled) enabled; $(cat "$WORK/watch.err")"
    kill -KILL "$W1"
    if start_target perfmap-w3 --pidns --uid 1000 --seconds 117; then
        W3=$TARGET_PID
        for _ in $(seq 1 100); do
            [ "$(enabled)" -ge 3 ] && break
            sleep 0.1
        done
        sleep 1 # a second scan must not enable anything twice
        [ "$(enabled)" = 3 ] && [ "$(map_size "$W3")" -gt 0 ] &&
            ok "watch --perfmap: a restarted app's new runtime gets its map, once" ||
            fail "watch restart" "$(enabled) enabled; $(cat "$WORK/watch.err")"
    fi
    kill -TERM "$WATCHER"
    wait "$WATCHER" 2>/dev/null
fi
clr watch --perfmap --profiler "$PROBE" --clsid "$PROBE_CLSID"
[ $RC -eq 2 ] && ok "usage: watch --perfmap takes no profiler" || fail "watch usage" "exit $RC"

# 5. Usage: an action is needed, --kind is for enable, no such process.
clr perfmap --pid 1
[ $RC -eq 2 ] && ok "usage: no action" || fail "usage no action" "exit $RC"
clr perfmap disable --pid 1 --kind all
[ $RC -eq 2 ] && ok "usage: --kind with disable" || fail "usage --kind disable" "exit $RC"
clr perfmap enable --pid 1 --kind elf
[ $RC -eq 2 ] && ok "usage: unknown --kind" || fail "usage --kind" "exit $RC"
if start_not_dotnet 30; then
    clr perfmap enable --pid "$NOTNET" -o json
    [ $RC -eq 4 ] && [ "$(json_get "$OUT" outcome)" = not_dotnet ] &&
        ok "not .NET: not_dotnet (exit 4)" || fail "not dotnet" "exit $RC: $(cat "$OUT" "$ERR")"
fi

finish test_perfmap.sh
