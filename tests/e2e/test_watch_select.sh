#!/usr/bin/env bash
# Watch selectors that pick a container: --match-cgroup (a substring of /proc/<pid>/cgroup, as
# a container ID is) and --other-containers (skip every process in clrattach's own mount
# namespace). Real runtimes, seccomp on (kill); each selector is shown to take one matching
# target and leave an otherwise identical one alone.
. "$(dirname "$0")/lib.sh"
require_env

# A cgroup to stand for the app container's: cgroup v2 at the root or in the hybrid layout's
# "unified" mount, else the v1 pids hierarchy.
CG=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
    [ -e "$d/cgroup.procs" ] && { CG="$d/clrattach-e2e-$$"; break; }
done
if [ -z "$CG" ] || ! mkdir "$CG"; then
    echo "FAIL watch-select-prerequisites: no writable cgroup hierarchy under /sys/fs/cgroup"
    exit 1
fi
cleanup_cg() { rmdir "$CG" 2>/dev/null; cleanup_targets; }
trap cleanup_cg EXIT
CGNAME=$(basename "$CG")

# watch_start NAME ARGS...: a watcher with the common options; its pid in W, output in $WORK/NAME.*
watch_start() {
    local name=$1
    shift
    "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --events off -o json \
        --client-data out=/tmp/probe-sel.json --ready-file "$WORK/$name.ready" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    W=$!
    disown "$W"
    TARGET_PIDS+=("$W")
    for _ in $(seq 50); do [ -e "$WORK/$name.ready" ] && break; sleep 0.1; done
}
attached() { grep "\"pid\":$2," "$WORK/$1.out" | grep -c '"outcome":"attached"'; }
wait_attached() {
    for _ in $(seq 100); do [ "$(attached "$1" "$2")" -ge 1 ] && return 0; sleep 0.1; done
    return 1
}

# --match-cgroup: the target whose shell moved itself into the cgroup before exec'ing the app.
watch_start cg --match-cmdline "ClrTarget.dll --seconds 131" --match-cgroup "$CGNAME"
WCG=$W
start_target cg-in --pidns --uid 1000 --seconds 131 --pre "echo 0 > '$CG/cgroup.procs'" && IN=$TARGET_PID
start_target cg-out --pidns --uid 1000 --seconds 131 && OUTSIDE=$TARGET_PID
if grep -q "$CGNAME" "/proc/$IN/cgroup" && wait_attached cg "$IN" &&
    probe_report "$IN" /tmp/probe-sel.json >/dev/null; then
    ok "watch-match-cgroup-attaches"
else
    fail "watch-match-cgroup-attaches" "$(cat "/proc/$IN/cgroup" "$WORK/cg.out" "$WORK/cg.err")"
fi
sleep 1 # several scans
if [ "$(attached cg "$OUTSIDE")" = 0 ] && ! ls "/proc/$OUTSIDE/root/tmp" | grep -q clrprobe; then
    ok "watch-match-cgroup-skips-others"
else
    fail "watch-match-cgroup-skips-others" "$(cat "$WORK/cg.out")"
fi
kill -TERM "$WCG"

# --other-containers: an app in our own mount namespace (the helper's "container") is left alone;
# the same app in a mount namespace of its own is attached.
watch_start mnt --match-cmdline "ClrTarget.dll --seconds 137" --other-containers
WM=$W
env -i PATH=/usr/bin:/bin HOME=/tmp DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 \
    dotnet "$TARGET_DLL" --seconds 137 >"$WORK/own-ns.log" 2>&1 &
OWN=$!
disown "$OWN"
TARGET_PIDS+=("$OWN")
start_target own-mntns --pidns --seconds 137 && THEIRS=$TARGET_PID
for _ in $(seq 100); do grep -q '^ready' "$WORK/own-ns.log" && break; sleep 0.1; done
if wait_attached mnt "$THEIRS" && probe_report "$THEIRS" /tmp/probe-sel.json >/dev/null; then
    ok "watch-other-containers-attaches"
else
    fail "watch-other-containers-attaches" "$(cat "$WORK/mnt.out" "$WORK/mnt.err")"
fi
sleep 1
if grep -q '^ready' "$WORK/own-ns.log" && [ "$(attached mnt "$OWN")" = 0 ] &&
    ! grep -q "libclrprobe" "/proc/$OWN/maps"; then
    ok "watch-other-containers-skips-own"
else
    fail "watch-other-containers-skips-own" "$(cat "$WORK/mnt.out" "$WORK/own-ns.log")"
fi
kill -TERM "$WM"

# The watcher's own children (the index's filesystem helper, the attach jobs) have its command
# line, which --match-cmdline matches here, and its TMPDIR: a stale socket named for the helper's
# pid there (as a former process with that pid leaves one) must not make the helper a target.
watch_start self --match-cmdline "ClrTarget.dll --seconds 139"
WS=$W
HELPER=$(tr -d ' ' <"/proc/$WS/task/$WS/children" 2>/dev/null | head -1)
STALE="${TMPDIR:-/tmp}/dotnet-diagnostic-$HELPER-1-socket"
if [ -n "$HELPER" ] && python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$STALE"; then
    start_target self-good --pidns --seconds 139 && GOOD=$TARGET_PID
    wait_attached self "$GOOD"
    sleep 1 # several scans
    if [ "$(attached self "$GOOD")" = 1 ] && ! grep -q "\"pid\":$HELPER," "$WORK/self.out" &&
        ! grep -q "pid $HELPER " "$WORK/self.err"; then
        ok "watch-own-children-never-targets (the helper, pid $HELPER, beside a stale socket named for it)"
    else
        fail "watch-own-children-never-targets" "$(cat "$WORK/self.out" "$WORK/self.err")"
    fi
else
    fail "watch-own-children-never-targets" "no helper child of the watcher, or no stale socket made"
fi
rm -f "$STALE"
kill -TERM "$WS"

# A usage error names the option.
"$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --match-cgroup "" >/dev/null 2>"$WORK/u.err"
[ $? -eq 2 ] && grep -q -- "--match-cgroup" "$WORK/u.err" && ok "watch-match-cgroup-empty-refused" ||
    fail "watch-match-cgroup-empty-refused" "$(cat "$WORK/u.err")"

finish e2e-watch-select
