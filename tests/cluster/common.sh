# shellcheck shell=bash
# The scenarios every node shape of tests/cluster/run.sh runs (the dockershim node's
# scenarios.sh, the containerd node's cri.sh), as functions; every check's name starts with $PFX
# (empty on the first shape, "cri-" on the containerd node). Helpers: tests/cluster/helpers.sh.
PFX=${PFX:-}

# ---- 1. deploy/ on a fresh cluster --------------------------------------------------------------
# scenario_base: sets BASE_POD (empty when the pod did not come up).
scenario_base() {
    k=$(shipped base "$ROOT/deploy")
    if K apply -k "$k" >"$WORK/s1-apply.out" 2>&1 && grep -q '^namespace/shop created' "$WORK/s1-apply.out"; then
        ok "${PFX}base-apply-on-fresh-cluster (kubectl apply -k deploy/: $(grep -c created "$WORK/s1-apply.out") objects created, namespace shop first)"
    else
        fail "${PFX}base-apply-on-fresh-cluster" "$(tr '\n' ' ' <"$WORK/s1-apply.out")"
    fi
    if wait_pod shop "$SEL"; then
        ok "${PFX}base-pod-running ($POD: app and sidecar ready)"
        BASE_POD=$POD
        if wait_report shop "$POD" app "$REPORT"; then
            ok "${PFX}base-sidecar-attached (the sample profiler's report in the app's emptyDir)"
        else
            fail "${PFX}base-sidecar-attached" "sidecar: $(logs_of shop "$POD" clrattach)"
        fi
        if wait_events shop "$POD" ProfilerAttached 1 app &&
            K get events -n shop >"$WORK/s1-events.txt" 2>&1 &&
            grep ProfilerAttached "$WORK/s1-events.txt" | grep -q "pod/$POD"; then
            ok "${PFX}base-event-in-kubectl-get-events ($(grep ProfilerAttached "$WORK/s1-events.txt" | head -1 | tr -s ' ' | cut -c1-160))"
        else
            fail "${PFX}base-event-in-kubectl-get-events" "$(cat "$WORK/s1-events.txt" 2>/dev/null | tail -5 | tr '\n' ' ') sidecar: $(logs_of shop "$POD" clrattach)"
        fi
        # The Event came through the kubelet's projected, bound token (BoundServiceAccountTokenVolume).
        vol=$(K get pod -n shop "$POD" -o 'jsonpath={.spec.volumes[?(@.projected.sources[0].serviceAccountToken)].name}')
        case $vol in
        kube-api-access-*) ok "${PFX}base-bound-token-volume ($vol)" ;;
        *) fail "${PFX}base-bound-token-volume" "no kube-api-access-* volume: '$vol'" ;;
        esac
        # kubectl.kubernetes.io/default-container: the app's output, not the sidecar's.
        if K logs -n shop "$POD" 2>&1 | grep -q '^ready '; then
            ok "${PFX}base-default-container-is-app"
        else
            fail "${PFX}base-default-container-is-app" "$(K logs -n shop "$POD" 2>&1 | head -3 | tr '\n' ' ')"
        fi
    else
        fail "${PFX}base-pod-running" "$(K get pods -n shop -o wide 2>&1 | tail -3 | tr '\n' ' ') $(K describe pods -n shop 2>&1 | grep -A8 '^Events:' | tail -6 | tr '\n' ' ')"
        BASE_POD=
    fi
}

# ---- 3. the app container restarted: attached again, the Event's series count 2 ---------------
scenario_restart() {
    if [ -n "$BASE_POD" ]; then
        t0=$(now_ms)
        if kill_app shop "$BASE_POD" app Orders.Api.dll && until_ok 60 restarted shop "$BASE_POD" app 1 &&
            wait_report shop "$BASE_POD" app "$REPORT" "$t0"; then
            ok "${PFX}restart-attached-again (restart count $(restarts shop "$BASE_POD" app))"
        else
            fail "${PFX}restart-attached-again" "restarts $(restarts shop "$BASE_POD" app); sidecar: $(logs_of shop "$BASE_POD" clrattach)"
        fi
        if wait_events shop "$BASE_POD" ProfilerAttached 2 app; then
            ok "${PFX}restart-event-series-count-2 (one Event, series.count $(event_count shop "$BASE_POD" ProfilerAttached app))"
        else
            fail "${PFX}restart-event-series-count-2" "count $(event_count shop "$BASE_POD" ProfilerAttached app); sidecar: $(logs_of shop "$BASE_POD" clrattach)"
        fi
    fi
}

