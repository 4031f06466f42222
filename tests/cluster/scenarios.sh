# shellcheck shell=bash
# The scenarios of tests/cluster/run.sh on its first node shape, the kubelet on dockershim
# (sourced by it: K, dk, ok, fail, WORK, ROOT, APP_IMAGE, CLR_IMAGE, SECCOMP_DIR are its). The
# helpers are tests/cluster/helpers.sh's; the scenarios every shape runs, tests/cluster/common.sh's
# (the containerd node runs them again in tests/cluster/cri.sh).

# ---- 1. deploy/ on a fresh cluster --------------------------------------------------------------
scenario_base

# ---- 3. the app container restarted: attached again, the Event's series count 2 ---------------
scenario_restart

# ---- 6. an ephemeral container through the 1.20 API ---------------------------------------------
# Kubernetes 1.16 to 1.21 serve pods/NAME/ephemeralcontainers as an `EphemeralContainers` object
# (GET, then PUT the list back with one more). kubectl 1.28 and later create ephemeral containers
# with a PATCH carrying a Pod, which these servers refuse (checked below, with the kubectl on
# PATH), so `kubectl debug` cannot be used here: the container is PUT raw. Before 1.21 an
# ephemeral container may not have a securityContext; it runs as the pod's runAsUser/runAsGroup
# (deploy/base sets both to the app's, 1654:1654), which is what clrattach needs.
if oncall_pod oncall-eph; then
    ok "oncall-pod-running (deploy/base's app alone)"
    kv=$(kubectl version --client -o json | python3 -c '
import json, re, sys
v = json.load(sys.stdin)["clientVersion"]
print(v["gitVersion"], re.match(r"\d+", v.get("minor") or "0").group(0))')
    if [ "${kv#* }" -ge 28 ]; then
        if K debug -n shop oncall-eph --image="$CLR_IMAGE" --target=app --container=probe-kubectl \
            -- /clrattach --version >"$WORK/kdebug.out" 2>&1; then
            fail kubectl-debug-refused-by-1.20 "kubectl ${kv% *} debug worked: $(head -c 300 "$WORK/kdebug.out")"
        elif grep -q 'no kind "EphemeralContainers"' "$WORK/kdebug.out"; then
            ok "kubectl-debug-refused-by-1.20 (kubectl ${kv% *}: $(grep -o 'no kind[^,]*"v1"' "$WORK/kdebug.out" | head -1))"
        else
            fail kubectl-debug-refused-by-1.20 "$(head -c 300 "$WORK/kdebug.out")"
        fi
    else
        note "kubectl ${kv% *} is older than 1.28 and may still speak the 1.20 API: not checked"
    fi
    EPH=clrattach-eph
    uri=/api/v1/namespaces/shop/pods/oncall-eph/ephemeralcontainers
    # The container: deploy/kubectl-debug/custom.json (the env and the service-account mount,
    # with this pod's generated volume name) plus what kubectl debug would add; its
    # securityContext dropped (1.20 refuses it), the pod's applies.
    if K get --raw "$uri" >"$WORK/eph-get.json" &&
        vol=$(K get pod -n shop oncall-eph -o 'jsonpath={.spec.volumes[?(@.projected.sources[0].serviceAccountToken)].name}') &&
        python3 - "$WORK/eph-get.json" "$ROOT/deploy/kubectl-debug/custom.json" "$vol" "$EPH" \
            "$CLR_IMAGE" "$PROBE_CLSID" >"$WORK/eph-put.json" <<'PY' &&
import json, sys
obj = json.load(open(sys.argv[1]))
assert obj["kind"] == "EphemeralContainers", obj["kind"]
c = json.load(open(sys.argv[2]))
vol, name, image, clsid = sys.argv[3:7]
for m in c["volumeMounts"]:
    m["name"] = vol
c.pop("securityContext")
c.update(name=name, image=image, targetContainerName="app",
         command=["/clrattach", "attach", "--pid", "1",
                  "--profiler", "/profilers/linux-x64/libclrprobe.so", "--clsid", clsid,
                  "--client-data", "out=/clrattach-profilers/eph-report.json", "-o", "json"])
obj["ephemeralContainers"] = (obj.get("ephemeralContainers") or []) + [c]
json.dump(obj, sys.stdout)
PY
        K replace --raw "$uri" -f "$WORK/eph-put.json" >"$WORK/eph-put.out" 2>&1; then
        ok "ephemeral-put-1.20-api"
        if until_ok 90 eph_terminated shop oncall-eph "$EPH" &&
            [ "$(eph_state shop oncall-eph "$EPH")" = "terminated 0" ] &&
            python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "attached" and r["exit_code"] == 0 and r["uid"] == 1654, r' "$WORK/$EPH.msg" &&
            report_ok shop oncall-eph app /clrattach-profilers/eph-report.json; then
            ok "ephemeral-attached-as-app-uid (termination message: attached, uid 1654)"
        else
            fail ephemeral-attached-as-app-uid "$(eph_state shop oncall-eph "$EPH"): $(head -c 400 "$WORK/$EPH.msg") $(logs_of shop oncall-eph "$EPH")"
        fi
        if wait_events shop oncall-eph ProfilerAttached 1 app; then
            ok "ephemeral-event-reported (with the app container's bound token, mounted by custom.json)"
        else
            fail ephemeral-event-reported "$(logs_of shop oncall-eph "$EPH")"
        fi
    else
        fail ephemeral-put-1.20-api "$(cat "$WORK/eph-put.out" 2>/dev/null | head -c 400)"
    fi
    K delete pod -n shop oncall-eph --wait=false >/dev/null 2>&1
else
    fail oncall-pod-running "$(K get pods -n shop -o wide 2>&1 | tail -3 | tr '\n' ' ')"
fi

# ---- 7. the plugin's streaming path: a profiler from this machine, stdinOnce -------------------
scenario_plugin_stream

# ---- 5. SIGTERM: the sidecar's termination message is the JSON result --------------------------
# The pod is deleted: the kubelet stops the sidecar with SIGTERM. What the kubelet reads for the
# termination message is the file it mounts at /dev/termination-log, read here on the node as
# soon as the container has ended (the 1.20 kubelet may publish a deleted pod's last status
# before it has read it: "The container could not be located when the pod was deleted"); the
# pod's status, watched during the deletion, must carry the same message when it has one.
if [ -n "$BASE_POD" ]; then
    # The sidecar's container, looked for a while: a loaded node may answer slowly, and an empty
    # answer must be told apart from a sidecar that is not there.
    cid= tlog=
    for _ in $(seq 50); do
        cid=$(dk ps -q --filter "label=io.kubernetes.pod.name=$BASE_POD" \
            --filter label=io.kubernetes.container.name=clrattach 2>/dev/null | head -1)
        [ -n "$cid" ] && tlog=$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/dev/termination-log"}}{{.Source}}{{end}}{{end}}' "$cid" 2>/dev/null)
        [ -n "$tlog" ] && break
        sleep 0.2
    done
    s5_found="container ${cid:-none}, termination log ${tlog:-none}; containers of the pod: $(dk ps -a \
        --filter "label=io.kubernetes.pod.name=$BASE_POD" --format '{{.Names}} {{.Status}}' 2>&1 | tr '\n' ';')"
    K get pod -n shop "$BASE_POD" -w -o json >"$WORK/s5-watch.json" 2>/dev/null &
    wpid=$!
    # Its end, told by the engine as it happens: the kubelet may remove the deleted pod's
    # container right after it ended, before an inspect made only then.
    rm -f "$WORK/s5-exit"
    (code=$(DK_TIMEOUT=60 dk wait "$cid" 2>/dev/null) &&
        echo "$(date +%s%N) $code" >"$WORK/s5-exit") &
    dwpid=$!
    sleep 1
    t_del=$(date +%s%N)
    K delete pod -n shop "$BASE_POD" --wait=false >/dev/null 2>&1
    # The file as it last was while the sidecar ran, and once more as it ended: the kubelet may
    # remove the deleted pod's directory (the file with it) right after the container ended,
    # before a copy made only then.
    s5_copy() { cp "$tlog" "$WORK/s5-tlog.new" 2>/dev/null && [ -s "$WORK/s5-tlog.new" ] &&
        mv "$WORK/s5-tlog.new" "$WORK/s5-tlog.json"; }
    rm -f "$WORK/s5-tlog.json"
    for _ in $(seq 300); do
        s5_copy
        [ -s "$WORK/s5-exit" ] && break
        [ "$(dk inspect -f '{{.State.Running}}' "$cid" 2>/dev/null)" = false ] && break
        sleep 0.1
    done
    s5_copy
    wait "$dwpid" 2>/dev/null
    fin=$(cat "$WORK/s5-exit" 2>/dev/null)
    [ -n "$fin" ] || fin="unknown unknown"
    until_ok 60 pod_absent shop "$BASE_POD"
    kill "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    if msg=$(python3 - "$WORK/s5-tlog.json" "$WORK/s5-watch.json" "$t_del" $fin <<'PY'
import json, sys
tlog, watch, t_del, finished, code = sys.argv[1:6]
assert finished != "unknown", "the engine did not say when the sidecar ended"
r = json.load(open(tlog))
assert r.get("outcome") == "attached" and r.get("command") == "attach", r
# How long after the delete request the sidecar had ended (when the engine's wait returned).
took = (int(finished) - int(t_del)) / 1e6
assert code == "0" and took < 10000, (code, took)
# The pod's own last word, when the kubelet published it.
text, dec, pos, seen = open(watch).read(), json.JSONDecoder(), 0, None
while True:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos >= len(text):
        break
    obj, pos = dec.raw_decode(text, pos)
    for s in obj["status"].get("containerStatuses") or []:
        t = (s.get("state") or {}).get("terminated")
        if s["name"] == "clrattach" and t and t.get("reason") == "Completed":
            seen = t.get("message")
if seen is not None:
    assert json.loads(seen) == r, seen
print("exit 0, %d ms after the delete; %s" % (took, "the pod's status shows it too" if seen
      else "the kubelet published no final status"))
PY
    ); then
        ok "sigterm-termination-message-is-json ($msg)"
    else
        fail sigterm-termination-message-is-json "$msg; $s5_found; termination log: $(head -c 300 "$WORK/s5-tlog.json" 2>/dev/null)"
    fi
