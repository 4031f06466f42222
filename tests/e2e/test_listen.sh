#!/usr/bin/env bash
# The listening sidecar (issue 28): clrattach listens on a Unix socket in a directory it shares
# with the app, and the app's runtime, started with DOTNET_DiagnosticPorts=<that socket>,
# connects to it. The app runs in its own mount and PID namespaces as another uid (1000) and
# shares nothing with clrattach but that directory (bind-mounted at /mnt in its namespace):
#   (a) attach --listen: a startup load with --env, proven by the vendor-shaped test profiler's
#       own report of the settings it read; the app is resumed and runs; the result names the
#       pid the runtime advertised (1, in its namespace) and the pid clrattach's side sees, and
#       with clrattach in a PID namespace of its own (a sidecar's view) no node-side pid at all;
#   (b) the app is resumed when a step fails: a variable over the cap once {dir} is expanded, a
#       delivery into a read-only directory (real runtime); the fake runtime refusing
#       SetEnvironmentVariable, refusing StartupProfiler (the next step for its answer kept),
#       never answering StartupProfiler, refusing ProcessInfo (protocol_error: nothing was sent
#       to load), never answering ResumeRuntime once StartupProfiler took the path (what was
#       delivered is kept, and why said), and SIGTERM while StartupProfiler goes unanswered;
#   (c) watch --listen: an app restarted (a new runtime instance, a new cookie) is served again,
#       one result per instance;
#   (d) a runtime whose port is "nosuspend" gets a plain attach (the sample profiler);
#   (e) hostile peers against one watcher: silence, garbage, a zero cookie, a slow
#       advertisement, 1,000 connections, and the socket's name replaced by a link: the watcher
#       stays up, its fds stay bounded, a good runtime is still served, SIGTERM ends it at once;
#   (f) the socket path: a file of the app's, or a live socket, is never replaced;
#   (g) a socket path longer than sun_path allows is a usage error, before anything is bound.
. "$(dirname "$0")/lib.sh"
require_env

VI="$ROOT/$BUILD/vendorinert"
VI_CLSID="{918728DD-259F-4A6A-AC2B-B85E1B658318}"
[ -e "$VI/OpenTelemetry.AutoInstrumentation.Native.so" ] ||
    { echo "FAIL listen-prerequisites: $VI missing (make vendorprof)"; exit 1; }

# The socket's path may have at most 107 bytes: in a short directory, not under $WORK.
make_sock_dir
SHARE="$SOCK_DIR/share"
mkdir -p "$SHARE"
chmod 0755 "$SHARE"
SOCK="$SHARE/port.sock"
require_sock_path listen "$SOCK" "the listening socket"
# The app's side: its own namespaces, uid 1000, the shared directory at /mnt.
APP=(--pidns --uid 1000 --pre "mount --bind '$SHARE' /mnt")
LISTEN=(--listen "$SOCK" --deliver-dir "$SHARE" --app-dir /mnt --socket-owner 1000:1000
    --events off)

# listen_bg NAME ARGS...: clrattach in the background (under the command in LWRAP, if any),
# stdout/stderr to $LOUT/$LERR, pid in $LPID; returns once the socket is there.
LWRAP=()
listen_bg() {
    LOUT="$WORK/listen.$1.out"
    LERR="$WORK/listen.$1.err"
    shift
    rm -f "$SOCK"
    "${LWRAP[@]}" "$CLRATTACH" "$@" >"$LOUT" 2>"$LERR" &
    LPID=$!
    local i
    for i in $(seq 100); do [ -S "$SOCK" ] && return 0; sleep 0.05; done
    echo "listen_bg: no socket: $(cat "$LERR")" >&2
    return 1
}

# wait_exit PID SECONDS: waits for it to end; its status in $WRC (124 when it had to be killed).
wait_exit() {
    local i
    for i in $(seq $(($2 * 20))); do
        kill -0 "$1" 2>/dev/null || { wait "$1"; WRC=$?; return 0; }
        sleep 0.05
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    WRC=124
    return 1
}

