# shellcheck shell=bash
# The agent's otel profile in the API-server scenario (sourced by agent.sh, after its helpers):
# the OpenTelemetry agent (build/otel-agent) started in a real .NET 10 app (build/otel-apps'
# console app) when its pod is annotated, its telemetry reaching the OTLP/HTTP receiver of the
# test tools on 127.0.0.1 with the pod's names on the resource (the agent knows the pod; the
# annotation adds nothing else), and stopped when the annotation is removed (nothing arrives any
# more).

AGO_AGENT=$ROOT/$BUILD/otel-agent
AGO_APP=$ROOT/$BUILD/otel-apps/console/OtelConsole.dll
AGO_SVC=agent-otel
AGO_PROFILE= AGO_RECV= AGO_PID= AGO_LOG=

# ago_setup DIR ID: the receiver, the profile (its endpoint is the receiver's), the namespace
# label that selects it, the pod and its app. Sets AGO_PROFILE for ag_profiles.
ago_setup() {
    local d=$1 port f
    for f in "$AGO_AGENT/ClrattachOtelAgent.dll" "$AGO_APP"; do
        [ -f "$f" ] || { fail agent-otel-built "$f missing: make otel-agent otel-apps"; return 1; }
    done
    AGO_RECV=$d/otlp.jsonl
    python3 "$ROOT/tests/tools/otlp_receiver.py" "$AGO_RECV" "$d/otlp.port" --seconds 900 &
    TARGET_PIDS+=($!)
    ag_wait 5 test -s "$d/otlp.port" || { fail agent-otel-receiver "did not listen"; return 1; }
    port=$(cat "$d/otlp.port")
    AGO_PROFILE=', "otel": {"mode": "otel", "profiler": "'$AGO_AGENT'",
            "env": ["OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:'$port'",
                    "OTEL_SERVICE_NAME='$AGO_SVC'", "OTEL_METRIC_EXPORT_INTERVAL=1000"],
            "namespaces": "clrattach.io/otel=on"}'
    K label namespace agent-ok clrattach.io/otel=on >/dev/null &&
        ag_pod agent-ok otel-0 "$AG_NODE" && ag_status agent-ok otel-0 "$2" || return 1
    TARGET_DLL=$AGO_APP ag_app otel "$2" && AGO_PID=$AG_PID && AGO_LOG=$AG_LOG
}

# ago_check CHECK SINCE WITHIN [ARGS]: tests/tools/otlp_check.py on the receiver's records of
# the profile's service; its line in AGO_OUT.
ago_check() {
    local what=$1 since=$2 within=$3
    shift 3
    AGO_OUT=$(timeout $((within + 20)) python3 "$ROOT/tests/tools/otlp_check.py" "$AGO_RECV" \
        "$what" --service "$AGO_SVC" --since "$since" --within "$within" "$@" 2>&1)
}

ag_otel() {
    local d=$1 t0
    [ -n "$AGO_PID" ] || return 0 # ago_setup failed, and said so
    t0=$(date +%s.%N)
    K annotate pod otel-0 -n agent-ok clrattach.io/profile=otel >/dev/null
    if ago_check console-client "$t0" 30; then
        ok "agent-otel-started (the pod annotated: $AGO_OUT)"
    else
        fail agent-otel-started "$AGO_OUT; $(grep otel-0 "$d/agent.err" | tail -3)"
        return
    fi
    if ago_check resource "$t0" 10 k8s.pod.name=otel-0 &&
        ago_check resource "$t0" 10 k8s.namespace.name=agent-ok &&
        ago_check resource "$t0" 10 k8s.container.name=app; then
        ok "agent-otel-pod-attributes (k8s.pod.name, k8s.namespace.name, k8s.container.name of the pod)"
    else
        fail agent-otel-pod-attributes "$AGO_OUT"
    fi
    K annotate pod otel-0 -n agent-ok clrattach.io/profile- >/dev/null
    if ag_wait 40 grep -q "pod agent-ok/otel-0: its annotation removed: OpenTelemetry stopped in pid $AGO_PID" "$d/agent.err"; then
        sleep 1
        if ago_check quiet "$(date +%s.%N)" 4; then
            ok "agent-annotation-removed-stops-otel (the agent's stop sent; $AGO_OUT)"
        else
            fail agent-annotation-removed-stops-otel "telemetry still arrives: $AGO_OUT"
        fi
    else
        fail agent-annotation-removed-stops-otel "$(grep otel-0 "$d/agent.err" | tail -3)"
    fi
    if kill -0 "$AGO_PID" 2>/dev/null; then
        ok "agent-otel-app-runs-on"
    else
        fail agent-otel-app-runs-on "the app ended: $(tail -5 "$AGO_LOG")"
    fi
}