fi
# The Deployment goes before the next shapes: hostNetwork pods share the node's ports, and a
# rolling update's new pod would wait for the old one's containerPort.
K delete deployment -n shop orders-api --ignore-not-found >/dev/null 2>&1
until_ok 90 gone shop "$SEL"

# ---- 4. the Localhost seccomp profile, installed where the kubelet reads it --------------------
# The kubelet's seccomp directory is <root-dir>/seccomp (its --root-dir is this run's): the
# profile goes there as the overlay's comment says, and the sidecar must start under it.
install -m 0644 "$ROOT/deploy/seccomp/clrattach.json" "$SECCOMP_DIR/clrattach.json"
if K apply -k "$(shipped localhost "$ROOT/deploy/overlays/seccomp-localhost")" >"$WORK/s4.out" 2>&1 &&
    wait_pod shop "$SEL"; then
    if wait_report shop "$POD" app "$REPORT"; then
        ok "localhost-profile-attached ($POD)"
    else
        fail localhost-profile-attached "sidecar: $(logs_of shop "$POD" clrattach)"
    fi
    # What the kubelet handed the engine for the sidecar: the profile itself.
    cid=$(dk ps -q --filter "label=io.kubernetes.pod.name=$POD" \
        --filter label=io.kubernetes.container.name=clrattach | head -1)
    if [ -n "$cid" ] && dk inspect -f '{{json .HostConfig.SecurityOpt}}' "$cid" |
        python3 -c '