# end_apps: the apps started so far end, so that none reconnects to the next test's listener
# (a runtime keeps reconnecting to its port for as long as it lives).
end_apps() {
    local p
    for p in "${TARGET_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.2
}

# runs_on NAME: the app printed "ready": it was resumed and its Main ran.
runs_on() {
    if grep -q '^ready' "$TARGET_LOG"; then ok "$1-app-runs-on"; else fail "$1-app-runs-on" "$(cat "$TARGET_LOG")"; fi
}

# (a) Startup load with --env, served by a one-shot attach --listen.
listen_bg a attach "${LISTEN[@]}" --profiler "$VI" --clsid "$VI_CLSID" -o json \
    --env VENDOR_SETTING_A=1 --env 'VENDOR_SETTING_B={dir}'
if start_target listen-a "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    P=$TARGET_PID
    wait_exit "$LPID" 30
    REP=""
    for _ in $(seq 100); do
        REP=$(cat "/proc/$P/root/tmp/vendorprof-1.json" 2>/dev/null) && [ -n "$REP" ] && break
        sleep 0.1
    done
    DIR=$(json_get "$LOUT" delivered_dir)
    if [ "$WRC" -eq 0 ] && [ "$(json_get "$LOUT" outcome)" = loaded_at_startup ] &&
        [ "$(json_get "$LOUT" resumed)" = True ] && [ "${DIR#/mnt/}" != "$DIR" ] &&
        python3 - "$REP" "$DIR" "$LOUT" <<'PY'; then
