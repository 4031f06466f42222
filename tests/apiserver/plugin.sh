# shellcheck shell=bash
# deploy/kubectl-clrattach against the real kube-apiserver 1.20 of tests/apiserver/run.sh (sourced
# by it: K, KCFG, WORK, ROOT, NS, SA, ok, fail are its), with the real kubectl: what needs no kubelet.
# The pods are resolved from a real Deployment's selector and listed with a label selector; the
# ephemeral container the plugin writes must pass the server's own validation (1.20: the
# EphemeralContainers object, no securityContext); the Event it posts from here (no kubelet, so
# the pod's own logs cannot be read) is stored and read back. The kubelet's part is played by a
# loop below: it marks the pods Running through their status subresource and, once the plugin
# has created an ephemeral container, writes that container's termination message, as the
# kubelet would from the file clrattach wrote.

plugin_scenario() {
    local d=$WORK/plugin clsid='{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}' p
    mkdir -p "$d"
    local track pods=""
    # The Deployment's two replicas (the app's user as the pod's, as 1.20 needs), proxy first.
    for track in stable canary; do
        [ $track = stable ] && p=orders-web-a || p=orders-web-b
        pods+="---
apiVersion: v1
kind: Pod
metadata: {name: $p, namespace: $NS, labels: {app: orders-web, track: $track}}
spec:
  serviceAccountName: $SA
  automountServiceAccountToken: false
  securityContext: {runAsUser: 1654, runAsGroup: 1654}
  containers:
  - {name: proxy, image: registry.example.com/proxy:1.0.0}
  - {name: app, image: registry.example.com/shop/orders-api:1.0.0}
"
    done
    K apply -f - >"$d/apply.log" 2>&1 <<EOF || { fail plugin-apiserver-setup "$(tail -3 "$d/apply.log")"; return; }
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders-web, namespace: $NS}
spec:
  selector:
    matchLabels: {app: orders-web}
    matchExpressions: [{key: track, operator: In, values: [stable, canary]}]
  template:
    metadata: {labels: {app: orders-web, track: stable}}
    spec:
      containers:
      - {name: app, image: registry.example.com/shop/orders-api:1.0.0}
      - {name: proxy, image: registry.example.com/proxy:1.0.0}
$pods---
# Same app label, another track: not the Deployment's; no runAsUser: 1.20 cannot attach to it.
apiVersion: v1
kind: Pod
metadata: {name: orders-web-old, namespace: $NS, labels: {app: orders-web, track: old}}
spec:
  serviceAccountName: $SA
  automountServiceAccountToken: false
  containers:
  - {name: app, image: registry.example.com/shop/orders-api:1.0.0}
EOF
    # The kubelet's stand-in: Running pods; each new ephemeral container ends with the result.
    cat >"$d/kubelet.py" <<'PY'
import json, subprocess, sys, time
kcfg, ns, pods, result = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
def k(*a, inp=None):
    return subprocess.run(["kubectl", "--kubeconfig", kcfg, "--request-timeout=10s", *a],
                          input=inp, capture_output=True, text=True)
end = time.time() + 150
while time.time() < end:
    for name in pods:
        r = k("get", "pod", name, "-n", ns, "-o", "json")
        if r.returncode:
            continue
        pod = json.loads(r.stdout)
        st = pod.setdefault("status", {})
        want_phase = st.get("phase") != "Running"
        have = {s["name"] for s in st.get("ephemeralContainerStatuses") or []}
        new = [c["name"] for c in pod["spec"].get("ephemeralContainers") or [] if c["name"] not in have]
        if not want_phase and not new:
            continue
        st["phase"] = "Running"
        st["containerStatuses"] = [{"name": c["name"], "image": c["image"], "imageID": "",
                                    "ready": True, "restartCount": 0,
                                    "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}}
                                   for c in pod["spec"]["containers"]]
        st.setdefault("ephemeralContainerStatuses", [])
        for n in new:
            st["ephemeralContainerStatuses"].append({
                "name": n, "image": "registry.example.com/clrattach:0.1.0", "imageID": "",
                "ready": False, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "message": result,
                                         "startedAt": "2025-01-01T00:00:00Z",
                                         "finishedAt": "2025-01-01T00:00:01Z"}}})
        k("replace", "--raw", "/api/v1/namespaces/%s/pods/%s/status" % (ns, name), "-f", "-",
          inp=json.dumps(pod))
    time.sleep(0.3)