import json, sys
opts = json.load(sys.stdin)
prof = [json.loads(o.split("=", 1)[1]) for o in opts if o.startswith("seccomp=")]
assert prof and prof[0] == json.load(open(sys.argv[1])), opts
' "$ROOT/deploy/seccomp/clrattach.json" 2>"$WORK/s4-prof.err"; then
        ok "localhost-profile-loaded-by-kubelet (the sidecar's seccomp is deploy/seccomp/clrattach.json)"
    else
        fail localhost-profile-loaded-by-kubelet "container '$cid': $(tail -c 300 "$WORK/s4-prof.err")"
    fi
    if K logs -n shop "$POD" 2>&1 | grep -q '^ready '; then
        ok localhost-default-container-is-app
    else
        fail localhost-default-container-is-app "$(K logs -n shop "$POD" 2>&1 | head -3 | tr '\n' ' ')"
    fi
else
    fail localhost-profile-attached "$(tail -c 300 "$WORK/s4.out") $(K get pods -n shop 2>&1 | tail -2 | tr '\n' ' ')"
fi
K delete deployment -n shop orders-api --ignore-not-found >/dev/null 2>&1
until_ok 90 gone shop "$SEL"

# ---- the native-sidecar overlay before Kubernetes 1.28 -----------------------------------------
# What its comment says: kubectl's validation refuses restartPolicy on an init container; with
# validation off the server drops the field and the pod never leaves Init:0/1.
k=$(shipped native "$ROOT/deploy/overlays/native-sidecar")
if K apply -k "$k" >"$WORK/native.out" 2>&1; then
    fail native-sidecar-refused-before-1.28 "applied: $(head -c 300 "$WORK/native.out")"