import json, sys
rep, d, out = json.loads(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
assert rep["settings"] == {"VENDOR_SETTING_A": "1", "VENDOR_SETTING_B": d}, rep["settings"]
# Through the env loader (what StartupProfiler named), getenv() sees the same values, and
# OpenTelemetry's startup settings name the real profiler as the app sees it.
assert rep["settings_libc"] == rep["settings"], rep
assert out["env_loader"] == d + "/libclrenvload.so", out
assert rep["self"] == out["delivered_path"] == d + "/OpenTelemetry.AutoInstrumentation.Native.so"
assert rep["vendor_settings_libc"]["CORECLR_PROFILER_PATH"] == out["delivered_path"], rep
assert rep["vendor_settings"] == rep["vendor_settings_libc"], rep
# The app's maps are never read from here: no "mapped" at all.
assert "mapped" not in out, out
PY
        ok "listen-startup-env-loaded"
    else
        fail "listen-startup-env-loaded" "exit $WRC $(cat "$LOUT" "$LERR") report: $REP"
    fi
    # The dependency check of what can be known: libvendorhelper.so through RUNPATH $ORIGIN in
    # the delivered directory, libc as the runtime's own.
    if grep -q '"dependency_check":"checked against the delivered files' "$LOUT"; then
        ok "listen-dependency-check-known"
    else
        fail "listen-dependency-check-known" "$(cat "$LOUT")"
    fi
    # The profiler is mapped from the shared directory, as the app sees it.
    if grep -qF "$DIR/" "/proc/$P/maps"; then ok "listen-startup-mapped"; else fail "listen-startup-mapped" "$DIR not in maps"; fi
    # Ours (root's), read-only for all, in the shared directory: the app (uid 1000) maps it
    # and can neither rewrite nor remove it. The socket is removed on exit.
    F=$(find "$SHARE" -name 'OpenTelemetry.AutoInstrumentation.Native.so' | head -1)
    if [ -n "$F" ] && [ "$(stat -c %u:%a "$F")" = 0:555 ] && [ ! -e "$SOCK" ]; then
        ok "listen-delivery-owner-and-cleanup"
    else
        fail "listen-delivery-owner-and-cleanup" "file '$F' owner $(stat -c %u "$F" 2>/dev/null); socket left: $(ls -la "$SHARE")"
    fi
    runs_on listen-a
    # ns_pid is what the runtime advertised (pid 1 in its namespace); pid is its SO_PEERCRED pid,
    # clrattach's view from the parent PID namespace.
    if [ "$(json_get "$LOUT" ns_pid)" = 1 ] && [ "$(json_get "$LOUT" pid)" = "$P" ] &&
        [ "$(json_get "$LOUT" listen)" = True ] && [ "$(json_get "$LOUT" uid)" = 1000 ]; then
        ok "listen-pids-advertised-and-seen"
    else
        fail "listen-pids-advertised-and-seen" "app pid $P: $(cat "$LOUT")"
    fi
fi
end_apps

# (a2) clrattach in a PID namespace of its own, as a sidecar that shares only the volume: the
# runtime has no pid in its view (SO_PEERCRED gives 0). The text result, the JSON and the Event
# give the advertised pid and no node-side one, never "pid 0".
LWRAP=(unshare --pid --fork --mount-proc)
listen_bg a2 attach --listen "$SOCK" --deliver-dir "$SHARE" --app-dir /mnt \
    --socket-owner 1000:1000 --profiler "$VI" --clsid "$VI_CLSID" --env VENDOR_SETTING_A=1 \
    --dry-run-events --events auto --pod app-0 --namespace default
if start_target listen-a2 "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    wait_exit "$LPID" 30
    if [ "$WRC" -eq 0 ] &&
        grep -qxF "loaded at startup: namespace pid 1 (advertised by the runtime, uid 1000)" "$LOUT" &&
        grep -qF '.NET pid 1 (the pid the runtime advertised, uid 1000, .NET ' "$LOUT" &&
        ! grep -qE 'pid 0|node-side' "$LOUT"; then
        ok "listen-no-node-pid-text-and-event"
    else
        fail "listen-no-node-pid-text-and-event" "exit $WRC $(cat "$LOUT" "$LERR")"
    fi
    runs_on listen-a2
else
    fail "listen-no-node-pid-text-and-event" "the app did not start: $(cat "$LERR")"
fi
end_apps
listen_bg a3 attach "${LISTEN[@]}" --profiler "$VI" --clsid "$VI_CLSID" -o json
if start_target listen-a3 "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    wait_exit "$LPID" 30
    if [ "$WRC" -eq 0 ] && [ "$(json_get "$LOUT" outcome)" = loaded_at_startup ] &&
        [ "$(json_get "$LOUT" ns_pid)" = 1 ] && python3 - "$LOUT" <<'PY'; then
import json, sys
d = json.loads(open(sys.argv[1]).readline())
assert "pid" not in d, d
PY
        ok "listen-no-node-pid-json"
    else
        fail "listen-no-node-pid-json" "exit $WRC $(cat "$LOUT" "$LERR")"
    fi
    runs_on listen-a3
else
    fail "listen-no-node-pid-json" "the app did not start: $(cat "$LERR")"
fi
end_apps
LWRAP=()

# (b) Resumed when a step fails. A variable over the cap once {dir} is expanded: the real
# runtime is resumed without the profiler.
LONG=$(head -c 4060 /dev/zero | tr '\0' x)
listen_bg b attach "${LISTEN[@]}" --profiler "$VI" --clsid "$VI_CLSID" -o json \
    --env "VENDOR_SETTING_A=$LONG{dir}"
if start_target listen-b "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    wait_exit "$LPID" 30
    if [ "$WRC" -ne 0 ] && [ "$(json_get "$LOUT" resumed)" = True ]; then
        ok "listen-env-too-long-resumed"
    else
        fail "listen-env-too-long-resumed" "exit $WRC $(cat "$LOUT" "$LERR")"
    fi
    runs_on listen-b
fi
end_apps
# A delivery that fails (the deliver directory is read-only): resumed without the profiler.
RO="$WORK/ro"
mkdir -p "$RO"
mount --bind "$RO" "$RO" && mount -o remount,bind,ro "$RO"
listen_bg bro attach --listen "$SOCK" --deliver-dir "$RO" --app-dir /mnt --socket-owner 1000:1000 \
    --events off --profiler "$VI" --clsid "$VI_CLSID" -o json
if start_target listen-bro "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock; then
    wait_exit "$LPID" 30
    if [ "$WRC" -eq 6 ] && [ "$(json_get "$LOUT" outcome)" = delivery_failed ] &&
        [ "$(json_get "$LOUT" resumed)" = True ]; then
        ok "listen-delivery-failed-resumed"
    else
        fail "listen-delivery-failed-resumed" "exit $WRC $(cat "$LOUT" "$LERR")"
    fi
    runs_on listen-bro
fi
umount "$RO"
end_apps
# The fake runtime refusing or stalling a step: ResumeRuntime still comes, within
# --resume-deadline when the step never answers.
for how in "--refuse setenv" "--refuse startup" "--stall startup"; do
    name=${how// /}
    listen_bg "$name" attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --env A=1 --resume-deadline 2 -o json
    python3 "$FAKE" connect-good "$SOCK" $how >/dev/null 2>"$WORK/fake.$name.log" &
    FP=$!
    TARGET_PIDS+=("$FP")
    wait_exit "$LPID" 20
    for _ in $(seq 40); do grep -q '^resumed' "$WORK/fake.$name.log" && break; sleep 0.05; done
    if [ "$WRC" -ne 0 ] && [ "$WRC" -ne 124 ] && grep -q '^resumed' "$WORK/fake.$name.log" &&
        [ "$(json_get "$LOUT" resumed)" = True ]; then
        ok "listen-fake$name-resumed"
    else
        fail "listen-fake$name-resumed" "exit $WRC $(cat "$LOUT" "$LERR" "$WORK/fake.$name.log")"
    fi
    # A refused step keeps the runtime's next step for its answer (E_FAIL: check --clsid), and
    # the resume's state follows it.
    if [ "$how" = "--refuse startup" ]; then
        NS=$(json_get "$LOUT" next_step)
        case "$NS" in
        "Check \`--clsid\`"*"; the runtime was resumed") ok "listen-refused-next-step-kept" ;;
        *) fail "listen-refused-next-step-kept" "next_step: '$NS'" ;;
        esac
    fi
    kill -KILL "$FP" 2>/dev/null
