# shellcheck shell=bash
# OpenTelemetry into a running Deployment through the plugin (issue 36, docs/otel.md), on the
# cluster tests/cluster/run.sh brought up (helpers.sh sourced: K, dk, ok, fail, plugin, until_ok,
# event_count, restarts). A Deployment of two replicas of a .NET 10 app that makes HttpClient
# calls (tests/otel-apps/console, OtelConsole: no OpenTelemetry of its own), the shape of
# deploy/base without the sidecar (the pod's runAsUser/runAsGroup the app's, as Kubernetes 1.20
# needs for an ephemeral container; its root read-only, TMPDIR an emptyDir), in a namespace of its
# own; the OTLP/HTTP receiver of the test tools on the node's loopback (the pods use the node's
# network). Proven, with the pods never restarted or replaced:
#   `kubectl clrattach otel deployment/NAME --endpoint URL`: both replicas started (the summary
#   and -o json), each replica's HttpClient spans and runtime metrics at the receiver within a
#   bound time with the service name given and its own k8s.pod.name, k8s.namespace.name,
#   k8s.container.name; an OpenTelemetryStarted Event on each pod;
#   the same again: refused on both as already running (already_active, exit 3), the agents
#   running on, no span exported twice; the Events of both answers on each pod;
#   `--stop`: both stopped (flushed), and nothing more arrives.

OTEL_NS=otel-shop
OTEL_SVC=orders-otel
OTEL_SEL=app=orders-otel
OTEL_IMAGE=clrattach-test/otel-console:1.0.0
OTEL_RECV=$WORK/otel-recv.jsonl