elif grep -q 'restartPolicy' "$WORK/native.out"; then
    ok "native-sidecar-refused-before-1.28 ($(grep -o 'unknown field[^,]*restartPolicy[^,]*' "$WORK/native.out" | head -1))"
else
    fail native-sidecar-refused-before-1.28 "$(head -c 300 "$WORK/native.out")"
fi
if K apply -k "$k" --validate=false >"$WORK/native.out" 2>&1 && until_ok 60 some shop "$SEL"; then
    sleep 20
    POD=$(pod_of shop "$SEL")
    st=$(K get pod -n shop "$POD" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
init = p["spec"]["initContainers"][0]
ist = (p["status"].get("initContainerStatuses") or [{}])[0].get("state", {})
app = [s.get("state", {}) for s in p["status"].get("containerStatuses") or []]
print("restartPolicy=%s init=%s app=%s" % (init.get("restartPolicy", "dropped"), ",".join(ist),
      ",".join(",".join(s) for s in app)))')
    case $st in
    "restartPolicy=dropped init=running app=waiting") ok "native-sidecar-hangs-init-before-1.28 ($st after 20 s)" ;;
    *) fail native-sidecar-hangs-init-before-1.28 "$st" ;;
    esac
else
    fail native-sidecar-hangs-init-before-1.28 "$(head -c 300 "$WORK/native.out")"
fi
K delete deployment -n shop orders-api --ignore-not-found >/dev/null 2>&1

# ---- 2 and 9. the inject component in a user's kustomization: docs/sidecar.md's snippet --------
# The snippet verbatim, next to a checkout of clrattach (a symlink to this tree), with the user's
# own Deployment and service account in their own namespace; the suite's hostNetwork patch goes
# in a kustomization around it. 8: the same user, in another namespace, without runAsGroup.
consumer() {
    local ns=$1 group=$2 d=$WORK/consumer
    mkdir -p "$d/$ns"
    ln -sfn "$ROOT" "$d/clrattach"
    python3 - "$ROOT/docs/sidecar.md" "$ns" >"$d/$ns/kustomization.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sec = text[text.index("## Adding it to your own Deployment"):]
block = re.search(r"```yaml\n(.*?)```", sec, re.S).group(1)
print(block.replace("namespace: billing\n", "namespace: %s\n" % sys.argv[2], 1), end="")
PY
    cat >"$d/$ns/deployment.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: billing}
spec:
  selector: {matchLabels: {app: billing}}
  template:
    metadata: {labels: {app: billing}}
    spec:
      serviceAccountName: billing
      securityContext:
        runAsNonRoot: true
        runAsUser: 1654
${group:+        runAsGroup: $group}
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: web
        image: $APP_IMAGE
        command: [/usr/share/dotnet/dotnet, /app/Billing.dll]
        args: [--seconds, "86400"]
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
EOF
    # The user's own namespace and service account exist before they apply.
    kubectl kustomize "$d/$ns" >"$WORK/$ns.out" 2>&1 &&
        K create namespace "$ns" >/dev/null && K create serviceaccount billing -n "$ns" >/dev/null &&
        K apply -k "$(shipped "run-$ns" "$d/$ns")" >"$WORK/$ns.out" 2>&1
}
if consumer billing 1654; then
    ok "component-docs-snippet-applies (docs/sidecar.md, namespace billing)"