# ---- 7. the plugin's streaming path: a profiler from this machine, stdinOnce -------------------
scenario_plugin_stream() {
    if oncall_pod oncall-plugin; then
        t=$SECONDS
        plugin oncall-plugin -n shop -c app --clsid "$PROBE_CLSID" --profiler "$ABS_BUILD/libclrprobe.so" -o json \
            --client-data out=/clrattach-profilers/plugin-report.json --name clrattach-stream --timeout 90
        if [ "$RC" = 0 ] && grep -q '"outcome":"attached"' "$WORK/plugin.out" &&
            report_ok shop oncall-plugin app /clrattach-profilers/plugin-report.json &&
            [ "$(K get pod -n shop oncall-plugin -o 'jsonpath={.spec.ephemeralContainers[?(@.name=="clrattach-stream")].stdinOnce}')" = true ]; then
            ok "${PFX}plugin-streams-local-profiler ($((SECONDS - t)) s, stdinOnce)"
        else
            fail "${PFX}plugin-streams-local-profiler" "rc $RC: $(tail -c 600 "$WORK/plugin.out") $(tail -c 600 "$WORK/plugin.err")"
        fi
        st=$(eph_state shop oncall-plugin clrattach-stream)
        [ "$st" = "terminated 0" ] && ok "${PFX}plugin-leaves-nothing-running ($st)" ||
            fail "${PFX}plugin-leaves-nothing-running" "$st"
        # The stream's attach failing (a kubectl that refuses it once): the plugin ends the
        # container's input itself, and the container ends.
        mkdir -p "$WORK/flaky"
        cat >"$WORK/flaky/kubectl" <<EOF
#!/bin/sh
if [ "\$1" = attach ] && [ ! -e "$WORK/flaky/failed" ]; then : >"$WORK/flaky/failed"; exit 1; fi
exec $(command -v kubectl) "\$@"
EOF
        chmod 755 "$WORK/flaky/kubectl"
        KUBECTL=$WORK/flaky/kubectl plugin oncall-plugin -n shop -c app --clsid "$PROBE_CLSID" \
            --profiler "$ABS_BUILD/libclrprobe.so" --name clrattach-cut --timeout 60
        st=$(eph_state shop oncall-plugin clrattach-cut)
        case $st in
        terminated*) ok "${PFX}plugin-ends-an-unfed-container (attach failed: rc $RC, container $st)" ;;
        *) fail "${PFX}plugin-ends-an-unfed-container" "container $st; rc $RC $(tail -c 400 "$WORK/plugin.err")" ;;
        esac
        K delete pod -n shop oncall-plugin --wait=false >/dev/null 2>&1
    else
        fail "${PFX}oncall-plugin-pod" "$(K get pods -n shop -o wide 2>&1 | tail -3 | tr '\n' ' ')"
    fi
}

# ---- 12. the README's plugin line on the README's own deployment -------------------------------
# `kubectl clrattach deployment/orders-api -n shop --clsid GUID` on deploy/base, word for word.
# deploy/base shares one PID namespace (pid 1 is the pause process): the plugin finds the app's
# process by its container's ID. The base's sidecar has attached the sample profiler already, so
# the runtime's answer is already_active (exit 3): found and asked, not "not .NET".
scenario_plugin_on_base() {
    k=$(shipped base12 "$ROOT/deploy")
    if K apply -k "$k" >"$WORK/s12-apply.out" 2>&1 && wait_pod shop "$SEL" &&
        wait_report shop "$POD" app "$REPORT"; then
        P12=$POD
        plugin deployment/orders-api -n shop --clsid "$PROBE_CLSID"
        if [ "$RC" = 3 ] && grep -q 'already_active' "$WORK/plugin.out" &&
            [ -n "$(K get pod -n shop "$P12" -o 'jsonpath={.spec.ephemeralContainers[?(@.name)].name}' | tr ' ' '\n' | grep -- '-pid$')" ]; then
            ok "${PFX}readme-plugin-line-on-base (shared PID namespace: the app's process found by its container ID; already_active)"
        else
            fail "${PFX}readme-plugin-line-on-base" "rc $RC: $(tail -c 600 "$WORK/plugin.out") $(tail -c 400 "$WORK/plugin.err")"
        fi
    else
        fail "${PFX}readme-plugin-line-on-base" "base not up: $(tr '\n' ' ' <"$WORK/s12-apply.out" | cut -c1-300)"
    fi
    K delete deployment -n shop orders-api --wait=false >/dev/null 2>&1
}