# otel_app_image: the app image with the console test app, in the cluster's engine.
otel_app_image() {
    local ctx=$WORK/otel-app key
    [ -f "$ABS_BUILD/otel-apps/console/OtelConsole.dll" ] ||
        { echo "$BUILD/otel-apps/console missing (make otel-apps)"; return 1; }
    key=$( { dk image inspect -f '{{.Id}}' clrattach-test/app
        sha256sum "$ABS_BUILD"/otel-apps/console/* | awk '{print $1}'
        declare -f otel_app_image; } | sha256sum | cut -c1-16)
    image_present "$OTEL_IMAGE" "$key" && return 0
    mkdir -p "$ctx"
    cp -a "$ABS_BUILD/otel-apps/console" "$ctx/app"
    cat >"$ctx/Dockerfile" <<EOF
FROM clrattach-test/app
COPY app /otel-app
LABEL dev.clrattach.test.inputs=$key
ENTRYPOINT ["/usr/share/dotnet/dotnet", "/otel-app/OtelConsole.dll"]
CMD ["--seconds", "86400"]
EOF
    DK_TIMEOUT=300 dk build --network none -q -t "$OTEL_IMAGE" "$ctx"
}

otel_deployment() {
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' "$OTEL_NS"
    app_deployment "$OTEL_NS" "$OTEL_SVC" 2 "$OTEL_IMAGE"
}

# otel_pods: the Deployment's two pods, each running with its app ready ("ready" in its log);
# their names in OTEL_PODS.
otel_pods() {
    local p
    OTEL_PODS=$(K get pods -n "$OTEL_NS" -l "$OTEL_SEL" -o 'jsonpath={.items[*].metadata.name}') || return 1
    set -- $OTEL_PODS
    [ $# = 2 ] || return 1
    for p in "$@"; do
        all_ready "$OTEL_NS" "$p" && K logs -n "$OTEL_NS" "$p" -c app 2>/dev/null | grep -q '^ready ' || return 1
    done
}
# otel_identity: each pod's name, uid and its app container's restart count.
otel_identity() {
    K get pods -n "$OTEL_NS" -l "$OTEL_SEL" -o json | python3 -c '
import json, sys
for p in sorted(json.load(sys.stdin)["items"], key=lambda p: p["metadata"]["name"]):
    st = [s for s in p["status"].get("containerStatuses") or [] if s["name"] == "app"]
    print(p["metadata"]["name"], p["metadata"]["uid"], st[0]["restartCount"] if st else "none",
          p["status"].get("phase"))'
}
# otel_check CHECK POD SINCE WITHIN [ARGS]: otlp_check.py on that replica's records; its line
# in CHECK_OUT.
otel_check() {
    local what=$1 pod=$2 since=$3 within=$4
    shift 4
    CHECK_OUT=$(timeout $((within + 20)) python3 "$ROOT/tests/tools/otlp_check.py" "$OTEL_RECV" \
        "$what" --service "$OTEL_SVC" --since "$since" --within "$within" \
        ${pod:+--where "k8s.pod.name=$pod"} "$@" 2>&1)
}
# otel_once SINCE: the spans received since SINCE, from both replicas, each exactly once.
otel_once() {
    python3 - "$OTEL_RECV" "$OTEL_SVC" "$1" $OTEL_PODS <<'PY'
import collections, json, sys
path, svc, since, pods = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
ids, by_pod = collections.Counter(), collections.Counter()
for line in open(path):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("signal") == "traces" and r["t"] >= since and r["resource"].get("service.name") == svc:
        ids[r["span"]["span_id"]] += 1
        by_pod[r["resource"].get("k8s.pod.name")] += 1
twice = [i for i, n in ids.items() if n > 1]
print("%d spans (%s), %d of them twice" % (sum(ids.values()),
      ", ".join("%s: %d" % (p, by_pod[p]) for p in pods), len(twice)))
sys.exit(0 if not twice and all(by_pod[p] for p in pods) else 1)
PY
}
# plugin_json EXPR: a Python expression on the plugin's -o json document (d), printed.
plugin_json() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$WORK/plugin.out" "$1" 2>/dev/null
}

# ---- the app, two replicas --------------------------------------------------------------------
OTEL_RECV_PID=
if ! otel_app_image >"$WORK/otel-image.log" 2>&1; then
    fail otel-deployment-running "the app image: $(tail -c 300 "$WORK/otel-image.log")"
elif ! otel_deployment | K apply -f - >"$WORK/otel-apply.out" 2>&1 || ! until_ok 120 otel_pods; then
    fail otel-deployment-running "$(tr '\n' ' ' <"$WORK/otel-apply.out" | cut -c1-300) $(K get pods -n "$OTEL_NS" -o wide 2>&1 | tail -3 | tr '\n' ' ')"
else
    ok "otel-deployment-running ($OTEL_PODS: OtelConsole on .NET 10, no OpenTelemetry in it)"
    BEFORE=$(otel_identity)
    # The receiver on the node's loopback, where the pods' 127.0.0.1 is.
    python3 "$ROOT/tests/tools/otlp_receiver.py" "$OTEL_RECV" "$WORK/otel-port" --seconds 900 \
        >"$WORK/otel-recv.log" 2>&1 &
    OTEL_RECV_PID=$!
    until_ok 10 test -s "$WORK/otel-port"
    OTEL_ENDPOINT=http://127.0.0.1:$(cat "$WORK/otel-port" 2>/dev/null)

    # ---- start: one command for the Deployment ---------------------------------------------------
    t0=$(date +%s.%N)
    plugin otel "deployment/$OTEL_SVC" -n "$OTEL_NS" --endpoint "$OTEL_ENDPOINT" \
        --service-name "$OTEL_SVC" --env OTEL_METRIC_EXPORT_INTERVAL=1000 -o json \
        --name otel-start --timeout 120
    took=$(python3 -c 'import sys, time; print(int(time.time() - float(sys.argv[1])))' "$t0")
    cp "$WORK/plugin.out" "$WORK/otel-start.json"
    if [ "$RC" = 0 ] &&
        [ "$(plugin_json 'd["summary"]["pods"], d["summary"]["attached"], d["exit_code"]')" = "(2, 2, 0)" ] &&
        [ "$(plugin_json 'sorted({(p["outcome"], p["result"]["otel"]["state"], p["result"]["otel"]["service_name"], p["result"]["otel"]["endpoint"]) for p in d["pods"]})')" = \
            "[('otel_started', 'started', '$OTEL_SVC', '$OTEL_ENDPOINT')]" ] &&
        [ "$(plugin_json '" ".join(sorted(p["pod"] for p in d["pods"]))')" = "$(echo "$OTEL_PODS" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" ] &&
        grep -q '^2 pod(s): 2 started, 0 already active, 0 refused, 0 failed$' "$WORK/plugin.err"; then
        ok "otel-plugin-started-both ($took s; summary: $(grep '^2 pod(s)' "$WORK/plugin.err"); -o json: 2 otel_started, $(plugin_json '",".join(d["pods"][0]["result"]["otel"]["instrumentations"])'))"
    else
        fail otel-plugin-started-both "rc $RC: $(tail -c 700 "$WORK/plugin.out") $(tail -c 500 "$WORK/plugin.err")"
    fi
    # Each replica's telemetry, told apart by its k8s.pod.name: within the plugin's own time and
    # 15 s more (the agent's span batch delay is 1 s, the metrics are set to every second).
    within=$((took + 15))
    for p in $OTEL_PODS; do
        if otel_check console-client "$p" "$t0" "$within"; then
            ok "otel-spans-from-$p ($CHECK_OUT, service $OTEL_SVC)"
        else
            fail "otel-spans-from-$p" "$CHECK_OUT; plugin: $(tail -c 300 "$WORK/plugin.err")"
        fi
        if otel_check resource "$p" "$t0" "$within" "k8s.namespace.name=$OTEL_NS" &&
            otel_check resource "$p" "$t0" "$within" k8s.container.name=app; then
            ok "otel-resource-of-$p (k8s.pod.name=$p, k8s.namespace.name=$OTEL_NS, k8s.container.name=app: $CHECK_OUT)"
        else
            fail "otel-resource-of-$p" "$CHECK_OUT"
        fi
        if otel_check metrics "$p" "$t0" "$within"; then
            ok "otel-metrics-from-$p ($CHECK_OUT)"
        else
            fail "otel-metrics-from-$p" "$CHECK_OUT"
        fi
        if wait_events "$OTEL_NS" "$p" OpenTelemetryStarted 1 app; then
            ok "otel-event-on-$p (OpenTelemetryStarted)"
        else
            fail "otel-event-on-$p" "$(K get events -n "$OTEL_NS" 2>&1 | tail -4 | tr '\n' ' ')"
        fi
    done

    # ---- the same again: refused on both, nothing changed ----------------------------------------
    t1=$(date +%s.%N)
    plugin otel "deployment/$OTEL_SVC" -n "$OTEL_NS" --endpoint "$OTEL_ENDPOINT" \
        --service-name "$OTEL_SVC" --name otel-again --timeout 120
    if [ "$RC" = 3 ] && [ "$(grep -c 'already_active (exit 3)' "$WORK/plugin.out")" = 2 ] &&
        grep -q '^2 pod(s): 0 started, 2 already active, 0 refused, 0 failed$' "$WORK/plugin.out"; then
        ok "otel-plugin-twice-refused (exit 3: $(grep -m1 '^2 pod(s)' "$WORK/plugin.out"))"
    else
        fail otel-plugin-twice-refused "rc $RC: $(tail -c 600 "$WORK/plugin.out") $(tail -c 300 "$WORK/plugin.err")"
    fi
    # The agents run on, once each: spans still come from both replicas, none of them twice
    # (a second agent would export every span again).
    if otel_check console-client "" "$t1" 10 && sleep 3 && once=$(otel_once "$t1"); then
        ok "otel-twice-runs-on-once ($once)"
    else
        fail otel-twice-runs-on-once "$CHECK_OUT ${once:-}"
    fi

    # ---- --stop: both stopped, then nothing more ---------------------------------------------
    plugin otel "deployment/$OTEL_SVC" -n "$OTEL_NS" --stop -o json --name otel-stop --timeout 120
    cp "$WORK/plugin.out" "$WORK/otel-stop.json"
    if [ "$RC" = 0 ] &&
        [ "$(plugin_json 'sorted({(p["outcome"], p["result"]["otel"]["state"], p["result"]["otel"]["flushed"]) for p in d["pods"]})')" = \
            "[('otel_stopped', 'stopped', True)]" ] &&
        [ "$(plugin_json 'd["summary"]["pods"], d["summary"]["attached"]')" = "(2, 2)" ] &&
        grep -q '^2 pod(s): 2 stopped, 0 already active, 0 refused, 0 failed$' "$WORK/plugin.err"; then
        ok "otel-plugin-stopped-both ($(grep '^2 pod(s)' "$WORK/plugin.err"), flushed)"
    else
        fail otel-plugin-stopped-both "rc $RC: $(tail -c 700 "$WORK/plugin.out") $(tail -c 500 "$WORK/plugin.err")"
    fi
    n=""
    for p in $OTEL_PODS; do
        wait_events "$OTEL_NS" "$p" OpenTelemetryAlreadyRunning 1 app && wait_events "$OTEL_NS" "$p" OpenTelemetryStopped 1 app &&
            n="$n $p"
    done
    if [ "$n" = " $(echo $OTEL_PODS)" ]; then
        ok "otel-events-refused-and-stopped (OpenTelemetryAlreadyRunning and OpenTelemetryStopped on both pods)"
    else
        fail otel-events-refused-and-stopped "only on:$n; $(K get events -n "$OTEL_NS" 2>&1 | tail -6 | tr '\n' ' ')"
    fi
    sleep 1
    if otel_check quiet "" "$(date +%s.%N)" 5; then
        ok "otel-stop-quiet (after --stop: $CHECK_OUT from either replica)"
    else
        fail otel-stop-quiet "$CHECK_OUT"
    fi

    # ---- the pods: the same two, never restarted -------------------------------------------------
    AFTER=$(otel_identity)
    if [ "$AFTER" = "$BEFORE" ] && [ "$(echo "$AFTER" | awk '$3 == 0 && $4 == "Running"' | wc -l)" = 2 ]; then
        ok "otel-no-restart (the same two pods, restart count 0, Running: $(echo "$AFTER" | awk '{print $1}' | xargs))"
    else
        fail otel-no-restart "before: $(echo "$BEFORE" | tr '\n' ';') after: $(echo "$AFTER" | tr '\n' ';')"
    fi
fi
[ -n "$OTEL_RECV_PID" ] && kill "$OTEL_RECV_PID" 2>/dev/null && wait "$OTEL_RECV_PID" 2>/dev/null
K delete namespace "$OTEL_NS" --wait=false >/dev/null 2>&1