else
    fail component-docs-snippet-applies "$(tail -c 400 "$WORK/billing.out")"
fi
consumer ledger "" || fail gid0-applies "$(tail -c 400 "$WORK/ledger.out")"
if wait_pod billing app=billing; then
    BILLING_POD=$POD
    if wait_report billing "$POD" web "$REPORT"; then
        ok "component-attached ($POD)"
    else
        fail component-attached "sidecar: $(logs_of billing "$POD" clrattach)"
    fi
    if wait_events billing "$POD" ProfilerAttached 1 web; then
        ok "component-event (namespace billing, spec.containers{web})"
    else
        fail component-event "sidecar: $(logs_of billing "$POD" clrattach)"
    fi
else
    fail component-attached "$(K get pods -n billing 2>&1 | tail -2 | tr '\n' ' ')"
fi
# 9. RBAC: the Role and RoleBinding of deploy/rbac serve the user's namespace and service account,
# and nobody else.
can() { K auth can-i "$1" "$2" -n "$3" --as "system:serviceaccount:$4" 2>/dev/null; }
got="$(can create events.events.k8s.io billing billing:billing) $(can patch events billing billing:billing)"
got="$got $(can get pods billing billing:billing) $(can create events.events.k8s.io billing billing:default)"
got="$got $(can create events.events.k8s.io shop billing:billing)"
if [ "$got" = "yes yes yes no no" ] && [ -n "${BILLING_POD:-}" ] &&
    [ "$(event_count billing "$BILLING_POD" ProfilerAttached web)" -ge 1 ]; then
    ok "rbac-own-namespace-and-service-account (billing:billing may, billing:default and other namespaces may not; its Event stored)"
else
    fail rbac-own-namespace-and-service-account "can-i: $got"
fi

# ---- 8. the app's image gives the uid only: the app runs with gid 0 ----------------------------
if wait_pod ledger app=billing; then
    g=$(K exec -n ledger "$POD" -c web -- id -g 2>&1)
    [ "$g" = 0 ] && ok "gid0-app-runs-as-1654:0 (the image's USER 1654:1654, no runAsGroup)" ||
        fail gid0-app-runs-as-1654:0 "id -g: $g"
    sleep 10
    if report_ok ledger "$POD" web "$REPORT"; then
        fail gid0-sidecar-cannot-attach "it attached"
    else
        ok "gid0-sidecar-cannot-attach (1654:1654 cannot read a 1654:0 process)"
    fi
    # What the sidecar says about it: the mismatch, by name, and the runAsGroup to set.
    logs=$(K logs -n ledger "$POD" -c clrattach 2>&1)
    if printf '%s' "$logs" | grep -qi 'gid' && printf '%s' "$logs" | grep -q 'runAsGroup'; then
        ok "gid0-sidecar-names-the-mismatch ($(printf '%s' "$logs" | grep -i gid | head -1 | cut -c1-200))"
    else
        fail gid0-sidecar-names-the-mismatch "the sidecar said: $(printf '%s' "$logs" | tail -3 | tr '\n' ' ' | cut -c1-300)"
    fi
else
    fail gid0-app-runs-as-1654:0 "$(K get pods -n ledger 2>&1 | tail -2 | tr '\n' ' ')"
fi
K delete deployment -n billing billing --wait=false >/dev/null 2>&1
K delete deployment -n ledger billing --wait=false >/dev/null 2>&1

