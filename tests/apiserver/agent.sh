# shellcheck shell=bash
# `clrattach agent` against the real kube-apiserver 1.20 of tests/apiserver/run.sh (sourced by
# it: K, KCFG, WORK, ROOT, URL, PKI, ok, fail, start_apiserver, stop_apiserver are its). No kubelet
# runs: the pods are created bound to a node name of our own, and the kubelet's part (the
# containers' IDs in the pod's status) is written through the status subresource. Each "container"
# is a real .NET app (start_target) moved into a cgroup v2 directory named as containerd's
# systemd driver names a container's scope, so that /proc/<pid>/cgroup names the very ID the
# status reports. The agent runs with deploy/agent's RBAC and a token of its service account.
#
# Checked: an annotation added to a running pod's object gets the profile's profiler loaded
# (the sample profiler's report appears) and a ProfilerAttached Event on the pod; an annotation
# carrying a path, an unknown profile, a namespace the profile does not select: a Warning Event
# (never repeating the value) and nothing loaded in that pod's app; a pod of another node is
# not seen; `agent --status` lists what it did; the apiserver restarted under a stopped agent,
# with a pod deleted and one created meanwhile: the agent relists (or resumes) and misses
# neither; a bad change of the profiles keeps the last good ones, a good one is taken; a watch
# stalled (the apiserver stopped, its connection open) is restarted; a label taken off a
# namespace is followed; a perfmap profile's annotation removed disables the perf map; an otel
# profile's annotation starts the OpenTelemetry agent with the pod's names on the resource, its
# removal stops it (agent_otel.sh); SIGTERM ends it within 2 s.

# shellcheck source=tests/apiserver/agent_otel.sh
. "$(dirname "${BASH_SOURCE[0]}")/agent_otel.sh"

AG_NODE=agent-node-1

# ag_wait SECONDS CMD...: CMD until it succeeds, every 0.2 s.
ag_wait() {
    local n=$(($1 * 5)) i
    shift
    for i in $(seq "$n"); do "$@" && return 0; sleep 0.2; done
    return 1
}

# ag_pod NS NAME NODE [ANNOTATION]: a pod bound to NODE, with the profile annotation if given.
ag_pod() {
    local ann=""
    [ $# -ge 4 ] && ann="annotations: {clrattach.io/profile: \"$4\"}"
    K apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, $ann}
spec:
  nodeName: $3
  automountServiceAccountToken: false
  containers:
  - {name: app, image: registry.example.com/shop/orders-api:1.0.0}
EOF
}