done

# ProcessInfo refused: no profiler was delivered or sent, so not load_failed (7) but
# protocol_error (9), naming ProcessInfo; the runtime is resumed all the same.
listen_bg refinfo attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
python3 "$FAKE" connect-good "$SOCK" --refuse processinfo >/dev/null 2>"$WORK/fake.refinfo.log" &
FP=$!
TARGET_PIDS+=("$FP")
wait_exit "$LPID" 20
if [ "$WRC" -eq 9 ] && [ "$(json_get "$LOUT" outcome)" = protocol_error ] &&
    [ "$(json_get "$LOUT" resumed)" = True ] && [ -z "$(json_get "$LOUT" delivered_path)" ] &&
    json_get "$LOUT" error | grep -q 'refused ProcessInfo.*no profiler was sent' &&
    ! grep -q 'request 03/' "$WORK/fake.refinfo.log"; then
    ok "listen-processinfo-refused-protocol"
else
    fail "listen-processinfo-refused-protocol" "exit $WRC $(cat "$LOUT" "$LERR" "$WORK/fake.refinfo.log")"
fi
kill -KILL "$FP" 2>/dev/null

# ResumeRuntime never answered once StartupProfiler took the path: the runtime may still resume
# and load it, so what was delivered stays (a fresh directory: nothing reused), and the result
# says why and that the resume got no answer.
rm -rf "${SHARE:?}"/*
listen_bg stallresume attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json \
    --timeout 2
python3 "$FAKE" connect-good "$SOCK" --stall resume >/dev/null 2>"$WORK/fake.stallresume.log" &
FP=$!
TARGET_PIDS+=("$FP")
wait_exit "$LPID" 20
DP=$(json_get "$LOUT" delivered_path)
if [ "$WRC" -eq 9 ] && [ "$(json_get "$LOUT" outcome)" = protocol_error ] &&
    [ "$(json_get "$LOUT" resumed)" = False ] && [ "$(json_get "$LOUT" removed)" != True ] &&
    [ "$(json_get "$LOUT" reused)" != True ] && [ -n "$DP" ] && [ -f "$SHARE/${DP#/mnt/}" ] &&
    json_get "$LOUT" error | grep -q '^ResumeRuntime.*; what was delivered is kept: the runtime took StartupProfiler' &&
    json_get "$LOUT" next_step | grep -q 'ResumeRuntime got no answer'; then
    ok "listen-resume-unanswered-delivery-kept"
else
    fail "listen-resume-unanswered-delivery-kept" "exit $WRC '$DP' $(ls "$SHARE") $(cat "$LOUT" "$LERR" "$WORK/fake.stallresume.log")"
fi
kill -KILL "$FP" 2>/dev/null

# SIGTERM while StartupProfiler goes unanswered: the resume still goes out before clrattach
# leaves.
listen_bg term attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
python3 "$FAKE" connect-good "$SOCK" --stall startup >/dev/null 2>"$WORK/fake.term.log" &
FP=$!
TARGET_PIDS+=("$FP")
for _ in $(seq 100); do grep -q 'startup' "$WORK/fake.term.log" && break; sleep 0.05; done
kill -TERM "$LPID"
wait_exit "$LPID" 6
if [ "$WRC" -eq 11 ] && grep -q '^resumed' "$WORK/fake.term.log" &&
    [ "$(json_get "$LOUT" outcome)" = interrupted ]; then
    ok "listen-sigterm-resumes"
else
    fail "listen-sigterm-resumes" "exit $WRC $(cat "$LOUT" "$LERR" "$WORK/fake.term.log")"
fi
kill -KILL "$FP" 2>/dev/null

# What cannot be known is said, not refused: the vendor library alone, without the helper its
# RUNPATH $ORIGIN/lib names, is delivered and loaded, and the result names the library it could
# not check.
cp "$VI/OpenTelemetry.AutoInstrumentation.Native.so" "$WORK/lone.so"
listen_bg lone attach "${LISTEN[@]}" --profiler "$WORK/lone.so" --clsid "$VI_CLSID" -o json
python3 "$FAKE" connect-good "$SOCK" >/dev/null 2>"$WORK/fake.lone.log" &
FP=$!
TARGET_PIDS+=("$FP")
wait_exit "$LPID" 10
if [ "$WRC" -eq 0 ] && grep -q '"dependency_check":"not checked: libvendorhelper.so (needed by lone.so)' "$LOUT"; then
    ok "listen-dependency-unknown-said"
else
    fail "listen-dependency-unknown-said" "exit $WRC $(cat "$LOUT" "$LERR")"
fi
kill -KILL "$FP" 2>/dev/null

# (c) watch --listen: two instances of the app, one after the other: each served once.
listen_bg c watch "${LISTEN[@]}" --profiler "$VI" --clsid "$VI_CLSID" -o json --env VENDOR_SETTING_A=1 \
    --ready-file "$WORK/ready"
WPID=$LPID
for _ in $(seq 40); do [ -s "$WORK/ready" ] && break; sleep 0.05; done
if [ "$(cat "$WORK/ready" 2>/dev/null)" = ready ]; then ok "listen-watch-ready-file"; else fail "listen-watch-ready-file" "$(cat "$LERR")"; fi
start_target listen-c1 "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock --seconds 2 &&
    P1=$TARGET_PID
for _ in $(seq 100); do kill -0 "${P1:-0}" 2>/dev/null || break; sleep 0.1; done
start_target listen-c2 "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock && P2=$TARGET_PID
for _ in $(seq 100); do [ "$(grep -c loaded_at_startup "$LOUT")" -ge 2 ] && break; sleep 0.1; done
N=$(grep -c '"outcome":"loaded_at_startup"' "$LOUT")
if [ "$N" -eq 2 ] && kill -0 "$WPID" 2>/dev/null; then
    ok "listen-watch-restart-served-again"
else
    fail "listen-watch-restart-served-again" "$N results: $(cat "$LOUT" "$LERR")"
fi
runs_on listen-c2
kill -TERM "$WPID"
if wait_exit "$WPID" 5 && [ "$WRC" -eq 0 ]; then ok "listen-watch-sigterm"; else fail "listen-watch-sigterm" "exit $WRC"; fi
end_apps

# (c') A runtime the selectors do not match: resumed without a profiler, and said once on stderr
# (a selector that never matches must not look like a sidecar that does nothing).
listen_bg cn watch "${LISTEN[@]}" --profiler "$VI" --clsid "$VI_CLSID" -o json \
    --match-entry NoSuchApp
WPID=$LPID
start_target listen-cn "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock
for _ in $(seq 100); do grep -q '^ready' "$TARGET_LOG" && break; sleep 0.1; done
runs_on listen-cn
sleep 1
if [ "$(grep -c 'does not match the selectors' "$LERR")" = 1 ] && grep -q 'entry assembly ClrTarget' "$LERR" &&
    [ ! -s "$LOUT" ]; then
    ok "listen-not-selected-said-once"
else
    fail "listen-not-selected-said-once" "$(cat "$LOUT" "$LERR")"
fi
kill -TERM "$WPID"
wait_exit "$WPID" 5
end_apps

# (d) A runtime that does not pause: the sample profiler (it supports attach) is attached.
listen_bg d attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
if start_target listen-d "${APP[@]}" --env DOTNET_DiagnosticPorts=/mnt/port.sock,nosuspend; then
    P=$TARGET_PID
    wait_exit "$LPID" 30
    PATH_IN=$(json_get "$LOUT" delivered_path)
    if [ "$WRC" -eq 0 ] && [ "$(json_get "$LOUT" outcome)" = attached ] &&
        [ "$(json_get "$LOUT" resumed)" != True ] && grep -qF "$PATH_IN" "/proc/$P/maps"; then
        ok "listen-nosuspend-attached"
    else
        fail "listen-nosuspend-attached" "exit $WRC $(cat "$LOUT" "$LERR")"
    fi
fi
end_apps

# (e) Hostile peers against one watcher.
listen_bg e watch "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
WPID=$LPID
FAKES=()
for mode in connect-none connect-bad "connect-bad --zero-cookie" connect-slow; do
    # shellcheck disable=SC2086
    python3 "$FAKE" $mode "$SOCK" >/dev/null 2>>"$WORK/hostile.log" &
    FAKES+=($!)
done
python3 "$FAKE" connect-flood "$SOCK" --count 1000 >"$WORK/flood.out" 2>&1 &
FAKES+=($!)
TARGET_PIDS+=("${FAKES[@]}")
for _ in $(seq 600); do grep -q '^flood' "$WORK/flood.out" && break; sleep 0.1; done
MAXFD=0
for _ in $(seq 20); do
    n=$(ls "/proc/$WPID/fd" 2>/dev/null | wc -l)
    [ "$n" -gt "$MAXFD" ] && MAXFD=$n
    sleep 0.1
done
if grep -q '^flood 1000' "$WORK/flood.out" && kill -0 "$WPID" && [ "$MAXFD" -lt 150 ]; then
    ok "listen-hostile-bounded"
else
    fail "listen-hostile-bounded" "$(cat "$WORK/flood.out") fds $MAXFD $(tail -3 "$LERR")"
fi
# A good runtime among them is served, at once, while another one stalls on StartupProfiler:
# replies are read without blocking, so a stalled runtime delays only itself.
python3 "$FAKE" connect-good "$SOCK" --stall startup >/dev/null 2>"$WORK/fake.stall.log" &
TARGET_PIDS+=($!)
for _ in $(seq 100); do grep -q 'startup' "$WORK/fake.stall.log" && break; sleep 0.05; done
T0=$(date +%s%N)
python3 "$FAKE" connect-good "$SOCK" >/dev/null 2>"$WORK/fake.good.log" &
TARGET_PIDS+=($!)
for _ in $(seq 100); do grep -q '^resumed' "$WORK/fake.good.log" && break; sleep 0.05; done
MS=$((($(date +%s%N) - T0) / 1000000))
if grep -q '^resumed' "$WORK/fake.good.log" && grep -q '"outcome":"loaded_at_startup"' "$LOUT" &&
    [ "$MS" -lt 3000 ] && ! grep -q '^resumed' "$WORK/fake.stall.log"; then
    ok "listen-hostile-good-still-served"
else
    fail "listen-hostile-good-still-served" "${MS}ms $(cat "$WORK/fake.good.log") $(tail -5 "$LERR")"
fi
# The name replaced by a link: warned about, never followed or removed; the watcher stays up.
mv "$SOCK" "$SOCK.moved"
ln -s /etc/passwd "$SOCK"
for _ in $(seq 40); do grep -q 'replaced' "$LERR" && break; sleep 0.1; done
if grep -q 'replaced' "$LERR" && kill -0 "$WPID" && [ -L "$SOCK" ]; then
    ok "listen-socket-replaced-warned"
else
    fail "listen-socket-replaced-warned" "$(tail -5 "$LERR")"
fi
kill -TERM "$WPID"
if wait_exit "$WPID" 5 && [ -L "$SOCK" ] && [ -e /etc/passwd ]; then
    ok "listen-hostile-sigterm"
else
    fail "listen-hostile-sigterm" "exit $WRC"
fi
kill -KILL "${FAKES[@]}" 2>/dev/null
rm -f "$SOCK" "$SOCK.moved"

# (f) The path: an app's file, or a live listener, is never replaced.
echo app >"$SOCK"
chown 1000 "$SOCK"
clr attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID"
if [ "$RC" -eq 2 ] && [ "$(cat "$SOCK")" = app ] && grep -q 'left alone' "$ERR"; then
    ok "listen-refuses-foreign-file"
else
    fail "listen-refuses-foreign-file" "exit $RC $(cat "$ERR")"
fi
rm -f "$SOCK"
listen_bg f1 watch "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID"
clr attach "${LISTEN[@]}" --profiler "$PROBE" --clsid "$PROBE_CLSID"
if [ "$RC" -eq 2 ] && grep -q 'live socket' "$ERR" && kill -0 "$LPID"; then
    ok "listen-refuses-live-socket"
else
    fail "listen-refuses-live-socket" "exit $RC $(cat "$ERR")"
fi
kill -TERM "$LPID"
wait_exit "$LPID" 5

# (g) A socket path no runtime could connect to (over sun_path's 107 bytes), as clrattach sees
# it or as the app does (--app-dir), is a usage error naming its length and the limit; nothing
# is bound, although the directory is there and clrattach could bind by its fd.
LONG="$SHARE/$(printf 'd%.0s' $(seq 100))"
mkdir -p "$LONG"
clr attach --listen "$LONG/port.sock" --deliver-dir "$LONG" --events off \
    --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
n=${#LONG}
if [ "$RC" -eq 2 ] && [ ! -e "$LONG/port.sock" ] &&
    grep -q "is $((n + 10)) bytes, over the 107 a Unix socket's path may have" "$ERR" &&
    grep -q 'next step: mount the directory shared with the app at a shorter path' "$ERR" &&
    [ "$(json_get "$OUT" outcome)" = usage_error ]; then
    ok "listen-path-too-long-refused"
else
    fail "listen-path-too-long-refused" "exit $RC $(cat "$ERR" "$OUT")"
fi
clr watch --listen "$SOCK" --deliver-dir "$SHARE" --app-dir "/$(printf 'm%.0s' $(seq 100))" \
    --events off --profiler "$PROBE" --clsid "$PROBE_CLSID"
if [ "$RC" -eq 2 ] && [ ! -e "$SOCK" ] && grep -q "under --app-dir.* is 111 bytes, over the 107" "$ERR"; then
    ok "listen-app-path-too-long-refused"
else
    fail "listen-app-path-too-long-refused" "exit $RC $(cat "$ERR")"
fi

finish test_listen