# ---- 10. startup-suspend: the app starts paused, the sidecar loads the profiler at startup -----
# deploy/overlays/startup-suspend as shipped (the base with the component). The app's runtime
# waits, paused, until the sidecar (an ordinary container here: kubelet 1.20 has no native
# sidecars, so the two start in no defined order) sends StartupProfiler and ResumeRuntime; the app
# then runs with the sample profiler loaded at startup, and the Event says so.
startup_report_ok() {
    K exec -n "$1" "$2" -c app -- cat "$3" 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if json.loads(sys.stdin.read()).get("load") == "startup" else 1)' 2>/dev/null
}
app_ran() { K logs -n "$1" "$2" -c app 2>/dev/null | grep -q '^ready '; }
k=$(shipped startup-suspend "$ROOT/deploy/overlays/startup-suspend")
if K apply -k "$k" >"$WORK/s10-apply.out" 2>&1 && wait_pod shop "$SEL"; then
    SP=$POD
    env=$(K get pod -n shop "$SP" -o 'jsonpath={.spec.containers[?(@.name=="app")].env[?(@.name=="DOTNET_DefaultDiagnosticPortSuspend")].value}')
    args=$(K get pod -n shop "$SP" -o 'jsonpath={.spec.containers[?(@.name=="clrattach")].args}')
    if [ "$env" = 1 ] && printf '%s' "$args" | grep -q -- '--startup'; then
        ok "startup-suspend-applied ($SP: the app paused at startup, the sidecar as watch --startup)"
    else
        fail startup-suspend-applied "env '$env' args $args"
    fi
    if until_ok 60 startup_report_ok shop "$SP" "$REPORT"; then
        ok "startup-suspend-loaded-at-startup (the sample profiler's report says load: startup)"
    else
        fail startup-suspend-loaded-at-startup "sidecar: $(logs_of shop "$SP" clrattach)"
    fi
    if until_ok 60 app_ran shop "$SP"; then
        ok "startup-suspend-app-runs (resumed: its Main ran)"
    else
        fail startup-suspend-app-runs "app: $(logs_of shop "$SP" app) sidecar: $(logs_of shop "$SP" clrattach)"
    fi
    if wait_events shop "$SP" ProfilerLoadedAtStartup 1 app; then
        ok "startup-suspend-event (ProfilerLoadedAtStartup)"
    else
        fail startup-suspend-event "sidecar: $(logs_of shop "$SP" clrattach)"
    fi
else
    fail startup-suspend-applied "$(tr '\n' ' ' <"$WORK/s10-apply.out" | cut -c1-300) $(K get pods -n shop 2>&1 | tail -2 | tr '\n' ' ')"
fi
K delete deployment -n shop orders-api --wait=false >/dev/null 2>&1

# ---- 11. listen mode as shipped: deploy/base with components/listen, as docs/sidecar.md says ----
# The composition of the docs' "Listen mode" snippet (the base and the component), applied as
# shipped. The app's root is read-only: the component gives the sample profiler a report path on
# the shared volume (CLRPROBE_OUT); without it every startup load failed with
# ERROR_WRITE_PROTECT.
LISTEN_REPORT=/clrattach-diag/clrprobe-report.json
k=$(shipped listen "$ROOT/deploy/base" "$ROOT/deploy/components/listen")
K delete deployment -n shop orders-api --wait=true --timeout=60s >/dev/null 2>&1
if K apply -k "$k" >"$WORK/s11-apply.out" 2>&1 && wait_pod shop "$SEL"; then
    LP=$POD
    spn=$(K get pod -n shop "$LP" -o 'jsonpath={.spec.shareProcessNamespace}')
    [ "$spn" = false ] && ok "listen-component-applied ($LP: no shared PID namespace)" ||
        fail listen-component-applied "shareProcessNamespace '$spn'"
    if until_ok 60 startup_report_ok shop "$LP" "$LISTEN_REPORT"; then
        ok "listen-component-loads-the-sample-profiler (its report on the shared volume says load: startup)"
    else
        fail listen-component-loads-the-sample-profiler "sidecar: $(logs_of shop "$LP" clrattach)"
    fi
    until_ok 60 app_ran shop "$LP" && ok "listen-component-app-runs (resumed)" ||
        fail listen-component-app-runs "app: $(logs_of shop "$LP" app)"
    if wait_events shop "$LP" ProfilerLoadedAtStartup 1 app; then
        ok "listen-component-event (ProfilerLoadedAtStartup)"
    else
        fail listen-component-event "sidecar: $(logs_of shop "$LP" clrattach)"
    fi