# ag_status NS NAME ID: what the kubelet would write once the container runs with that ID.
ag_status() {
    # A PUT of the whole object, as the plugin's stand-in kubelet does: this 1.20 server (built
    # with a newer Go) faults on a merge patch of the status.
    K get pod "$2" -n "$1" -o json >"$WORK/agent/pod-$2.json" || return 1
    python3 - "$WORK/agent/pod-$2.json" "$3" >"$WORK/agent/pod-$2.status.json" <<'PY' || return 1
import json, sys
pod = json.load(open(sys.argv[1]))
pod["status"]["phase"] = "Running"
pod["status"]["containerStatuses"] = [{
    "name": "app", "ready": True, "restartCount": 0, "imageID": "",
    "image": "registry.example.com/shop/orders-api:1.0.0",
    "containerID": "containerd://" + sys.argv[2],
    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]
print(json.dumps(pod))
PY
    K replace --raw "/api/v1/namespaces/$1/pods/$2/status" -f "$WORK/agent/pod-$2.status.json" >/dev/null
}

# ag_app NAME ID [START_TARGET-OPTIONS...]: a .NET app as the container with that ID: its
# process moved into .../cri-containerd-ID.scope of the cgroup v2 hierarchy. Sets AG_PID (and
# AG_LOG, its output).
AG_CG=
ag_app() {
    local dir=$AG_CG/clrattach-test-pod.slice/cri-containerd-$2.scope name=$1
    shift 2
    start_target "agent-$name" --pidns --uid 1000 --seconds 300 "$@" || return 1
    AG_LOG=$TARGET_LOG
    mkdir -p "$dir" && echo "$TARGET_PID" >"$dir/cgroup.procs" || return 1
    grep -q "cri-containerd-${dir##*-}" "/proc/$TARGET_PID/cgroup" || return 1
    AG_PID=$TARGET_PID
}

# ag_events NS NAME: the Events on a pod, one "TYPE REASON MESSAGE" line each.
ag_events() {
    K get events -n "$1" --field-selector "involvedObject.name=$2" \
        -o 'jsonpath={range .items[*]}{.type} {.reason} {.message}{"\n"}{end}' 2>/dev/null
}
ag_has_event() { ag_events "$1" "$2" | grep -q "$3"; }

# ag_setup: namespaces, deploy/agent's namespace, service account and RBAC, the profiles, a token.
ag_setup() {
    local d=$1
    kubectl kustomize "$ROOT/deploy/agent" >"$d/agent.yaml" || return 1
    python3 - "$d/agent.yaml" >"$d/rbac.yaml" <<'PY' || return 1
import sys, yaml
keep = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") in keep]
assert sorted(d["kind"] for d in docs) == sorted(keep), docs
yaml.safe_dump_all(docs, sys.stdout)
PY
    K apply -f "$d/rbac.yaml" >/dev/null || return 1
    K create namespace agent-ok >/dev/null && K create namespace agent-no >/dev/null &&
        K label namespace agent-ok clrattach.io/profiling=allowed clrattach.io/perfmap=on >/dev/null ||
        return 1
    # No controller manager runs here to create each namespace's default service account.
    K create serviceaccount default -n agent-ok >/dev/null &&
        K create serviceaccount default -n agent-no >/dev/null || return 1
    K create token clrattach-agent -n clrattach-system --duration 1h >"$d/token" || return 1
    ag_profiles "$d/profiles.json"
}

ag_start() {
    local d=$1
    # Its exit status in agent.rc (the timeout passes a signal's on as 128 + its number).
    sh -c 'timeout -k 5 600 "$@" & echo $! >"$0.pid"; wait $!; echo $? >"$0.rc"' "$d/agent" \
        ${AG_WRAP:-} "$CLRATTACH" agent --node "$AG_NODE" --profiles "$d/profiles.json" \
        --status-file "$d/status" --api-url "$URL" --token-file "$d/token" \
        --ca-file "$PKI/ca.crt" --namespace clrattach-system --pod clrattach-agent-test \
        --interval 500 --watch-timeout 8 -o json >"$d/agent.out" 2>"$d/agent.err" &
    disown $!
    ag_wait 5 test -s "$d/agent.pid"
    AG_AGENT=$(cat "$d/agent.pid")
    TARGET_PIDS+=("$AG_AGENT")
}

ag_refusals() {
    local d=$1 p ok_all=1
    for p in agent-ok/bad-path agent-ok/unknown agent-no/blocked; do
        if ! ag_wait 20 ag_has_event "${p%/*}" "${p#*/}" "Warning ProfileRefused"; then
            fail "agent-refused-${p#*/}" "no Warning Event: $(ag_events "${p%/*}" "${p#*/}"; tail -5 "$d/agent.err")"
            ok_all=0
        fi
    done
    [ $ok_all = 1 ] && ok "agent-refusals-warned (a path, an unknown profile, a namespace not selected: one Warning Event each)"
    if ag_events agent-ok bad-path | grep -q 'evil'; then
        fail agent-refusal-no-echo "the Warning repeats the annotation: $(ag_events agent-ok bad-path)"
    else
        ok "agent-refusal-no-echo (the Warning does not repeat the annotation's value)"
    fi
    # The blocked pod's app stays untouched: nothing delivered, nothing loaded.
    sleep 3
    if [ -e "/proc/$AG_BLOCKED/root/tmp/probe-agent.json" ] || is_mapped "$AG_BLOCKED" clrprobe; then
        fail agent-not-allowed-nothing-loaded "the blocked pod's app got the profiler"
    else
        ok "agent-not-allowed-nothing-loaded"
    fi
    if [ -n "$(ag_events agent-ok elsewhere)" ]; then
        fail agent-other-node-unseen "a pod of another node was judged: $(ag_events agent-ok elsewhere)"
    else
        ok "agent-other-node-unseen"
    fi
}

# A pod whose app was started paused (DOTNET_DefaultDiagnosticPortSuspend=1) and whose profile's
# mode is startup: the profiler loaded at startup with the profile's variables, the app resumed.
ag_startup() {
    local d=$1 i
    if probe_report "$AG_PAUSED" /tmp/probe-agent-startup.json >/dev/null ||
        probe_report "$AG_PAUSED" /tmp/probe-agent-startup.json >/dev/null; then
        for i in $(seq 50); do grep -q '^ready' "$AG_PAUSED_LOG" && break; sleep 0.1; done
        if grep -q '^ready' "$AG_PAUSED_LOG"; then
            ok "agent-startup-mode (a paused app loaded at startup with the profile's env, resumed)"
        else
            fail agent-startup-mode "the app was not resumed: $(cat "$AG_PAUSED_LOG")"
        fi
    else
        fail agent-startup-mode "no report: $(grep paused "$d/agent.err" | tail -3)"
    fi
}

ag_attach() {
    local d=$1 t0
    t0=$(date +%s%N)
    K annotate pod orders-0 -n agent-ok clrattach.io/profile=probe >/dev/null
    if probe_report "$AG_ORDERS" /tmp/probe-agent.json >/dev/null ||
        probe_report "$AG_ORDERS" /tmp/probe-agent.json >/dev/null; then
        ok "agent-annotate-attaches ($((($(date +%s%N) - t0) / 1000000)) ms to the probe's report)"
    else
        fail agent-annotate-attaches "no report: $(tail -8 "$d/agent.err")"
    fi
    if ag_wait 20 ag_has_event agent-ok orders-0 "Normal ProfilerAttached"; then
        ok "agent-attach-event (ProfilerAttached on the pod)"
    else
        fail agent-attach-event "$(ag_events agent-ok orders-0)"
    fi
    "$CLRATTACH" agent --status --status-file "$d/status" >"$d/status.txt" 2>&1
    if ag_wait 10 grep -q 'pod agent-ok/orders-0: allowed profile=probe attached=1' "$d/status" &&
        "$CLRATTACH" agent --status --status-file "$d/status" >"$d/status.txt" 2>&1 &&
        grep -q 'pod agent-no/blocked: refused' "$d/status.txt" && ! grep -q evil "$d/status.txt"; then
        ok "agent-status (per pod: allowed and attached, refused and why)"
    else
        fail agent-status "$(cat "$d/status.txt")"
    fi
}

# A profile in mode perfmap: the app writes its perf map; the annotation removed, the agent
# disables it (the map stops growing).
ag_map_size() { stat -c %s "/proc/$AG_PERF/root/tmp/perf-1.map" 2>/dev/null || echo 0; }
ag_perfmap() {
    local d=$1 s1 s2
    if ag_wait 20 sh -c "[ \$(stat -c %s /proc/$AG_PERF/root/tmp/perf-1.map 2>/dev/null || echo 0) -gt 0 ]"; then
        ok "agent-perfmap (the app writes its perf map)"
    else
        fail agent-perfmap "no map: $(grep perf-0 "$d/agent.err" | tail -3)"
        return
    fi
    K annotate pod perf-0 -n agent-ok clrattach.io/profile- >/dev/null
    if ag_wait 20 grep -q "pod agent-ok/perf-0: its annotation removed: perf map disabled in pid $AG_PERF" "$d/agent.err"; then
        s1=$(ag_map_size)
        sleep 2
        s2=$(ag_map_size)
        if [ "$s1" = "$s2" ]; then
            ok "agent-annotation-removed-stops-perfmap (DisablePerfMap sent; the map stays at $s2 bytes)"
        else
            fail agent-annotation-removed-stops-perfmap "the map still grows: $s1 -> $s2"
        fi
    else
        fail agent-annotation-removed-stops-perfmap "$(grep perf-0 "$d/agent.err" | tail -3)"
    fi
}

# The apiserver restarted while the agent is stopped; a pod created before the restart (so the
# restarted server's watch cache begins past the agent's version: its watch is answered 410 Gone
# and it must relist), and meanwhile a pod is deleted and one created.
ag_relist() {
    local d=$1
    kill -STOP "$AG_AGENT"
    ag_pod agent-ok early-0 "$AG_NODE" nosuch
    stop_apiserver
    start_apiserver "$WORK/apiserver-agent.log" || { fail agent-relist "the apiserver did not restart"; return; }
    K delete pod unknown -n agent-ok --grace-period=0 --force >/dev/null 2>&1
    ag_pod agent-ok late-0 "$AG_NODE" nosuch
    kill -CONT "$AG_AGENT"
    if ag_wait 60 ag_has_event agent-ok late-0 "Warning ProfileRefused" &&
        ag_wait 20 ag_has_event agent-ok early-0 "Warning ProfileRefused" &&
        ag_wait 20 sh -c "! grep -q 'pod agent-ok/unknown:' '$d/status'" &&
        grep '^api:' "$d/status" | grep -Eq '410 relists [1-9]'; then
        ok "agent-relist-misses-nothing (410 Gone, relisted: pods created before and after the restart and one deleted while its watch was down; $(grep '^api:' "$d/status" | cut -c1-120))"
    else
        fail agent-relist-misses-nothing "$(ag_events agent-ok late-0; cat "$d/status"; tail -8 "$d/agent.err")"
    fi
}

# ag_profiles FILE [EXTRA]: the profiles, replaced as a ConfigMap's update does (a new file
# moved in: another inode).
ag_profiles() {
    cat >"$1.new" <<EOF
{"profiles": {
  "probe": {"mode": "attach", "profiler": "$PROBE", "clsid": "$PROBE_CLSID",
            "clientData": "out=/tmp/probe-agent.json",
            "namespaces": "clrattach.io/profiling=allowed"},
  "probe-startup": {"mode": "startup", "profiler": "$PROBE", "clsid": "$PROBE_CLSID",
                    "env": ["CLRPROBE_OUT=/tmp/probe-agent-startup.json"],
                    "namespaces": "clrattach.io/profiling=allowed"},
  "perfmap": {"mode": "perfmap", "namespaces": "clrattach.io/perfmap=on"}${AGO_PROFILE}${2:-}
}}
EOF
    mv -f "$1.new" "$1"
}

# A change that does not check keeps the last good profiles; a good one is taken.
ag_reload() {
    local d=$1
    ag_profiles "$d/profiles.json" ', "nosuch": {"mode": "perfmap", "clsId": "{x}", "namespaces": "a=b"}'
    if ag_wait 10 grep -q 'profiles changed but are refused: the last good ones stay' "$d/agent.err" &&
        ag_wait 5 grep -q 'pod agent-ok/orders-0: allowed profile=probe' "$d/status"; then
        ok "agent-reload-bad-kept (a bad change refused, the last good profiles kept)"
    else
        fail agent-reload-bad-kept "$(tail -5 "$d/agent.err")"
    fi
    ag_profiles "$d/profiles.json" ', "nosuch": {"mode": "perfmap", "namespaces": "clrattach.io/profiling=allowed"}'
    if ag_wait 15 grep -q 'pod agent-ok/late-0: allowed profile=nosuch' "$d/status"; then
        ok "agent-reload (a new profile taken: a pod that named it is allowed now)"
    else
        fail agent-reload "$(cat "$d/status"; tail -5 "$d/agent.err")"
    fi
}

# A watch that sends nothing (the apiserver stopped with its connection open) is noticed past
# its timeout (8 s) and the slack (5 s), and started again once the server answers.
ag_stall() {
    local d=$1
    kill -STOP "$API_PID"
    sleep 16
    kill -CONT "$API_PID"
    ag_pod agent-ok after-stall "$AG_NODE" ../x
    if ag_wait 30 ag_has_event agent-ok after-stall "Warning ProfileRefused" &&
        grep -q 'stalls [1-9]' "$d/status"; then
        ok "agent-stalled-watch-restarted ($(grep -o 'stalls [0-9]*' "$d/status"), a pod created after it seen)"
    else
        fail agent-stalled-watch-restarted "$(grep '^api:' "$d/status"; ag_events agent-ok after-stall; tail -5 "$d/agent.err")"
    fi
}

# A label taken off the namespace: its pods are judged again once its labels are read again
# (30 s at most) and refused from then on.
ag_ns_label() {
    local d=$1
    K label namespace agent-ok clrattach.io/profiling- >/dev/null
    if ag_wait 45 grep -q 'pod agent-ok/orders-0: refused' "$d/status" &&
        ag_wait 10 ag_has_event agent-ok orders-0 "Warning ProfileRefused"; then
        ok "agent-namespace-label-followed (its label removed: the pod refused from then on)"
    else
        fail agent-namespace-label-followed "$(grep orders-0 "$d/status"; tail -3 "$d/agent.err")"
    fi
}

ag_cleanup() {
    local p
    for p in $AG_ORDERS $AG_BLOCKED $AG_PAUSED $AG_PERF $AGO_PID; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.5
    find "$AG_CG/clrattach-test-pod.slice" -depth -type d -exec rmdir {} \; 2>/dev/null
    rmdir "$AG_CG" 2>/dev/null
}

agent_scenario() {
    local d=$WORK/agent base id_orders id_blocked id_paused id_perf id_otel
    mkdir -p "$d"
    base=$(findmnt -t cgroup2 -n -o TARGET | head -n1)
    [ -n "$base" ] && [ -w "$base" ] || { fail agent-prerequisites "no writable cgroup v2 hierarchy"; return; }
    AG_CG=$base/clrattach-test.slice
    id_orders=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    id_blocked=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    id_paused=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    id_perf=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    id_otel=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    ag_setup "$d" || { fail agent-setup "deploy/agent's RBAC, namespaces, token"; return; }
    ag_pod agent-ok orders-0 "$AG_NODE" && ag_pod agent-ok bad-path "$AG_NODE" /tmp/evil.so &&
        ag_pod agent-ok unknown "$AG_NODE" nosuch && ag_pod agent-no blocked "$AG_NODE" probe &&
        ag_pod agent-ok elsewhere other-node nosuch &&
        ag_pod agent-ok paused-0 "$AG_NODE" probe-startup &&
        ag_pod agent-ok perf-0 "$AG_NODE" perfmap && ag_status agent-ok perf-0 "$id_perf" &&
        ag_status agent-ok orders-0 "$id_orders" && ag_status agent-no blocked "$id_blocked" &&
        ag_status agent-ok paused-0 "$id_paused" ||
        { fail agent-setup "pods and their status"; return; }
    ag_app orders "$id_orders" && AG_ORDERS=$AG_PID && ag_app blocked "$id_blocked" &&
        AG_BLOCKED=$AG_PID && ag_app paused "$id_paused" --suspended && AG_PAUSED=$AG_PID &&
        ag_app perf "$id_perf" --env CLRTARGET_SPIN_MS=20 --env DOTNET_EnableWriteXorExecute=0 &&
        AG_PERF=$AG_PID &&
        AG_PAUSED_LOG=$AG_LOG || { fail agent-setup "the apps in their cgroups"; ag_cleanup; return; }
    ok "agent-setup (deploy/agent RBAC, 7 pods, 4 apps in containerd-named cgroups, one paused at startup)"
    # The otel profile's pod and app, and its profile written with the receiver's endpoint.
    ago_setup "$d" "$id_otel" && ag_profiles "$d/profiles.json" ||
        fail agent-otel-setup "the receiver, its pod, its app"
    ag_start "$d"
    ag_refusals "$d"
    ag_startup "$d"
    ag_attach "$d"
    ag_perfmap "$d"
    ag_otel "$d"
    ag_relist "$d"
    ag_reload "$d"
    ag_stall "$d"
    ag_ns_label "$d"
    # The real server's BOOKMARK events (allowWatchBookmarks; this server sends one before a
    # watch's timeout, 8 s here): decoded, counted, and each moves the version the next watch
    # starts from (k8s_follow.c), which every check above then depended on.
    if ag_wait 20 sh -c "grep '^api:' '$d/status' | grep -Eq 'bookmarks [1-9]'"; then
        ok "agent-bookmarks-from-the-server ($(grep '^api:' "$d/status" | grep -Eo 'bookmarks [0-9]+'))"
    else
        fail agent-bookmarks-from-the-server "$(grep '^api:' "$d/status")"
    fi
    local t0
    t0=$(date +%s%N)
    if [ -s "$d/agent.rc" ]; then
        fail agent-sigterm "the agent had ended already, status $(cat "$d/agent.rc"): $(tail -3 "$d/agent.err")"
    else
        kill -TERM "$AG_AGENT"
        if ag_wait 2 test -s "$d/agent.rc" && [ "$(cat "$d/agent.rc")" = 0 ]; then
            ok "agent-sigterm (stopped cleanly in $((($(date +%s%N) - t0) / 1000000)) ms)"
        else
            fail agent-sigterm "status '$(cat "$d/agent.rc" 2>/dev/null)' 2 s after SIGTERM: $(tail -3 "$d/agent.err")"
        fi
    fi
    ag_cleanup
}
