#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container suite: the project's Dockerfile, the deploy/ manifests and the exported seccomp
# profile under a real engine (Debian's docker.io: dockerd, containerd, runc; crun as a second
# runtime). A private dockerd (socket, data and exec roots under $BUILD/containers), images made
# locally (debootstrap, the SDK's own runtime, `docker build` of the Dockerfile as it is), no
# registry, containers on --network none or host only. Shapes: the sidecar (runc and crun, under
# deploy/seccomp/clrattach.json, Event to the TLS test API server), the listening sidecar (runc
# and crun, sharing only a volume with the app: deploy/components/listen), `kubectl debug --target`
# (restricted and general), the node (--pid host), a noexec /tmp, the image itself.
# Docker flags of the app and the sidecar come from `kubectl kustomize deploy/...` (flags.py).
# Prints "ok NAME" / "FAIL NAME: reason" and "containers: N passed, M failed".
# An engine that cannot start is a FAIL (CI or not); CLRATTACH_SKIP_SUITES=containers skips the
# suite (tests/suite.sh).
# CT_ONLY="listen sidecar" runs only those shapes (sidecar, debug, noexec, listen, image; the
# images are always made): for working on one. CT_KEEP_IMAGE=1 takes the clrattach image as it
# is when there is one (it may be older than the checkout: for work on the suite itself).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/suite.sh
. "$here/../suite.sh"
suite_skipped containers && exit 0
# shellcheck source=tests/containers/lib.sh
. "$here/lib.sh"
cd "$ROOT" || exit 2

T0=$SECONDS
RUN=ct$$
IMG=clrattach-test/clrattach
APP=clrattach-test/app
PROBE_CLSID=$(sed -n 's/^#define CLRPROBE_CLSID[[:space:]]*"\(.*\)"/\1/p' profiler/clrprobe.h)
PROBE=/profilers/linux-x64/libclrprobe.so
POD=orders-api-0
REPORT=/tmp/clrprobe-report.json
work=$(mktemp -d "$CT/run.XXXXXX")
chmod 755 "$work"
srv_pid=
created=()

