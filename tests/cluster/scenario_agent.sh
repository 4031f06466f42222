# shellcheck shell=bash
# The node agent under a real kubelet (issue 38, docs/agent.md), on the cluster tests/cluster/run.sh
# brought up (helpers.sh sourced: K, ok, fail, until_ok, kill_app, event_count, restarts; cluster.sh:
# APISERVER_BIN, CLUSTER_PIDS, start_apiserver, SECCOMP_DIR). deploy/agent applied as shipped, with
# the suite's one patch (hostNetwork: no CNI here) and clrattach's seccomp profile installed where
# the kubelet reads Localhost profiles; the app pods are deploy/base's app without the sidecar (the
# app's own TMPDIR an emptyDir), in a namespace labelled as the shipped `probe` profile asks.
# Proven:
#   a running pod annotated clrattach.io/profile=probe: the sample profiler's report in the app and
#   a ProfilerAttached Event (the times printed: the goal is 2 s), the restart count unchanged,
#   nothing added to the pod (its containers and volumes the same);
#   a Deployment whose template carries the annotation: every replica attached, and the one a
#   scale-up adds;
#   the app container restarted (its app killed from the node): attached again;
#   a namespace the profile does not select, an unknown profile, a path in the annotation: a
#   Warning Event (ProfileRefused, never repeating the value) and nothing loaded;
#   kube-apiserver restarted under the running agent, then another pod annotated: attached;
#   `clrattach agent --status` in the agent's pod lists what it did.
# Defines scenario_agent, which run.sh calls on the dockershim node and cri.sh on the containerd
# node (its checks' names prefixed by $PFX there).

AG_NS=agent-shop
AG_NO=agent-other
AG_PROFILE=probe
AG_SEL=app.kubernetes.io/name=clrattach-agent