PY
    local result='{"command":"attach","outcome":"attached","exit_code":0,"pid":4242,"ns_pid":1,"uid":1654,"profiler":"/profilers/linux-x64/libclrprobe.so","clsid":"{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}","delivered_path":"/tmp/clrprobe-ab12.so","duration_ms":142}'
    python3 "$d/kubelet.py" "$KCFG" "$NS" orders-web-a,orders-web-b,orders-web-old "$result" \
        >"$d/kubelet.log" 2>&1 &
    local kpid=$!
    TARGET_PIDS+=("$kpid")
    for _ in $(seq 100); do
        [ "$(K get pods -n "$NS" -l app=orders-web -o 'jsonpath={.items[*].status.phase}')" = "Running Running Running" ] && break
        sleep 0.2
    done

    # The Deployment's replicas: its selector (matchLabels and matchExpressions), read by the
    # real kubectl's go-template, lists exactly its two pods; the container is its template's.
    timeout -k 5 150 "$ROOT/deploy/kubectl-clrattach" deployment/orders-web -n "$NS" --clsid "$clsid" \
        --name clrattach-fleet --timeout 60 -o json --kubeconfig "$KCFG" --request-timeout 20s \
        >"$d/out" 2>"$d/err"
    local rc=$?
    if [ $rc = 0 ] && python3 - "$d/out" <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
assert sorted(p["pod"] for p in doc["pods"]) == ["orders-web-a", "orders-web-b"], doc
for p in doc["pods"]:
    assert p["outcome"] == "attached" and p["container"] == "app", p
    assert p["event"].startswith("Event posted from here"), p
assert doc["summary"]["attached"] == 2 and doc["exit_code"] == 0, doc
PY
        ok "plugin-apiserver-deployment-selector (2 replicas of a real Deployment)"
    else
        fail plugin-apiserver-deployment-selector "rc $rc: $(head -c 600 "$d/out") $(tail -c 600 "$d/err")"
    fi
    # The ephemeral container as stored: the server took it (1.20: no securityContext).
    for p in orders-web-a orders-web-b; do
        K get pod "$p" -n "$NS" -o json >"$d/$p.json" 2>/dev/null
    done
    if python3 - "$d/orders-web-a.json" "$d/orders-web-b.json" <<'PY'; then
import json, sys
for f in sys.argv[1:]:
    pod = json.load(open(f))
    (c,) = [c for c in pod["spec"]["ephemeralContainers"] if c["name"] == "clrattach-fleet"]
    assert c["targetContainerName"] == "app" and "securityContext" not in c, c
    assert c["command"][:2] == ["/clrattach", "attach"] and c["terminationMessagePolicy"] == "File", c
    env = {e["name"]: e for e in c["env"]}
    assert env["CLRATTACH_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid", env
PY
        ok "plugin-apiserver-ephemeral-container-validated (stored as the plugin wrote it)"
    else
        fail plugin-apiserver-ephemeral-container-validated "$(head -c 800 "$d/orders-web-a.json")"
    fi
    # The Events posted from here, stored with each pod's uid.
    K get events.events.k8s.io -n "$NS" -o json >"$d/events.json" 2>&1
    if python3 - "$d/events.json" "$d/orders-web-a.json" "$d/orders-web-b.json" <<'PY'; then
import json, sys
evs = json.load(open(sys.argv[1]))["items"]
for f in sys.argv[2:]:
    pod = json.load(open(f))
    mine = [e for e in evs if e["regarding"].get("uid") == pod["metadata"]["uid"]
            and e.get("reportingInstance", "").startswith("kubectl-clrattach-")]
    assert len(mine) == 1, (pod["metadata"]["name"], mine)
    e = mine[0]
    assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal", e
    assert e["regarding"]["fieldPath"] == "spec.containers{app}", e
    assert e["note"].startswith("Attached profiler libclrprobe.so {5F3C8A2E"), e["note"]
PY
        ok "plugin-apiserver-fallback-event-stored"
    else
        fail plugin-apiserver-fallback-event-stored "$(head -c 800 "$d/events.json")"
    fi
    # -l across namespaces: the three pods; the one without runAsUser is refused by 1.20 before
    # anything is created, the others already have clrattach-fleet (another --name is needed);
    # with no workload, the container is each pod's first.
    timeout -k 5 150 "$ROOT/deploy/kubectl-clrattach" -l app=orders-web -A --clsid "$clsid" \
        --name clrattach-fleet --timeout 60 --kubeconfig "$KCFG" >"$d/out2" 2>"$d/err2"
    rc=$?
    local eph
    eph=$(K get pod orders-web-old -n "$NS" -o 'jsonpath={.spec.ephemeralContainers[*].name}')
    if [ $rc = 5 ] && grep -q "^$NS/orders-web-old container app: permission_denied (exit 5)" "$d/out2" &&
        grep -q "^$NS/orders-web-a container proxy: usage_error (exit 2).*already has an ephemeral container clrattach-fleet" "$d/out2" &&
        grep -q '^3 pod(s): 0 attached, 0 already active, 3 refused, 0 failed' "$d/out2" && [ -z "$eph" ]; then
        ok "plugin-apiserver-selector-all-namespaces (3 pods, refusals reported, exit 5)"
    else
        fail plugin-apiserver-selector-all-namespaces "rc $rc eph '$eph': $(cat "$d/out2") $(tail -c 400 "$d/err2")"
    fi
    kill "$kpid" 2>/dev/null
}