cleanup() {
    local c
    for c in "${created[@]}"; do dk rm -f "$c" >/dev/null 2>&1; done
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
    stop_dockerd
    [ -n "${KEEP_WORK:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# want SHAPE: CT_ONLY is unset or names it.
want() { [ -z "${CT_ONLY:-}" ] || [[ " $CT_ONLY " == *" $1 "* ]]; }

finish() {
    echo "containers: $PASSED passed, $FAILED failed ($((SECONDS - T0))s)"
    [ "$FAILED" -eq 0 ]
    exit
}

# Prerequisites: what is missing fails the suite (CLRATTACH_SKIP_SUITES=containers skips it).
prereq_fail() {
    suite_cannot_run containers "$1"
    FAILED=$((FAILED + 1))
    finish
}
# The listening sidecar's socket as deploy/components/listen names it, where the app connects.
listen_path=$(sed -n 's/^ *- --listen=\(.*\)$/\1/p' deploy/components/listen/listen-patch.yaml)
[ -n "$listen_path" ] || prereq_fail "no --listen= in deploy/components/listen/listen-patch.yaml"
sock_path_fits "$listen_path" "the listening sidecar's socket" >"$work/path.msg" ||
    prereq_fail "$(cat "$work/path.msg")"
[ -x "$DOCKERD_BIN" ] && [ -x "$DOCKER_BIN" ] ||
    prereq_fail "Debian's docker.io is not installed (scripts/install-deps.sh)"
[ "$(id -u)" -eq 0 ] || prereq_fail "needs root to run dockerd"
# The docker flags come from `kubectl kustomize` (kubectl 1.14+ has kustomize built in).
command -v kubectl >/dev/null || prereq_fail "kubectl (with kustomize) is not on PATH"
start_dockerd >"$work/engine.msg" 2>&1 || prereq_fail "$(cat "$work/engine.msg")"
ok containers-engine
runtimes() { dk info -f '{{range $k, $v := .Runtimes}}{{$k}} {{end}}'; }
note "engine: $(dk version -f '{{.Server.Version}}'), runtimes: $(runtimes)"

# --- images ---------------------------------------------------------------------------------
t=$SECONDS
if msg=$(make_base_image 2>&1); then ok "image-base-debian-bookworm ($((SECONDS - t))s)"
else fail image-base-debian-bookworm "$msg"; finish; fi
t=$SECONDS
if msg=$(make_app_image 2>&1); then ok "image-app-dotnet ($((SECONDS - t))s)"
else fail image-app-dotnet "$msg"; finish; fi
t=$SECONDS
if [ -n "${CT_KEEP_IMAGE:-}" ] && dk image inspect "$IMG" >/dev/null 2>&1; then
    note "CT_KEEP_IMAGE: $IMG as it is, not rebuilt"
elif msg=$(make_clrattach_image 2>&1); then ok "image-clrattach-docker-build ($((SECONDS - t))s)"
else fail image-clrattach-docker-build "$msg"; finish; fi

# The static helper that makes forbidden calls under the profile (no shell in the image).
HELPER=$work/forbidden
if command -v musl-gcc >/dev/null; then
    musl-gcc -static -O2 -o "$HELPER" "$here/forbidden.c" 2>"$work/helper.log"
else
    ${CC:-gcc} -static -O2 -o "$HELPER" "$here/forbidden.c" 2>"$work/helper.log"
fi || { fail helper-build "$(cat "$work/helper.log")"; finish; }

# --- the TLS test API server on loopback ------------------------------------------------------
"$ROOT/tests/k8s/gen-certs.sh" "$work/certs" >/dev/null 2>&1 ||
    { fail apiserver "gen-certs.sh failed"; finish; }
mkdir -p "$work/sa"
printf 'token-%s\n' "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >"$work/sa/token"
cp "$work/certs/ca.crt" "$work/sa/ca.crt"
echo shop >"$work/sa/namespace"
chmod 644 "$work/sa"/*
python3 "$ROOT/tests/k8s/apiserver.py" --ca-dir "$work/certs" --token-file "$work/sa/token" \
    --pod "shop/$POD" \
    --port-file "$work/port" 2>"$work/server.log" &
srv_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { fail apiserver "did not start: $(tail -3 "$work/server.log")"; finish; }
API_PORT=$(cat "$work/port")
api() {
    curl -sS --max-time 10 --fail --cacert "$work/certs/ca.crt" -X "$1" \
        "https://127.0.0.1:$API_PORT$2"
}
# events_count REASON: occurrences of Events about $POD with that reason the server holds.
events_count() {
    api GET /_test/events | python3 -c '
import json, sys
ev = json.load(sys.stdin)
# an Event repeated within its series window is PATCHed: series.count grows
print(sum((e.get("series") or {}).get("count", 1) for e in ev if e.get("reason") == sys.argv[1]
          and e.get("regarding", {}).get("name") == sys.argv[2]
          and e.get("regarding", {}).get("fieldPath") == "spec.containers{app}"))' "$1" "$POD"
}

# --- helpers ----------------------------------------------------------------------------------
# The manifests' flags for one container, one per line, into the named array.
flags_of() {
    local -n _out=$1
    shift
    mapfile -t _out < <(timeout 60 python3 "$here/flags.py" "$@" --pod-name "$POD" \
        --seccomp-dir "$ROOT/deploy/seccomp")
    [ ${#_out[@]} -gt 0 ]
}
# run_c NAME ARGS...: docker run -d, remembered for cleanup.
run_c() {
    local name=$1
    shift
    created+=("$name")
    dk run -d --name "$name" "$@" >"$work/$name.id" 2>"$work/$name.err"
}
# wait_ready NAME: the test app printed "ready" (since its latest start when $2 is given).
wait_ready() {
    local i n
    for i in $(seq 150); do
        n=$(dk logs "$1" 2>/dev/null | grep -c '^ready ')
        [ "$n" -ge "${2:-1}" ] && return 0
        running "$1" || [ "$i" -lt 5 ] || break
        sleep 0.2
    done
    return 1
}
# wait_report NAME [SINCE-MS]: the sample profiler's report in the app ($REPORT, or
# $REPORT_PATH) says it attached (and, with SINCE-MS, attached after that time: a new runtime
# instance).
wait_report() {
    local i
    for i in $(seq 100); do
        if dk exec "$1" cat "${REPORT_PATH:-$REPORT}" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
sys.exit(0 if r.get("attach_complete") and r["attach_unix_ms"] > int(sys.argv[1]) else 1)' "${2:-0}" 2>/dev/null
        then return 0; fi
        sleep 0.2
    done
    return 1
}
now_ms() { date +%s%3N; }
running() { [ "$(dk inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }
# logs_of NAME: the container's last lines, on one line, for a FAIL reason.
logs_of() { dk logs "$1" 2>&1 | tail -5 | tr '\n' ' '; }
# has_lines TEXT LINE...: TEXT holds each LINE exactly.
has_lines() {
    local text=$1 l
    shift
    for l in "$@"; do printf '%s\n' "$text" | grep -qxF -- "$l" || return 1; done
}
app_common=(--network none --read-only --tmpfs /tmp:exec,mode=1777)
app_args=(--seconds 900)
why() { printf '%s' "$(tail -c 600 "$1" 2>/dev/null | tr '\n' ' ')"; }

# --- a/e: the sidecar, under runc and crun --------------------------------------------------
# wait_events MORE-THAN: until the server holds more ProfilerAttached occurrences; prints them.
wait_events() {
    local i n=0
    for i in $(seq 50); do
        n=$(events_count ProfilerAttached)
        [ "$n" -gt "$1" ] && break
        sleep 0.2
    done
    echo "$n"
}
sidecar_shape() {
    local rt=$1 kdir=deploy/overlays/seccomp-localhost
    local pause=$RUN-$rt-pause app=$RUN-$rt-app side=$RUN-$rt-sidecar
    local appf sidef args tlog=$work/$rt-termination-log t0 n before out
    : >"$tlog"
    chmod 666 "$tlog"
    flags_of appf pod "$kdir" app --pid-owner "$pause" --emptydir-root "$work/$rt-emptydir" &&
        flags_of sidef pod "$kdir" clrattach --pid-owner "$pause" --termination-file "$tlog" ||
        { fail "sidecar-$rt-flags" "flags.py failed"; return; }
    # The manifests' own --client-data: the report goes to the emptyDir, as in a cluster.
    mapfile -t args < <(timeout 60 python3 "$here/flags.py" args "$kdir" clrattach \
        --set-arg=--match-cmdline=ClrTarget.dll)
    local REPORT_PATH
    REPORT_PATH=$(printf '%s\n' "${args[@]}" | sed -n 's/^--client-data=out=//p')
    # The pod's pause container: any long sleeper from the base image holds the PID namespace.
    run_c "$pause" --runtime "$rt" --network none --read-only --user 65535:65535 --cap-drop ALL \
        --security-opt no-new-privileges debian:bookworm sleep infinity ||
        { fail "sidecar-$rt-pod" "pause: $(why "$work/$pause.err")"; return; }
    run_c "$app" --runtime "$rt" --network none "${appf[@]}" "$APP" "${app_args[@]}" &&
        wait_ready "$app" ||
        { fail "sidecar-$rt-pod" "app: $(why "$work/$app.err") $(logs_of "$app")"; return; }
    t0=$(now_ms)
    if ! run_c "$side" --runtime "$rt" --network host "${sidef[@]}" \
        -v "$work/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
        -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e KUBERNETES_SERVICE_PORT="$API_PORT" \
        "$IMG" "${args[@]}"; then
        fail "sidecar-$rt-starts-under-profile" "$(why "$work/$side.err")"
        return
    fi
    ok "sidecar-$rt-starts-under-profile"
    if wait_report "$app" "$t0"; then ok "sidecar-$rt-attached-at-start"
    else fail "sidecar-$rt-attached-at-start" "no report in the app; sidecar: $(logs_of "$side")"; fi
    before=$EVENTS_SEEN
    n=$(wait_events "$before")
    if [ "$n" -gt "$before" ]; then ok "sidecar-$rt-event-reported"
    else fail "sidecar-$rt-event-reported" "no new Event for $POD; sidecar: $(logs_of "$side")"; fi
    before=$n
    t0=$(now_ms)
    if dk restart -t 2 "$app" >/dev/null 2>&1 && wait_ready "$app" 2 && wait_report "$app" "$t0"
    then ok "sidecar-$rt-attached-after-app-restart"
    else fail "sidecar-$rt-attached-after-app-restart" "sidecar: $(logs_of "$side")"; fi
    n=$(wait_events "$before")
    if [ "$n" -gt "$before" ]; then ok "sidecar-$rt-event-after-restart"
    else fail "sidecar-$rt-event-after-restart" "Events: $n, before the restart: $before"; fi
    EVENTS_SEEN=$n
    if running "$side" && grep -q '"outcome":"attached"' "$tlog"; then
        ok "sidecar-$rt-running-termination-log"
    else
        fail "sidecar-$rt-running-termination-log" "$(logs_of "$side") log: $(head -c 300 "$tlog")"
    fi
    # The runtime's filter, not only clrattach's own: the helper under the same profile.
    out=$(dk run --rm --runtime "$rt" --network none --user 1654:1654 --read-only --cap-drop ALL \
        --security-opt no-new-privileges \
        --security-opt "seccomp=$ROOT/deploy/seccomp/clrattach.json" \
        -v "$HELPER:/forbidden:ro" --entrypoint /forbidden "$IMG" 2>&1)
    if has_lines "$out" 'getpid ok' 'socket_inet ok' 'getppid errno=1' 'getcwd errno=1' \
        'socket_netlink errno=1' 'clone3 errno=38'; then
        ok "profile-$rt-refuses-outside-calls"
    else
        fail "profile-$rt-refuses-outside-calls" "$(printf '%s' "$out" | tr '\n' ' ')"
    fi
    dk rm -f "$side" "$app" "$pause" >/dev/null 2>&1
}
EVENTS_SEEN=0

# The control: the same helper under the engine's default profile gets through.
out=$(dk run --rm --network none --user 1654:1654 -v "$HELPER:/forbidden:ro" \
    --entrypoint /forbidden "$IMG" 2>&1)
if has_lines "$out" 'getppid ok' 'socket_netlink ok'; then
    ok "helper-unconfined-control"
else
    fail "helper-unconfined-control" "$(printf '%s' "$out" | tr '\n' ' ')"
fi

# has_crun NAME: the engine has crun, or a FAIL for that shape's crun run.
has_crun() {
    runtimes | grep -qw crun && return 0
    fail "$1-crun" "crun is not registered with the engine (install crun)"
    return 1
}
if want sidecar; then
    sidecar_shape runc
    has_crun sidecar && sidecar_shape crun
fi

# --- l: the listening sidecar, under runc and crun: two containers that share ONLY a volume ---
# deploy/overlays/seccomp-localhost with deploy/components/listen, as kubectl kustomize renders
# them: no shared PID namespace, no shared /tmp, only the "clrattach-diag" emptyDir (a host
# directory here, as the kubelet makes one). The app (uid 1654) starts with DOTNET_DiagnosticPorts
# in it and waits, paused, until the sidecar resumes it; the sidecar runs `watch --listen` there
# under deploy/seccomp/clrattach.json, read-only, with no capability and no-new-privileges, as
# the app's uid. The profiler is the vendor-shaped startup-only one (OpenTelemetry's shape), from
# a read-only mount in the sidecar, its setting given by --env: its own report in the app says
# it was loaded from the volume with that setting, the app runs on, the result and the Event say
# loaded at startup, with the pid the runtime advertised and no node-side pid (there is none).
VI_CLSID='{918728DD-259F-4A6A-AC2B-B85E1B658318}'
listen_k=$work/listen-kustomize
mkdir -p "$listen_k"
cat >"$listen_k/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$listen_k" "$ROOT/deploy/overlays/seccomp-localhost")
components:
- $(realpath --relative-to="$listen_k" "$ROOT/deploy/components/listen")
EOF
# listen_events: the occurrences of Events the server holds that say loaded at startup with
# the pid the runtime advertised and no node-side pid, naming the --env setting (never its value).
listen_events() {
    api GET /_test/events | python3 -c '
import json, sys
print(sum((e.get("series") or {}).get("count", 1) for e in json.load(sys.stdin)
          if e.get("reason") == "ProfilerLoadedAtStartup"
          and ".NET pid 1 (the pid the runtime advertised, uid 1654, .NET " in e.get("note", "")
          and "VENDOR_SETTING_A" in e.get("note", "") and "listen-" not in e.get("note", "")
          and "node-side" not in e.get("note", "") and "pid 0" not in e.get("note", "")))'
}
listen_shape() {
    local rt=$1
    local app=$RUN-$rt-listen-app side=$RUN-$rt-listen-sidecar appf sidef args
    local tlog=$work/$rt-listen-termination-log ed=$work/$rt-listen-emptydir
    local rep line i n before
    : >"$tlog"
    chmod 666 "$tlog"
    flags_of appf pod "$listen_k" app --emptydir-root "$ed" &&
        flags_of sidef pod "$listen_k" clrattach --emptydir-root "$ed" --termination-file "$tlog" ||
        { fail "listen-$rt-flags" "flags.py failed"; return; }
    # What the manifests promise: no PID namespace shared, clrattach's own profile.
    if printf '%s\n' "${appf[@]}" "${sidef[@]}" | grep -q -- '^--pid' ||
        ! printf '%s\n' "${sidef[@]}" |
        grep -qxF -- "--security-opt=seccomp=$ROOT/deploy/seccomp/clrattach.json"; then
        fail "listen-$rt-flags" "app: ${appf[*]} sidecar: ${sidef[*]}"
        return
    fi
    ok "listen-$rt-flags-share-only-the-volume"
    before=$(listen_events)
    mapfile -t args < <(timeout 60 python3 "$here/flags.py" args "$listen_k" clrattach \
        --set-arg=--match-entry=ClrTarget --set-arg=--profiler=/vendor \
        --set-arg="--clsid=$VI_CLSID" --set-arg="--env=VENDOR_SETTING_A=listen-$rt")
    if ! run_c "$side" --runtime "$rt" --network host "${sidef[@]}" \
        -v "$ROOT/$BUILD/vendorinert:/vendor:ro" \
        -v "$work/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
        -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e KUBERNETES_SERVICE_PORT="$API_PORT" \
        "$IMG" "${args[@]}"; then
        fail "listen-$rt-sidecar-starts-under-profile" "$(why "$work/$side.err")"
        return
    fi
    for i in $(seq 50); do [ -S "$ed/clrattach-diag/port.sock" ] && break; sleep 0.2; done
    if [ -S "$ed/clrattach-diag/port.sock" ]; then ok "listen-$rt-sidecar-starts-under-profile"
    else fail "listen-$rt-sidecar-starts-under-profile" "no socket: $(logs_of "$side")"; return; fi
    # The app's own /tmp (a tmpfs of its own, like the pod's other emptyDirs): the profiler's
    # report goes there.
    if ! run_c "$app" --runtime "$rt" --network none "${appf[@]}" --tmpfs /tmp:mode=1777 "$APP" \
        "${app_args[@]}" || ! wait_ready "$app"; then
        fail "listen-$rt-app-resumed" "app: $(why "$work/$app.err") $(logs_of "$app"); sidecar: $(logs_of "$side")"
        return
    fi
    ok "listen-$rt-app-resumed"
    # The runtime is pid 1 of its container: the report is /tmp/vendorprof-1.json.
    for i in $(seq 50); do
        rep=$(dk exec "$app" cat /tmp/vendorprof-1.json 2>/dev/null) && [ -n "$rep" ] && break
        sleep 0.2
    done
    if python3 - "$rep" "listen-$rt" <<'PY' 2>/dev/null; then
import json, sys
r = json.loads(sys.argv[1])
assert r["self"].startswith("/clrattach-diag/"), r["self"]
assert r["settings"] == {"VENDOR_SETTING_A": sys.argv[2]}, r["settings"]
assert r["helper"].startswith("vendorhelper"), r["helper"]
PY
        ok "listen-$rt-loaded-at-startup-from-the-volume"
    else
        fail "listen-$rt-loaded-at-startup-from-the-volume" "report '$rep'; sidecar: $(logs_of "$side")"
    fi
    line="loaded at startup: namespace pid 1 (advertised by the runtime, uid 1654)"
    if dk logs "$side" 2>/dev/null | grep -qxF "$line" &&
        ! dk logs "$side" 2>&1 | grep -qE 'pid 0|node-side' &&
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["outcome"] == "loaded_at_startup" and d["ns_pid"] == 1 and "pid" not in d
         and d["resumed"] else 1)' "$tlog" 2>/dev/null; then
        ok "listen-$rt-result-loaded-at-startup"
    else
        fail "listen-$rt-result-loaded-at-startup" "$(logs_of "$side") log: $(head -c 300 "$tlog")"
    fi
    for i in $(seq 50); do
        n=$(listen_events)
        [ "$n" -gt "$before" ] && break
        sleep 0.2
    done
    if [ "$n" -gt "$before" ]; then ok "listen-$rt-event-reported"
    else fail "listen-$rt-event-reported" "no such Event; sidecar: $(logs_of "$side")"; fi
    dk rm -f "$side" "$app" >/dev/null 2>&1
}
if want listen; then
    listen_shape runc
    has_crun listen && listen_shape crun
fi

# --- b/c: kubectl debug --target, and the node ------------------------------------------------
# attach_once NAME EXPECTED-EXIT DOCKER-ARGS... -- CLRATTACH-ARGS...
attach_once() {
    local name=$1 want=$2 dargs=() rc
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do dargs+=("$1"); shift; done
    shift
    dk run --rm "${dargs[@]}" "$IMG" attach --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --client-data "out=$REPORT" -o json --events off "$@" \
        >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$name" "exit $rc, expected $want: $(why "$work/$name.out") $(why "$work/$name.err")"
        return 1
    fi
}
restart_app() { dk restart -t 2 "$1" >/dev/null 2>&1 && wait_ready "$1" "$2"; }
# attached NAME APP SINCE-MS [LABEL]: ok when the app's report shows a new attach.
attached() {
    if wait_report "$2" "$3"; then ok "$1${4:+ ($4)}"
    else fail "$1" "no new report in the app: $(why "$work/$1.err")"; fi
}

dbg=$RUN-debug-app
if ! want debug; then
    :
elif run_c "$dbg" "${app_common[@]}" --user 1654:1654 --cap-drop ALL \
    --security-opt no-new-privileges "$APP" "${app_args[@]}" && wait_ready "$dbg"; then
    # kubectl debug --target=app: the app's first process is pid 1 in the one-shot's view.
    flags_of rf debug deploy/kubectl-debug/custom.json restricted || fail debug-flags restricted
    t0=$(now_ms)
    attach_once kubectl-debug-restricted 0 --pid "container:$dbg" --network none "${rf[@]}" -- \
        --pid 1 && attached kubectl-debug-restricted "$dbg" "$t0"
    # general: root (the image's USER is 65532: runAsUser 0 in --custom) with SYS_PTRACE
    restart_app "$dbg" 2 || fail kubectl-debug-general "app restart"
    flags_of gf debug deploy/kubectl-debug/custom.json general || fail debug-flags general
    t0=$(now_ms)
    attach_once kubectl-debug-general 0 --pid "container:$dbg" --network none --user 0:0 \
        "${gf[@]}" -- --pid 1 && attached kubectl-debug-general "$dbg" "$t0"
    # From the node: root in the host PID namespace, by host pid. Root alone may not read
    # another uid's /proc/<pid>/environ; a node agent holds CAP_SYS_PTRACE (clrattach's own
    # next step when it is missing).
    restart_app "$dbg" 3 || fail node-host-pid "app restart"
    hostpid=$(dk inspect -f '{{.State.Pid}}' "$dbg")
    if attach_once node-root-without-ptrace 5 --pid host --network none --user 0:0 -- \
        --pid "$hostpid"; then
        if grep -q 'CAP_SYS_PTRACE' "$work/node-root-without-ptrace.err"; then
            ok node-root-without-ptrace
        else
            fail node-root-without-ptrace "exit 5 without the CAP_SYS_PTRACE next step"
        fi
    fi
    t0=$(now_ms)
    attach_once node-host-pid 0 --pid host --network none --user 0:0 --cap-add SYS_PTRACE -- \
        --pid "$hostpid" && attached node-host-pid "$dbg" "$t0" "pid $hostpid"
    # kubectl clrattach --profiler LOCAL_PATH: a vendor-shaped profiler directory from the
    # operator's side streamed as a tar into the one-shot's stdin (docker run -i standing in for
    # kubectl debug -i), with only the clrattach image in the cluster.
    restart_app "$dbg" 4 || fail kubectl-debug-stdin-directory "app restart"
    tar -C "$ROOT/$BUILD/vendorprof" -c . |
        dk run --rm -i --pid "container:$dbg" --network none "${rf[@]}" "$IMG" attach --pid 1 \
            --profiler - --clsid '{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}' --settle 0 \
            --client-data "out=/tmp/vendorprof.json" -o json --events off \
            >"$work/stdin-dir.out" 2>"$work/stdin-dir.err"
    src=$?
    if [ $src -eq 0 ] && dk exec "$dbg" cat /tmp/vendorprof.json 2>/dev/null |
        grep -q '"helper":"vendorhelper 1.0"'; then
        ok kubectl-debug-stdin-directory
    else
        fail kubectl-debug-stdin-directory "exit $src: $(why "$work/stdin-dir.out") $(why "$work/stdin-dir.err")"
    fi
else
    fail kubectl-debug-app "$(why "$work/$dbg.err") $(logs_of "$dbg")"
fi
dk rm -f "$dbg" >/dev/null 2>&1

# --- d: a noexec /tmp (Docker's default --tmpfs), then an exec volume as the emptyDir ---------
nx=$RUN-noexec-app
if ! want noexec; then
    :
elif run_c "$nx" --network none --read-only --tmpfs /tmp --user 1654:1654 --cap-drop ALL \
    --tmpfs /clrattach-profilers:exec,mode=1777 "$APP" "${app_args[@]}" && wait_ready "$nx"; then
    flags_of rf debug deploy/kubectl-debug/custom.json restricted
    res=("$work/noexec-tmp-refused.err" "$work/noexec-tmp-refused.out")
    if attach_once noexec-tmp-refused 6 --pid "container:$nx" --network none "${rf[@]}" -- \
        --pid 1; then
        if grep -q -- '--target-dir' "${res[@]}" && grep -q 'noexec' "${res[@]}"; then
            ok noexec-tmp-refused
        else
            fail noexec-tmp-refused "exit 6 without the noexec/--target-dir step: $(why "${res[0]}")"
        fi
    fi
    t0=$(now_ms)
    attach_once noexec-tmp-target-dir-volume 0 --pid "container:$nx" --network none "${rf[@]}" \
        -- --pid 1 --target-dir /clrattach-profilers &&
        attached noexec-tmp-target-dir-volume "$nx" "$t0"
else
    fail noexec-app "$(why "$work/$nx.err") $(logs_of "$nx")"
fi
dk rm -f "$nx" >/dev/null 2>&1

# --- f: the image itself ----------------------------------------------------------------------
want image || finish
size=$(dk image inspect -f '{{.Size}}' "$IMG")
if [ "$size" -gt 0 ] && [ "$size" -lt $((16 * 1024 * 1024)) ]; then ok "image-size ($size bytes)"
else fail image-size "$size bytes (expected under 16 MiB)"; fi
user=$(dk image inspect -f '{{.Config.User}}' "$IMG")
case $user in
0 | 0:* | root* | "") fail image-non-root "USER '$user'" ;;
*) ok "image-non-root ($user)" ;;
esac
ep=$(dk image inspect -f '{{json .Config.Entrypoint}}' "$IMG")
[ "$ep" = '["/clrattach"]' ] && ok image-entrypoint || fail image-entrypoint "$ep"
if dk run --rm --network none --entrypoint /bin/sh "$IMG" -c true >"$work/sh.out" 2>&1; then
    fail image-no-shell "/bin/sh ran"
else
    ok image-no-shell
fi
v=$(dk run --rm --network none "$IMG" --version 2>&1)
case $v in
*"$(cat VERSION)"*) ok "image-version ($v)" ;;
*) fail image-version "'$v', VERSION $(cat VERSION)" ;;
esac
cid=$(dk create "$IMG") && created+=("$cid")
files=$(dk export "$cid" | tar -t 2>/dev/null)
if printf '%s\n' "$files" | grep -qx 'profilers/linux-x64/libclrprobe.so' &&
    printf '%s\n' "$files" | grep -qx 'profilers/linux-musl-x64/libclrprobe.so' &&
    printf '%s\n' "$files" | grep -qx 'clrattach'; then
    ok image-sample-profilers
else
    fail image-sample-profilers "$(printf '%s' "$files" | grep -v '^\(dev\|etc\|proc\|sys\)' | tr '\n' ' ')"
fi
# The image's SBOM names what its binary says it is made of, and its OCI labels the same
# version and commit (tests/deploy/check_sbom.py).
dk cp "$cid:/sbom/clrattach.spdx.json" "$work/sbom.json" >/dev/null 2>&1 || : >"$work/sbom.json"
dk run --rm --network none "$IMG" version -o json >"$work/version.json" 2>&1
dk image inspect -f '{{json .Config.Labels}}' "$IMG" >"$work/labels.json"
while read -r line; do
    case $line in
    "ok "*) ok "image-${line#ok }" ;;
    "FAIL "*) line=${line#FAIL }; fail "image-${line%%: *}" "${line#*: }" ;;
    esac
done < <(python3 tests/deploy/check_sbom.py "$work/sbom.json" "$work/version.json" "$work/labels.json" 2>&1 ||
    echo "FAIL sbom-check: $(head -c 300 "$work/sbom.json")")
dk rm -f "$cid" >/dev/null 2>&1
note "wall time $((SECONDS - T0))s"
finish