else
    fail listen-component-applied "$(tr '\n' ' ' <"$WORK/s11-apply.out" | cut -c1-300) $(K get pods -n shop 2>&1 | tail -2 | tr '\n' ' ')"
fi
K delete deployment -n shop orders-api --wait=true --timeout=60s >/dev/null 2>&1

# 11b. The same composition with the report path on the app's read-only root (what the component
# shipped before): the load fails with ERROR_WRITE_PROTECT, and the Warning's note quotes that
# answer (the verification's), not StartupProfiler's S_OK.
cat >>"$k/kustomization.yaml" <<'EOK'
- target: {kind: Deployment}
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: any}
    spec:
      template:
        spec:
          containers:
          - name: app
            env:
            - {name: CLRPROBE_OUT, value: /clrprobe-report.json}
EOK
warn_note() {
    K get events.events.k8s.io -n shop -o json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    if e.get("regarding", {}).get("name") == sys.argv[1] and e.get("reason") == "ProfilerStartupLoadFailed":
        print(e.get("note", "")); break' "$1"
}
if K apply -k "$k" >"$WORK/s11b-apply.out" 2>&1 && wait_pod shop "$SEL"; then
    LP=$POD
    note=""
    for _ in $(seq 60); do note=$(warn_note "$LP"); [ -n "$note" ] && break; sleep 1; done
    case $note in
    *0x80070013*) case $note in *"S_OK 0x00000000"*) fail listen-failed-load-warning-hresult "$note" ;;
                  *) ok "listen-failed-load-warning-hresult (the note quotes 0x80070013)" ;; esac ;;
    *) fail listen-failed-load-warning-hresult "note '$note'; sidecar: $(logs_of shop "$LP" clrattach)" ;;
    esac
else
    fail listen-failed-load-warning-hresult "$(tr '\n' ' ' <"$WORK/s11b-apply.out" | cut -c1-300)"
fi
K delete deployment -n shop orders-api --wait=true --timeout=60s >/dev/null 2>&1

# ---- 12. the README's plugin line on the README's own deployment -------------------------------
scenario_plugin_on_base

# ---- 13. the plugin with the rights docs/kubectl-debug.md lists, read as a reader would -------
# "create events" granted on the core group only (apiGroups [""]): the plugin's events.k8s.io/v1
# fallback Event is forbidden, and it posts the same Event as core/v1. The pod has no token of
# its own, so the fallback is the only Event there is.
if oncall_pod oncall-rbac notoken; then
    cat >"$WORK/oncall-role.yaml" <<EOR
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: oncall, namespace: shop}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: ["apps"], resources: [deployments, statefulsets], verbs: [get]}
- {apiGroups: [""], resources: [pods/ephemeralcontainers], verbs: [get, update]}
- {apiGroups: [""], resources: [pods/attach], verbs: [create]}
- {apiGroups: [""], resources: [pods/log], verbs: [get]}
- {apiGroups: [""], resources: [events], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: oncall, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: oncall}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: oncall}
EOR
    K apply -f "$WORK/oncall-role.yaml" >/dev/null
    plugin oncall-rbac -n shop -c app --clsid "$PROBE_CLSID" --as=oncall -o json --name clrattach-rbac \
        --client-data out=/clrattach-profilers/rbac-report.json --timeout 90
    core=$(K get events -n shop --field-selector involvedObject.name=oncall-rbac -o json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["items"] if e["reason"] == "ProfilerAttached"))')
    if [ "$RC" = 0 ] && grep -q 'Event posted from here as core/v1' "$WORK/plugin.out" && [ "${core:-0}" -ge 1 ]; then
        ok "plugin-rbac-core-events-only (the fallback Event posted as core/v1)"
    else
        fail plugin-rbac-core-events-only "rc $RC, core Events $core: $(tail -c 500 "$WORK/plugin.out") $(tail -c 300 "$WORK/plugin.err")"
    fi
    K delete pod -n shop oncall-rbac --wait=false >/dev/null 2>&1
else
    fail plugin-rbac-core-events-only "no oncall pod: $(K get pods -n shop 2>&1 | tail -2 | tr '\n' ' ')"
fi