# ag_report NS POD: the sample profiler's report, wherever the profile's client data put it in
# the app's TMPDIR (the delivered directory, or beside it).
ag_report() {
    K exec -n "$1" "$2" -c app -- sh -c 'for f in "$TMPDIR"/clrprobe-report.json "$TMPDIR"/*/clrprobe-report.json; do
        [ -f "$f" ] && exec cat "$f"; done; exit 1' 2>/dev/null
}
# ag_attached NS POD [SINCE-MS]: the report says attached (after SINCE-MS); its attach time in
# AG_AT (ms since the epoch).
ag_attached() {
    AG_AT=$(ag_report "$1" "$2" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
if not (r.get("attach_complete") and r["attach_unix_ms"] > int(sys.argv[1])):
    sys.exit(1)
print(r["attach_unix_ms"])' "${3:-0}" 2>/dev/null)
}
# ag_loaded NS POD: the sample profiler is mapped in some process of the app container.
ag_loaded() {
    K exec -n "$1" "$2" -c app -- sh -c 'grep -l libclrprobe /proc/[0-9]*/maps' >/dev/null 2>&1
}
# ag_event_ms NS POD REASON: the earliest eventTime (ms since the epoch) of such an Event.
ag_event_ms() {
    K get events.events.k8s.io -n "$1" -o json | python3 -c '
import datetime, json, sys
pod, reason = sys.argv[1:3]
ts = []
for e in json.load(sys.stdin)["items"]:
    if (e.get("regarding") or {}).get("name") == pod and e.get("reason") == reason:
        t = e.get("eventTime") or e.get("deprecatedFirstTimestamp") or e["metadata"]["creationTimestamp"]
        t = t.replace("Z", "+00:00")
        ts.append(datetime.datetime.fromisoformat(t).timestamp())
if not ts:
    sys.exit(1)
print(int(min(ts) * 1000))' "$2" "$3"
}
# ag_status_missing "POD...": `clrattach agent --status` in the agent's pod into
# $WORK/agent-status.txt; sets missing to the pods it does not show attached (by name) and the
# refusals it does not show.
ag_status_missing() {
    local p
    K exec -n clrattach-system "$AG_POD" -c agent -- /clrattach agent --status >"$WORK/agent-status.txt" 2>&1
    missing=""
    for p in $1; do
        grep -q "^pod $AG_NS/$p: allowed profile=$AG_PROFILE attached=[1-9]" "$WORK/agent-status.txt" ||
            missing="$missing $p"
    done
    for p in "$AG_NO/" "$AG_NS/unknown-" "$AG_NS/with-path-"; do
        grep -q "^pod $p.*: refused" "$WORK/agent-status.txt" || missing="$missing $p(refused)"
    done
}

# ag_wait_fast SECONDS CMD...: CMD until it succeeds, every 0.2 s.
ag_wait_fast() {
    local n=$(($1 * 5))
    shift
    UNTIL_STEP=0.2 until_ok "$n" "$@"
}
# ag_shape NS POD: what the pod is made of (containers, init and ephemeral containers, volumes)
# and its app's restart count.
ag_shape() {
    K get pod -n "$1" "$2" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
s = p["spec"]
names = lambda k: ",".join(c["name"] for c in s.get(k) or [])
st = [c["restartCount"] for c in p["status"].get("containerStatuses") or [] if c["name"] == "app"]
print("containers=%s init=%s ephemeral=%s volumes=%s restarts=%s" % (names("containers"),
      names("initContainers"), names("ephemeralContainers"), names("volumes"), st))'
}
# ag_app NS NAME REPLICAS [ANNOTATION]: app_deployment of deploy/base's app, its pod template
# annotated with the profile if asked.
ag_app() {
    local ann=""
    [ $# -ge 4 ] && ann=", annotations: {clrattach.io/profile: \"$4\"}"
    app_deployment "$1" "$2" "$3" "$APP_IMAGE" "$ann" | K apply -f - >/dev/null
}
# ag_ready_pods NS SELECTOR COUNT: COUNT pods of the selector, none being deleted, all ready; their
# names in AG_PODS (oldest first).
ag_ready_pods() {
    local p
    AG_PODS=$(K get pods -n "$1" -l "$2" -o json | python3 -c '
import json, sys
pods = [p for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")]
pods.sort(key=lambda p: p["metadata"]["creationTimestamp"])
print(" ".join(p["metadata"]["name"] for p in pods))') || return 1
    [ "$(echo $AG_PODS | wc -w)" = "$3" ] || return 1
    for p in $AG_PODS; do all_ready "$1" "$p" || return 1; done
}
# ag_pods NS SELECTOR COUNT: waits (bounded) for ag_ready_pods.
ag_pods() {
    local i
    for i in $(seq 120); do
        ag_ready_pods "$@" && return 0
        sleep 1
    done
    return 1
}
# ag_kill_app NS POD DLL: the app container's .NET process (its cmdline naming DLL) killed from
# the node, found by the container ID in its /proc/<pid>/cgroup: in a pod without a shared PID
# namespace the app is its container's PID 1, which a signal from inside (kill_app) cannot end.
ag_kill_app() {
    local cid pid n=0
    cid=$(K get pod -n "$1" "$2" -o 'jsonpath={.status.containerStatuses[?(@.name=="app")].containerID}')
    cid=${cid#*://}
    [ ${#cid} = 64 ] || return 1
    for pid in $(grep -l "$cid" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3); do
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$3" && kill -KILL "$pid" && n=$((n + 1))
    done
    [ "$n" -gt 0 ]
}
ag_agent_log() { K logs -n clrattach-system "$AG_POD" -c agent 2>&1 | tail -n "${1:-6}" | tr '\n' ' ' | cut -c1-900; }
# ag_restart_apiserver: kube-apiserver stopped (TERM, by its pid) and started again as
# cluster.sh starts it, on the same etcd; the agent, the kubelet and the controllers run on.
ag_restart_apiserver() {
    local p pid="" i keep=()
    for p in "${CLUSTER_PIDS[@]}"; do
        [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$APISERVER_BIN")" ] && pid=$p || keep+=("$p")
    done
    [ -n "$pid" ] || { echo "no kube-apiserver among the cluster's pids"; return 1; }
    kill -TERM "$pid"
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    CLUSTER_PIDS=("${keep[@]}")
    mv "$WORK/apiserver.log" "$WORK/apiserver.before-restart.log"
    start_apiserver
}

# scenario_agent: the whole scenario, its checks' names prefixed by $PFX (the node shape's).
scenario_agent() {
    # ---- deploy/agent, as shipped ------------------------------------------------------------------
    install -m 0644 "$ROOT/deploy/seccomp/clrattach.json" "$SECCOMP_DIR/clrattach.json"
    k=$(shipped agent "$ROOT/deploy/agent")
    cat >>"$k/kustomization.yaml" <<'EOF'
- target: {kind: DaemonSet}
  patch: '[{"op": "add", "path": "/spec/template/spec/hostNetwork", "value": true}]'
EOF
    grep -q "\"$AG_PROFILE\": {" "$ROOT/deploy/agent/profiles.yaml" ||
        fail "${PFX:-}agent-profile-shipped" "deploy/agent/profiles.yaml has no '$AG_PROFILE' profile"
    AG_POD=
    if K apply -k "$k" >"$WORK/agent-apply.out" 2>&1 && wait_pod clrattach-system "$AG_SEL"; then
        AG_POD=$POD
        ok "${PFX:-}agent-daemonset-running ($POD: kubectl apply -k deploy/agent, $(grep -c created "$WORK/agent-apply.out") objects; hostPID, seccomp Localhost clrattach.json)"
    else
        fail "${PFX:-}agent-daemonset-running" "$(tr '\n' ' ' <"$WORK/agent-apply.out" | cut -c1-300) $(K get pods -n clrattach-system -o wide 2>&1 | tail -2 | tr '\n' ' ') $(K describe pods -n clrattach-system 2>&1 | grep -A8 '^Events:' | tail -6 | tr '\n' ' ')"
    fi

    if [ -n "$AG_POD" ]; then
        K create namespace "$AG_NS" >/dev/null && K label namespace "$AG_NS" clrattach.io/profiling=allowed >/dev/null
        K create namespace "$AG_NO" >/dev/null
        # Until the namespaces' default service accounts exist, their pods are refused.
        until_ok 30 K get serviceaccount default -n "$AG_NS"
        until_ok 30 K get serviceaccount default -n "$AG_NO"

        # ---- a running pod annotated ---------------------------------------------------------------
        ag_app "$AG_NS" orders 1
        if ag_pods "$AG_NS" app=orders 1; then
            P1=$AG_PODS
            sleep 3
            before=$(ag_shape "$AG_NS" "$P1")
            if ag_loaded "$AG_NS" "$P1" || ag_attached "$AG_NS" "$P1"; then
                fail "${PFX:-}agent-nothing-before-annotation" "$P1 has the profiler before its annotation"
            fi
            t0=$(now_ms)
            K annotate pod -n "$AG_NS" "$P1" "clrattach.io/profile=$AG_PROFILE" >/dev/null
            if ag_wait_fast 30 ag_attached "$AG_NS" "$P1" "$t0"; then
                seen=$(($(now_ms) - t0))
                ag_attached "$AG_NS" "$P1" "$t0"
                ok "${PFX:-}agent-annotate-attaches ($P1: the sample profiler's report; attached $((AG_AT - t0)) ms after the annotation (the report's attach time), seen in the app after $seen ms)"
            else
                fail "${PFX:-}agent-annotate-attaches" "no report in $P1: $(ag_agent_log)"
            fi
            if ag_wait_fast 30 ag_event_ms "$AG_NS" "$P1" ProfilerAttached; then
                ev=$(ag_event_ms "$AG_NS" "$P1" ProfilerAttached)
                ok "${PFX:-}agent-annotate-event (ProfilerAttached $((ev - t0)) ms after the annotation (the Event's eventTime; goal 2000 ms, not asserted))"
            else
                fail "${PFX:-}agent-annotate-event" "no ProfilerAttached Event on $P1: $(K get events -n "$AG_NS" 2>&1 | tail -4 | tr '\n' ' ')"
            fi
            after=$(ag_shape "$AG_NS" "$P1")
            if [ "$after" = "$before" ] && ag_loaded "$AG_NS" "$P1"; then
                ok "${PFX:-}agent-annotate-pod-unchanged ($after; libclrprobe mapped in the app)"
            else
                fail "${PFX:-}agent-annotate-pod-unchanged" "before: $before; after: $after"
            fi
        else
            P1=
            fail "${PFX:-}agent-annotate-attaches" "the app's pod: $(K get pods -n "$AG_NS" -o wide 2>&1 | tail -2 | tr '\n' ' ')"
        fi

        # ---- a Deployment annotated in its template; scaled up -------------------------------------
        ag_app "$AG_NS" annotated 2 "$AG_PROFILE"
        if ag_pods "$AG_NS" app=annotated 2; then
            got=""
            for p in $AG_PODS; do
                ag_wait_fast 60 ag_attached "$AG_NS" "$p" && wait_events "$AG_NS" "$p" ProfilerAttached 1 && got="$got $p"
            done
            if [ "$got" = " $(echo $AG_PODS)" ]; then
                ok "${PFX:-}agent-deployment-replicas-attached (both replicas as they started:$got)"
            else
                fail "${PFX:-}agent-deployment-replicas-attached" "attached:$got of $AG_PODS; $(ag_agent_log)"
            fi
            old=$AG_PODS
            K scale deployment -n "$AG_NS" annotated --replicas 3 >/dev/null
            if ag_pods "$AG_NS" app=annotated 3; then
                new=$(for p in $AG_PODS; do case " $old " in *" $p "*) ;; *) echo "$p" ;; esac; done)
                if [ -n "$new" ] && ag_wait_fast 60 ag_attached "$AG_NS" "$new" &&
                    wait_events "$AG_NS" "$new" ProfilerAttached 1; then
                    ok "${PFX:-}agent-scaled-up-replica-attached ($new)"
                else
                    fail "${PFX:-}agent-scaled-up-replica-attached" "new replica '$new': $(ag_agent_log)"
                fi
            else
                fail "${PFX:-}agent-scaled-up-replica-attached" "$(K get pods -n "$AG_NS" -l app=annotated 2>&1 | tail -3 | tr '\n' ' ')"
            fi
        else
            fail "${PFX:-}agent-deployment-replicas-attached" "$(K get pods -n "$AG_NS" -l app=annotated -o wide 2>&1 | tail -3 | tr '\n' ' ')"
        fi

        # ---- the app container restarted ------------------------------------------------------------
        if [ -n "$P1" ]; then
            n0=$(restarts "$AG_NS" "$P1" app)
            t0=$(now_ms)
            if ag_kill_app "$AG_NS" "$P1" Orders.Api.dll && until_ok 60 restarted "$AG_NS" "$P1" app $((n0 + 1)) &&
                until_ok 60 all_ready "$AG_NS" "$P1" && ag_wait_fast 60 ag_attached "$AG_NS" "$P1" "$t0" &&
                wait_events "$AG_NS" "$P1" ProfilerAttached 2; then
                ok "${PFX:-}agent-restart-attached-again ($P1: restart count $(restarts "$AG_NS" "$P1" app), a new report, ProfilerAttached $(event_count "$AG_NS" "$P1" ProfilerAttached) times)"
            else
                fail "${PFX:-}agent-restart-attached-again" "restarts $(restarts "$AG_NS" "$P1" app); $(ag_agent_log)"
            fi
        fi

        # ---- refused: a namespace not selected, an unknown profile, a path --------------------------
        AG_EVIL=/profilers/linux-x64/libclrprobe.so
        ag_app "$AG_NO" blocked 1 "$AG_PROFILE"
        ag_app "$AG_NS" unknown 1 nosuch
        ag_app "$AG_NS" with-path 1 "$AG_EVIL"
        refused=""
        for nd in "$AG_NO/blocked" "$AG_NS/unknown" "$AG_NS/with-path"; do
            ns=${nd%/*} d=${nd#*/}
            if ag_pods "$ns" "app=$d" 1; then
                p=$AG_PODS
                if wait_events "$ns" "$p" ProfileRefused 1; then
                    sleep 3
                    if ag_loaded "$ns" "$p" || ag_attached "$ns" "$p"; then
                        fail "${PFX:-}agent-refused-$d" "$p: the profiler is loaded"
                    else
                        refused="$refused $ns/$p"
                    fi
                else
                    fail "${PFX:-}agent-refused-$d" "no ProfileRefused Event on $p: $(ag_agent_log)"
                fi
            else
                fail "${PFX:-}agent-refused-$d" "$(K get pods -n "$ns" -l "app=$d" 2>&1 | tail -2 | tr '\n' ' ')"
            fi
        done
        [ "$(echo $refused | wc -w)" = 3 ] &&
            ok "${PFX:-}agent-refusals (a namespace not selected, an unknown profile, a path: a ProfileRefused Event each, nothing loaded:$refused)"
        msgs=$(K get events -n "$AG_NS" -o 'jsonpath={range .items[?(@.reason=="ProfileRefused")]}{.type} {.message}{"\n"}{end}' 2>&1)
        if [ -n "$msgs" ] && ! printf '%s' "$msgs" | grep -q -e "$AG_EVIL" -e nosuch &&
            ! printf '%s' "$msgs" | grep -qv '^Warning '; then
            ok "${PFX:-}agent-refusal-warning-no-echo ($(printf '%s' "$msgs" | head -1 | cut -c1-160))"
        else
            fail "${PFX:-}agent-refusal-warning-no-echo" "$msgs"
        fi

        # ---- kube-apiserver restarted under the agent ------------------------------------------------
        ag_app "$AG_NS" late 1
        if ag_pods "$AG_NS" app=late 1; then
            P5=$AG_PODS
            t=$SECONDS
            if ag_restart_apiserver >"$WORK/agent-restart.msg" 2>&1; then
                ok "${PFX:-}agent-apiserver-restarted (down and up again in $((SECONDS - t)) s)"
                t0=$(now_ms)
                K annotate pod -n "$AG_NS" "$P5" "clrattach.io/profile=$AG_PROFILE" >/dev/null
                if ag_wait_fast 60 ag_attached "$AG_NS" "$P5" "$t0" && wait_events "$AG_NS" "$P5" ProfilerAttached 1; then
                    ok "${PFX:-}agent-after-apiserver-restart-attaches ($P5: attached $((AG_AT - t0)) ms after its annotation)"
                else
                    fail "${PFX:-}agent-after-apiserver-restart-attaches" "$(ag_agent_log 10)"
                fi
            else
                fail "${PFX:-}agent-apiserver-restarted" "$(cat "$WORK/agent-restart.msg") $(tail -3 "$WORK/apiserver.log" 2>/dev/null)"
            fi
        else
            fail "${PFX:-}agent-apiserver-restarted" "the pod: $(K get pods -n "$AG_NS" -l app=late 2>&1 | tail -2 | tr '\n' ' ')"
        fi

        # ---- `clrattach agent --status` in the agent's pod -------------------------------------------
        # The status file is rewritten at most once a second (docs/agent.md): the last attach
        # (just above) may be a second away from it, so it is read until it lists every pod, 10 s.
        for _ in $(seq 10); do
            ag_status_missing "${P1:-none} ${P5:-none}"
            [ -z "$missing" ] && break
            sleep 1
        done
        if [ -z "$missing" ] && grep -q '^api: synced' "$WORK/agent-status.txt"; then
            ok "${PFX:-}agent-status-lists-pods ($(grep -c '^pod ' "$WORK/agent-status.txt") pods; $(grep '^api:' "$WORK/agent-status.txt" | cut -c1-160))"
        else
            fail "${PFX:-}agent-status-lists-pods" "missing:$missing; $(head -c 900 "$WORK/agent-status.txt")"
        fi
        K logs -n clrattach-system "$AG_POD" -c agent >"$WORK/agent.log" 2>&1
    fi
    K delete namespace "$AG_NS" "$AG_NO" --wait=false >/dev/null 2>&1
    K delete -k "$k" --wait=false >/dev/null 2>&1
}
