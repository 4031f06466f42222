#!/usr/bin/env bash
# deploy/kubectl-clrattach against a fake kubectl (tests/deploy/fake/kubectl): canned pods whose
# ephemeral containers "run" as files say, templates rendered by the real kubectl. Checks the
# kubectl commands, the ephemeral containers it creates (1.22+ and 1.20 servers), several pods at
# once (selectors, a Deployment, mixed outcomes), the lines, the summary, the -o json document,
# the exit-code order, the kubectl flags passed through, the uid learned from the process, the
# stream and its end, the Event posted from here, and a PATH without python3.
# tests/apiserver/run.sh drives it against a real kube-apiserver, tests/cluster/run.sh against a
# real cluster.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLUGIN=$ROOT/deploy/kubectl-clrattach
PASSED=0 FAILED=0
ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CLSID='{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}'
REAL_KUBECTL=$(command -v kubectl) || { fail plugin-prerequisites "kubectl is not on PATH"; exit 1; }
FAKE_PYTHON=$(python3 -c 'import sys; print(sys.executable)')
export REAL_KUBECTL FAKE_PYTHON

ATTACHED='{"command":"attach","outcome":"attached","exit_code":0,"pid":4242,"ns_pid":1,"uid":1654,"profiler":"/profilers/linux-x64/libclrprobe.so","clsid":"{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}","delivered_path":"/tmp/clrprobe-ab12.so","duration_ms":142}'
ACTIVE='{"command":"attach","outcome":"already_active","exit_code":3,"pid":4242,"ns_pid":1,"hresult":"0x8013136A","hresult_name":"CORPROF_E_PROFILER_ALREADY_ACTIVE","error":"a profiler is already loaded"}'
NOTNET='{"command":"attach","outcome":"not_dotnet","exit_code":4,"pid":1,"error":"no diagnostic socket for pid 1 (not .NET?)","next_step":"clrattach ps"}'
LOADFAIL='{"command":"attach","outcome":"load_failed","exit_code":7,"pid":4242,"ns_pid":1,"hresult":"0x80070057","hresult_name":"E_INVALIDARG","error":"the profiler refused its \"client data\"\\path"}'
POSTED='clrattach: reported Event shop/x (events.k8s.io/v1, 1 request)'
NOTPOSTED='clrattach: warning: could not report the Event: k8s: POST ...: 403 Forbidden'

# cluster DIR [MINOR]: an empty fake cluster on a server 1.MINOR (default 30).
cluster() {
    rm -rf "$1"
    mkdir -p "$1/pods"
    : >"$1/argv"
    printf '{"major":"1","minor":"%s+","gitVersion":"v1.%s.3"}' "${2:-30}" "${2:-30}" >"$1/version.json"
}

# pod DIR NS NAME [key=value...]: a pod in the fake cluster. Keys: labels=k:v;k2:v2, phase,
# uid (the app container's runAsUser; "none" for no runAsUser anywhere), result, logs, probe
# (the uid probe's output), hang, attach-fails, conflict, first (the first container's name).
pod() {
    local d=$1 ns=$2 name=$3
    shift 3
    mkdir -p "$d/pods/$ns/$name"
    python3 - "$d/pods/$ns/$name" "$ns" "$name" "$@" <<'PY'
import json, sys, hashlib
d, ns, name = sys.argv[1:4]
kv = dict(a.split("=", 1) for a in sys.argv[4:])
h = hashlib.sha256((ns + "/" + name).encode()).hexdigest()
uid = "%s-%s-4%s-8%s-%s" % (h[:8], h[8:12], h[12:15], h[15:18], h[18:30])
labels = dict(x.split(":", 1) for x in kv.get("labels", "app:orders").split(";") if x)
app = {"name": "app", "image": "orders"}
if kv.get("uid", "1654") != "none":
    app["securityContext"] = {"runAsUser": int(kv.get("uid", "1654")), "runAsGroup": 1655}
first = {"name": kv.get("first", "istio-proxy"), "image": "proxy"}
spec = {"containers": [first, app],
        "volumes": [{"name": "data", "emptyDir": {}},
                    {"name": "kube-api-access-7xq2k", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt"}}]}}]}
if kv.get("uid") != "none":
    spec["securityContext"] = {"runAsUser": 1000, "runAsNonRoot": True}
phase = kv.get("phase", "Running")
status = {"phase": phase}
if phase == "Running":
    status["containerStatuses"] = [{"name": c["name"], "ready": True, "state": {
        "running": {"startedAt": "2025-01-01T00:00:00Z"}}} for c in spec["containers"]]
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "417",
                    "labels": labels},
       "spec": spec, "status": status}
json.dump(pod, open(d + "/pod.json", "w"))
open(d + "/result.json", "w").write(kv.get("result", "{}"))
open(d + "/logs.txt", "w").write(kv.get("logs", kv.get("result", "")) + "\n")
if "probe" in kv:
    open(d + "/probe.txt", "w").write(kv["probe"] + "\n")
if "pidprobe" in kv:
    open(d + "/pidprobe.txt", "w").write(kv["pidprobe"] + "\n")
if "share" in kv:
    spec["shareProcessNamespace"] = True
    pod["spec"] = spec
    for st in status.get("containerStatuses", []):
        st["containerID"] = "containerd://" + hashlib.sha256(st["name"].encode()).hexdigest() \
            if kv["share"] != "noid" else ""
    json.dump(pod, open(d + "/pod.json", "w"))
for f in ("hang", "attach-fails", "conflict"):
    if f in kv:
        open(d + "/" + f, "w").close()
PY
}

# deployment DIR NS NAME SELECTOR-JSON FIRST-CONTAINER
deployment() {
    mkdir -p "$1/deployments/$2"
    printf '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s","namespace":"%s"},"spec":{"selector":%s,"template":{"spec":{"containers":[{"name":"%s","image":"x"},{"name":"sidecar","image":"y"}]}}}}' \
        "$3" "$2" "$4" "$5" >"$1/deployments/$2/$3.json"
}

run_plugin() {
    local d=$1
    shift
    : >"$d/argv"
    rm -rf "$d/events"
    FAKE_DIR=$d PATH="$ROOT/tests/deploy/fake:$PATH" timeout -k 5 120 "$PLUGIN" "$@" \
        >"$d/out" 2>"$d/err"
    RC=$?
}

# check NAME PY [FILES...]: runs the assertions in PY; `out` and `err` are the run's stdout and
# stderr, `D` its directory, `argv` the kubectl command lines (lists of words), puts(pod) the
# bodies PUT for a pod (ns/name), ec(pod, name) the ephemeral container NAME PUT for it,
# events() the Events created.
check() {
    local name=$1 py=$2
    if python3 - "$D" "$py" >"$D/check.err" 2>&1 <<'PY'; then ok "$name"; else fail "$name" "exit $RC; $(tail -c 1500 "$D/check.err"); stderr: $(tail -c 800 "$D/err")"; fi
import glob, json, os, re, sys
D = sys.argv[1]
out, err = open(D + "/out", newline="").read(), open(D + "/err", newline="").read()
argv = [l.rstrip("\n").split(" | ") for l in open(D + "/argv")]
RC = int(os.environ["RC"])
ALLOWED = {"name", "image", "command", "args", "workingDir", "env", "envFrom", "volumeMounts",
           "volumeDevices", "terminationMessagePath", "terminationMessagePolicy",
           "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty", "targetContainerName"}
def puts(pod):
    return [json.load(open(f)) for f in sorted(glob.glob("%s/pods/%s/put-*.json" % (D, pod)))]
def ec(pod, name):
    body = json.load(open("%s/pods/%s/put-%s.json" % (D, pod, name)))
    holder = body if body.get("kind") == "EphemeralContainers" else body["spec"]
    (c,) = [c for c in holder["ephemeralContainers"] if c["name"] == name]
    assert set(c) <= ALLOWED, set(c) - ALLOWED
    return c
def events():
    return [json.load(open(f)) for f in sorted(glob.glob(D + "/events/*.json"))]
def lines():
    return [l for l in out.splitlines() if l]
exec(sys.argv[2])
PY
}
export RC

# ---- 1. one pod by name: the commands, the container, the Event posted from here --------------
D=$WORK/one
cluster "$D"
pod "$D" shop orders-7d9c8b6f5-x2x7k result="$ATTACHED" logs="$ATTACHED
$NOTPOSTED"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 --timeout 20
export RC
check plugin-command-lines '
verbs = [a[0] for a in argv]
assert verbs == ["get", "get", "get", "replace", "get", "logs", "get", "create"], argv
assert argv[0][1:] == ["--request-timeout=30s", "--raw", "/version"], argv[0]
assert argv[1][:7] == ["get", "--request-timeout=30s", "pod", "orders-7d9c8b6f5-x2x7k", "-n", "shop", "-o"], argv[1]
assert argv[1][7].startswith("jsonpath="), argv[1]
uri = "/api/v1/namespaces/shop/pods/orders-7d9c8b6f5-x2x7k/ephemeralcontainers"
assert argv[2][1:] == ["--request-timeout=30s", "--raw", uri], argv[2]
assert argv[3][:4] == ["replace", "--request-timeout=30s", "--raw", uri] and argv[3][4] == "-f", argv[3]
assert argv[5][1:] == ["--request-timeout=30s", "orders-7d9c8b6f5-x2x7k", "-n", "shop", "-c", "clrattach-t1"], argv[5]
assert argv[7][1:] == ["--request-timeout=30s", "-f", "-", "-n", "shop"], argv[7]
assert RC == 0, RC
'
check plugin-ephemeral-container '
(body,) = puts("shop/orders-7d9c8b6f5-x2x7k")
assert body["kind"] == "Pod" and body["metadata"]["resourceVersion"] == "417", body["metadata"]
c = ec("shop/orders-7d9c8b6f5-x2x7k", "clrattach-t1")
assert c["image"] == "registry.example.com/clrattach:0.1.0" and c["targetContainerName"] == "app", c
assert c["command"] == ["/clrattach", "attach", "--pid", "1", "--profiler",
    "/profilers/linux-x64/libclrprobe.so", "--clsid", "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}",
    "-o", "json", "--events", "auto"], c["command"]
assert "stdin" not in c and "stdinOnce" not in c, c
sc = c["securityContext"]
assert sc == {"runAsUser": 1654, "runAsGroup": 1655, "runAsNonRoot": True,
    "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}, sc
assert c["volumeMounts"] == [{"name": "kube-api-access-7xq2k", "readOnly": True,
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}], c["volumeMounts"]
env = {e["name"]: e for e in c["env"]}
assert env["CLRATTACH_POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
assert env["CLRATTACH_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid"
assert env["CLRATTACH_CONTAINER_NAME"]["value"] == "app"
assert c["terminationMessagePolicy"] == "File"
'
check plugin-posts-event '
(e,) = events()
assert e["apiVersion"] == "events.k8s.io/v1" and e["kind"] == "Event", e
assert re.fullmatch(r"orders-7d9c8b6f5-x2x7k\.[0-9a-f]+", e["metadata"]["name"]), e["metadata"]
assert e["metadata"]["namespace"] == "shop"
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", e["eventTime"]), e["eventTime"]
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal" and e["action"] == "AttachProfiler"
assert e["reportingController"] == "clrattach.dev/clrattach"
pod = json.load(open(D + "/pods/shop/orders-7d9c8b6f5-x2x7k/pod.json"))
r = e["regarding"]
assert r == {"apiVersion": "v1", "kind": "Pod", "name": "orders-7d9c8b6f5-x2x7k", "namespace": "shop",
             "uid": pod["metadata"]["uid"], "fieldPath": "spec.containers{app}"}, r
assert e["note"] == "Attached profiler libclrprobe.so {5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41} to .NET pid 1 (pid 4242 as seen from clrattach\x27s PID namespace, uid 1654) in 142 ms: /tmp/clrprobe-ab12.so", e["note"]
'
check plugin-line-and-summary '
l = lines()
assert len(l) == 2, l
assert re.fullmatch(r"shop/orders-7d9c8b6f5-x2x7k container app pid 1: attached \(exit 0\) in \d+\.\d s; Event posted from here \(the pod could not: could not report the Event: k8s: POST \.\.\.: 403 Forbidden\)", l[0]), l[0]
assert l[1] == "1 pod(s): 1 attached, 0 already active, 0 refused, 0 failed", l[1]
assert "\r" not in out and "\x1b" not in out, repr(out)
'

# ---- 2. a Deployment's replicas, mixed outcomes, --parallel 2 -----------------------------------
D=$WORK/fleet
cluster "$D"
deployment "$D" shop orders '{"matchLabels":{"app":"orders"},"matchExpressions":[{"key":"tier","operator":"In","values":["web","api"]},{"key":"canary","operator":"DoesNotExist"}]}' app
pod "$D" shop orders-a labels="app:orders;tier:web" result="$ATTACHED" logs="$ATTACHED
$POSTED"
pod "$D" shop orders-b labels="app:orders;tier:api" result="$ACTIVE" logs="$ACTIVE
$POSTED"
pod "$D" shop orders-c labels="app:orders;tier:web" result="$NOTNET" logs="$NOTNET
$POSTED"
pod "$D" shop orders-d labels="app:orders;tier:web" phase=Pending
pod "$D" shop orders-e labels="app:orders;tier:web" hang=1 result="$ATTACHED"
pod "$D" shop orders-canary labels="app:orders;tier:web;canary:yes" result="$ATTACHED"
pod "$D" shop payments-a labels="app:payments;tier:web" result="$ATTACHED"
pod "$D" other orders-z labels="app:orders;tier:web" result="$ATTACHED"
run_plugin "$D" deployment/orders -n shop --clsid "$CLSID" --name clrattach-t1 --timeout 4 --parallel 2
check plugin-deployment-lines '
l = lines()
pods = sorted(x.split(" ")[0] for x in l[:5])
assert pods == ["shop/orders-a", "shop/orders-b", "shop/orders-c", "shop/orders-d", "shop/orders-e"], l
by = {x.split(" ")[0]: x for x in l[:5]}
assert ": attached (exit 0)" in by["shop/orders-a"] and "Event posted by the pod" in by["shop/orders-a"], by
assert ": already_active (exit 3)" in by["shop/orders-b"] and "a profiler is already loaded" in by["shop/orders-b"], by
assert ": not_dotnet (exit 4)" in by["shop/orders-c"], by
assert ": not_running (exit 20)" in by["shop/orders-d"] and "the pod is Pending" in by["shop/orders-d"], by
assert ": timeout (exit 21)" in by["shop/orders-e"] and "kubectl logs orders-e -n shop -c clrattach-t1" in by["shop/orders-e"], by
assert l[5] == "5 pod(s): 1 attached, 1 already active, 2 refused, 1 failed", l[5]
assert any(x.startswith("  not running (1): ") for x in l), l
assert any(x.startswith("  timed out (1): ") for x in l), l
assert l[-1] == "exit code 21 (the most serious outcome; the order is in --help)", l[-1]
assert RC == 21, RC
'
check plugin-deployment-selector '
sel = [a for a in argv if a[0] == "get" and "-l" in a]
assert len(sel) == 1 and sel[0][sel[0].index("-l") + 1] == "app=orders,tier in (web,api),!canary", sel
tpl = [a for a in argv if a[0] == "get" and a[2] == "deployment.apps/orders"]
assert len(tpl) == 1 and tpl[0][6].startswith("go-template="), tpl
# The template first container "app", not the pods first ("istio-proxy").
for p in ("orders-a", "orders-b", "orders-c", "orders-e"):
    assert ec("shop/" + p, "clrattach-t1")["targetContainerName"] == "app", p
# Pending: no ephemeral container at all; the others untouched.
for p in ("shop/orders-d", "shop/orders-canary", "shop/payments-a", "other/orders-z"):
    assert not puts(p), p
assert not events(), events()
'
run_plugin "$D" deployment/orders -n shop --clsid "$CLSID" --name clrattach-t2 --timeout 4 -o json
check plugin-json-document '
doc = json.loads(out)   # exactly one document, nothing else on stdout
assert doc["command"] == "kubectl-clrattach" and doc["exit_code"] == 21 == RC, (doc["exit_code"], RC)
assert doc["summary"] == {"pods": 5, "attached": 1, "already_active": 1, "refused": 2, "failed": 1}, doc["summary"]
by = {p["pod"]: p for p in doc["pods"]}
assert sorted(by) == ["orders-a", "orders-b", "orders-c", "orders-d", "orders-e"], by
for p, res in (("orders-a", "attached"), ("orders-b", "already_active"), ("orders-c", "not_dotnet")):
    e = by[p]
    assert e["outcome"] == res and e["namespace"] == "shop" and e["container"] == "app", e
    assert e["result"] == json.load(open(D + "/pods/shop/" + p + "/result.json")), e
assert by["orders-d"]["outcome"] == "not_running" and by["orders-d"]["exit_code"] == 20 and by["orders-d"]["result"] is None
assert by["orders-e"]["outcome"] == "timeout" and by["orders-e"]["exit_code"] == 21
assert by["orders-a"]["event"] == "Event posted by the pod", by["orders-a"]
# The lines and the summary went to stderr.
assert "shop/orders-a container app pid 1: attached" in err and "5 pod(s): 1 attached" in err, err
'

# A StatefulSet's pods (sts/NAME), its template's first container; a selector that matches
# nothing is said so (exit 4), with nothing created.
D=$WORK/sts
cluster "$D"
mkdir -p "$D/statefulsets/shop"
printf '{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"shop"},"spec":{"selector":{"matchLabels":{"app":"db"}},"template":{"spec":{"containers":[{"name":"app","image":"x"}]}}}}' \
    >"$D/statefulsets/shop/db.json"
pod "$D" shop db-0 labels="app:db" result="$ATTACHED" logs="$POSTED"
pod "$D" shop db-1 labels="app:db" result="$ACTIVE" logs="$POSTED"
pod "$D" shop web-0 labels="app:web" result="$ATTACHED" logs="$POSTED"
run_plugin "$D" sts/db -n shop --clsid "$CLSID" --name clrattach-s -o json
check plugin-statefulset '
doc = json.loads(out)
assert [(p["pod"], p["container"], p["outcome"]) for p in sorted(doc["pods"], key=lambda p: p["pod"])] == [
    ("db-0", "app", "attached"), ("db-1", "app", "already_active")], doc["pods"]
assert any(a[2] == "statefulset.apps/db" for a in argv), argv
assert RC == 3, RC
'
run_plugin "$D" -l app=none -n shop --clsid "$CLSID" --name clrattach-s
check plugin-selector-matches-nothing '
assert RC == 4 and "no pod matches the selector (app=none) in namespace shop" in err, (RC, err)
assert not [a for a in argv if a[0] == "replace"], argv
'

# Never a stall: pods that never end, one at a time, under a 3-second deadline: the first is
# stopped at the deadline, the others are not started; all are reported, in seconds.
D=$WORK/deadline
cluster "$D"
for p in h1 h2 h3; do pod "$D" shop "$p" labels="app:hang" hang=1 result="$ATTACHED"; done
t0=$SECONDS
run_plugin "$D" -l app=hang -n shop -c app --clsid "$CLSID" --name clrattach-dl --parallel 1 \
    --timeout 100 --deadline 3 -o json
took=$((SECONDS - t0))
check plugin-deadline-never-stalls "
doc = json.loads(out)
assert RC == 21 and $took <= 25, (RC, $took)
assert [p['outcome'] for p in doc['pods']] == ['timeout'] * 3, doc['pods']
assert sum('not started before the deadline' in p.get('message', '') for p in doc['pods']) >= 1, doc['pods']
assert doc['summary']['failed'] == 3
"

# A live count on a terminal only: under a pseudo-terminal (script) the count is rewritten in
# place with \r; piped (every run above), the output has neither \r nor an escape sequence.
D=$WORK/tty
cluster "$D"
pod "$D" shop p1 result="$ATTACHED" logs="$POSTED"
: >"$D/argv"
FAKE_DIR=$D PATH="$ROOT/tests/deploy/fake:$PATH" script -qec \
    "$(printf '%q ' "$PLUGIN" p1 -n shop -c app --clsid "$CLSID" --name clrattach-tty)" /dev/null \
    >"$D/out" 2>"$D/err" </dev/null
RC=$?
check plugin-live-count-on-tty '
assert RC == 0, RC
assert "\r\x1b[K[0/1] 0 attached, 0 already active, 0 refused, 0 failed; in progress: " in out, repr(out[:300])
assert "shop/p1 container app pid 1: attached" in out, repr(out)
'

# ---- 3. the exit code: the most serious outcome, in the documented order ------------------------
D=$WORK/order
cluster "$D"
pod "$D" shop p-attached labels="k:attached" result="$ATTACHED" logs="$POSTED"
pod "$D" shop p-active labels="k:active" result="$ACTIVE" logs="$POSTED"
pod "$D" shop p-notnet labels="k:notnet" result="$NOTNET" logs="$POSTED"
pod "$D" shop p-pending labels="k:pending" phase=Pending
pod "$D" shop p-loadfail labels="k:loadfail" result="$LOADFAIL" logs="$POSTED"
order_ok=1 order_why=""
for c in "attached:0" "attached,active:3" "active,notnet:4" "notnet,pending:20" "pending,loadfail:7" \
    "attached,active,notnet,pending,loadfail:7"; do
    run_plugin "$D" -l "k in (${c%:*})" -n shop --clsid "$CLSID" --name "clrattach-o$RANDOM" --timeout 10
    [ "$RC" = "${c#*:}" ] || { order_ok=""; order_why+=" ${c%:*} gave $RC, not ${c#*:};"; }
done
if [ -n "$order_ok" ]; then ok plugin-exit-code-order; else fail plugin-exit-code-order "$order_why"; fi
# The order is written in --help, as the plugin applies it.
"$PLUGIN" --help >"$WORK/help.txt" 2>&1
order=$(sed -n 's/^ORDER="\(.*\)"$/\1/p' "$PLUGIN")
help_order=$(sed -n '/(most serious first):$/,/\.$/p' "$WORK/help.txt" | tail -n +2 |
    grep -o '[0-9][0-9]* [a-z_]' | cut -d' ' -f1 | tr '\n' ' ')
if [ "$help_order" = "${order% 0} " ] && grep -q '^  kubectl clrattach deployment/orders-api' "$WORK/help.txt"; then
    ok "plugin-help-documents-the-order ($order)"
else
    fail plugin-help-documents-the-order "help: '$help_order' script: '$order'"
fi
# A load failure prints its error (quotes and backslashes as written) on its line, and the JSON
# document keeps it as clrattach wrote it.
run_plugin "$D" p-loadfail -n shop --clsid "$CLSID" --name clrattach-lf -o json
check plugin-json-keeps-result-text '
doc = json.loads(out)
(e,) = doc["pods"]
assert e["result"]["error"] == "the profiler refused its \"client data\"\\path", e
assert e["message"] == "the profiler refused its \"client data\"\\path", e
assert RC == 7 and doc["exit_code"] == 7
'

# ---- 4. kubectl's flags, passed on to every call -----------------------------------------------
D=$WORK/flags
cluster "$D"
echo kube-system >"$D/context-ns"
pod "$D" kube-system orders-x result="$ATTACHED" logs="$POSTED"
run_plugin "$D" orders-x -c app --clsid "$CLSID" --context=prod-eu --kubeconfig /etc/kube/config \
    --cluster eu-1 --user oncall --as alice --as-group sre --as-group=oncall --request-timeout 20s
check plugin-kubectl-flags-passed-through '
want = ["--context=prod-eu", "--kubeconfig=/etc/kube/config", "--cluster=eu-1", "--user=oncall",
        "--as=alice", "--as-group=sre", "--as-group=oncall", "--request-timeout=20s"]
assert RC == 0, RC
assert len(argv) >= 6, argv
for a in argv:
    assert a[1:1 + len(want)] == want, a
# No -n given: the pod is read without one (the context namespace), then named explicitly.
assert "-n" not in argv[1], argv[1]
(logs,) = [a for a in argv if a[0] == "logs"]
assert logs[-4:-1] == ["-n", "kube-system", "-c"], logs
assert lines()[0].startswith("kube-system/orders-x container app pid 1: attached"), lines()
'

# ---- 5. the uid learned from the process --------------------------------------------------------
D=$WORK/uid
cluster "$D"
PS1654='{"command":"ps","processes":[{"pid":1,"ns_pid":1,"uid":1654,"gid":1654,"comm":"dotnet","command_line":"dotnet /app/Orders.dll","tmpdir":"/tmp/","socket":"","state":"no_access","detail":"the target runs as uid 1654 and clrattach as uid 65532"}]}'
pod "$D" shop u-learn uid=none result="$ATTACHED" logs="$POSTED" probe="$PS1654"
pod "$D" shop u-none uid=none probe='{"command":"ps","processes":[]}'
pod "$D" shop u-root uid=none probe='{"command":"ps","processes":[{"pid":1,"ns_pid":1,"uid":0,"gid":0,"state":"no_access"}]}'
run_plugin "$D" u-learn u-none u-root -n shop -c app --clsid "$CLSID" --name clrattach-u --pid 7 -o json
check plugin-uid-learned-from-process '
p = ec("shop/u-learn", "clrattach-u-uid")
assert p["command"] == ["/clrattach", "ps", "--pid", "7", "--no-query", "-o", "json"], p
assert p["targetContainerName"] == "app" and p["image"] == "registry.example.com/clrattach:0.1.0", p
sc = p["securityContext"]
assert sc["runAsUser"] == 65532 and sc["runAsNonRoot"] is True and sc["capabilities"] == {"drop": ["ALL"]}, sc
assert sc["allowPrivilegeEscalation"] is False and sc["seccompProfile"] == {"type": "RuntimeDefault"}, sc
c = ec("shop/u-learn", "clrattach-u")
assert c["securityContext"]["runAsUser"] == 1654 and c["securityContext"]["runAsGroup"] == 1654, c
assert c["command"][2:4] == ["--pid", "7"], c
doc = json.loads(out)
by = {p["pod"]: p for p in doc["pods"]}
assert by["u-learn"]["outcome"] == "attached" and by["u-learn"]["uid_from_process"] == {"uid": 1654, "gid": 1654}, by
# No process 7: not .NET, and no attach container; a root app: refused, no attach container.
assert by["u-none"]["outcome"] == "not_dotnet" and by["u-none"]["exit_code"] == 4, by["u-none"]
assert [b["spec"]["ephemeralContainers"][-1]["name"] for b in puts("shop/u-none")] == ["clrattach-u-uid"]
assert by["u-root"]["outcome"] == "permission_denied" and "root" in by["u-root"]["message"], by["u-root"]
assert len(puts("shop/u-root")) == 1
assert RC == 5, RC
'
# ---- 5b. a pod whose containers share one PID namespace (deploy/base): pid 1 is the pause ------
# process; the app's is found by its container's ID (a probe running ps --match-cgroup), unless
# --pid names it.
D=$WORK/share
cluster "$D"
APPID=$(python3 -c 'import hashlib; print(hashlib.sha256(b"app").hexdigest())')
export APPID
PS8='{"command":"ps","processes":[{"pid":8,"ns_pid":8,"uid":1654,"gid":1655,"comm":"dotnet","command_line":"dotnet /app/Orders.dll","state":"ready"}]}'
PS2='{"command":"ps","processes":[{"pid":8,"ns_pid":8,"uid":1654,"gid":1655,"state":"ready"},{"pid":31,"ns_pid":31,"uid":1654,"gid":1655,"state":"ready"}]}'
pod "$D" shop s-one share=1 result="$ATTACHED" logs="$POSTED" pidprobe="$PS8"
pod "$D" shop s-two share=1 pidprobe="$PS2"
pod "$D" shop s-none share=1 pidprobe='{"command":"ps","processes":[]}'
pod "$D" shop s-noid share=noid
pod "$D" shop s-learn share=1 uid=none result="$ATTACHED" logs="$POSTED" pidprobe="$PS8"
run_plugin "$D" s-one s-two s-none s-noid s-learn -n shop -c app --clsid "$CLSID" --name clrattach-s -o json
check plugin-shared-pidns-finds-app '
p = ec("shop/s-one", "clrattach-s-pid")
assert p["command"] == ["/clrattach", "ps", "--match-cgroup", os.environ["APPID"], "-o", "json"], p
assert p["targetContainerName"] == "app" and p["securityContext"]["runAsUser"] == 1654, p
c = ec("shop/s-one", "clrattach-s")
assert c["command"][2:4] == ["--pid", "8"], c["command"]
doc = json.loads(out)
by = {p["pod"]: p for p in doc["pods"]}
assert by["s-one"]["outcome"] == "attached", by["s-one"]
assert by["s-two"]["outcome"] == "usage_error" and "pids 8 31" in by["s-two"]["message"] and "--pid" in by["s-two"]["message"], by["s-two"]
assert by["s-none"]["outcome"] == "not_dotnet" and "--pid" in by["s-none"]["message"], by["s-none"]
assert by["s-noid"]["outcome"] == "error" and "container ID" in by["s-noid"]["message"], by["s-noid"]
for pod in ("s-two", "s-none", "s-noid"):
    assert not [b for b in puts("shop/" + pod) if b["spec"]["ephemeralContainers"][-1]["name"] == "clrattach-s"], pod
# No uid in the spec: the probe runs as nobody, and its answer gives the uid too.
p = ec("shop/s-learn", "clrattach-s-pid")
assert p["securityContext"]["runAsUser"] == 65532, p
c = ec("shop/s-learn", "clrattach-s")
assert c["command"][2:4] == ["--pid", "8"] and c["securityContext"]["runAsUser"] == 1654 and c["securityContext"]["runAsGroup"] == 1655, c
'
run_plugin "$D" s-one -n shop -c app --clsid "$CLSID" --name clrattach-t --pid 12
check plugin-shared-pidns-pid-given '
assert not os.path.exists(D + "/pods/shop/s-one/put-clrattach-t-pid.json")
c = ec("shop/s-one", "clrattach-t")
assert c["command"][2:4] == ["--pid", "12"], c["command"]
assert RC == 0, RC
'

# --uid overrides: no probe; the spec's own runAsUser skips it too (case 1).
D=$WORK/uid
run_plugin "$D" u-learn -n shop -c app --clsid "$CLSID" --name clrattach-v --uid 2000 --gid 2001
check plugin-uid-option-skips-probe '
assert not os.path.exists(D + "/pods/shop/u-learn/put-clrattach-v-uid.json")
sc = ec("shop/u-learn", "clrattach-v")["securityContext"]
assert sc["runAsUser"] == 2000 and sc["runAsGroup"] == 2001, sc
assert RC == 0, RC
'
# Kubernetes 1.20: no securityContext on an ephemeral container, so no probe (its answer could
# not be used): refused before anything is created.
D=$WORK/uid120
cluster "$D" 20
pod "$D" shop u-learn uid=none result="$ATTACHED" probe="$PS1654"
run_plugin "$D" u-learn -n shop -c app --clsid "$CLSID" --name clrattach-u
check plugin-1.20-no-uid-refused '
assert RC == 5 and not puts("shop/u-learn"), (RC, puts("shop/u-learn"))
assert "cannot give an ephemeral container a uid" in out, out
'

# ---- 6. Kubernetes 1.20: the EphemeralContainers object, no securityContext ----------------------
D=$WORK/k120
cluster "$D" 20
pod "$D" shop p1 result="$ATTACHED" logs="$POSTED"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-t1
check plugin-1.20-refuses-another-pod-user '
assert RC == 5 and not puts("shop/p1"), RC
assert "Kubernetes 1.20 cannot give an ephemeral container a securityContext" in out, out
assert "(1000:none)" in out and "1654:1655" in out, out
'
python3 - "$D/pods/shop/p1/pod.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["spec"]["securityContext"].update(runAsUser=1654, runAsGroup=1655)
json.dump(p, open(sys.argv[1], "w"))
PY
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-t1
check plugin-1.20-ephemeral-containers-object '
(body,) = puts("shop/p1")
assert body["kind"] == "EphemeralContainers" and body["metadata"]["resourceVersion"] == "417", body
c = ec("shop/p1", "clrattach-t1")
assert "securityContext" not in c and c["targetContainerName"] == "app", c
assert RC == 0, RC
'
# A second run adds to the existing list (kept as it was), and a 409 is retried.
: >"$D/pods/shop/p1/conflict"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-t2
check plugin-adds-to-existing-and-retries-conflict '
body = json.load(open(D + "/pods/shop/p1/put-clrattach-t2.json"))
assert [c["name"] for c in body["ephemeralContainers"]] == ["clrattach-t2", "clrattach-t1"], body
assert len([a for a in argv if a[0] == "replace"]) == 2, argv
assert RC == 0, RC
'
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-t2
check plugin-name-not-reused '
assert RC == 2 and "already has an ephemeral container clrattach-t2" in out, (RC, out)
assert not [a for a in argv if a[0] == "replace"], argv
'

# ---- 7. streaming a profiler from this machine --------------------------------------------------
D=$WORK/local
cluster "$D"
pod "$D" shop p1 result="$ATTACHED" logs="$POSTED"
mkdir -p "$D/vendor/lib"
printf 'engine' >"$D/vendor/libEngine.so"
printf 'helper' >"$D/vendor/lib/libhelper.so"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-d \
    --profiler "$D/vendor" --entry libEngine.so --client-data 'conf={dir}/x "q" \b' --timeout 10
check plugin-streams-directory '
c = ec("shop/p1", "clrattach-d")
assert c["stdin"] is True and c["stdinOnce"] is True, c
assert c["command"][:6] == ["/clrattach", "attach", "--pid", "1", "--profiler", "-"], c
assert c["command"][-4:] == ["--entry", "libEngine.so", "--client-data", "conf={dir}/x \"q\" \\b"], c
att = [a for a in argv if a[0] == "attach"]
assert len(att) == 1 and att[0][1:] == ["p1", "-n", "shop", "-c", "clrattach-d", "-i", "-q"], att
import tarfile
names = sorted(tarfile.open(D + "/pods/shop/p1/stdin-clrattach-d.bin").getnames())
assert names == [".", "./lib", "./lib/libhelper.so", "./libEngine.so"], names
assert RC == 0, RC
'
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-f --profiler "$D/vendor/libEngine.so"
check plugin-streams-file '
assert ec("shop/p1", "clrattach-f")["command"][5] == "-"
assert open(D + "/pods/shop/p1/stdin-clrattach-f.bin").read() == "engine"
assert RC == 0, RC
'
: >"$D/pods/shop/p1/attach-fails"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-x --profiler "$D/vendor/libEngine.so"
check plugin-ends-input-after-failed-attach '
att = [a for a in argv if a[0] == "attach"]
assert len(att) == 2, att
assert open(D + "/pods/shop/p1/attach.log").read() == "empty\n"
assert "kubectl attach failed; ending clrattach-x" in out, out
'
rm -f "$D/pods/shop/p1/attach-fails"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-i --profiler "image:$D/vendor/libEngine.so"
check plugin-image-path '
c = ec("shop/p1", "clrattach-i")
assert c["command"][5] == D + "/vendor/libEngine.so" and "stdin" not in c, c
assert not [a for a in argv if a[0] == "attach"], argv
'

# ---- 8. what comes back from the pod is checked before it is used -------------------------------
D=$WORK/hostile
cluster "$D"
pod "$D" shop p1 result='{"outcome":"attached","exit_code":0}],"injected":[{"x":1}' logs="$POSTED"
pod "$D" shop p2 result="$ATTACHED" logs="$NOTPOSTED"
: >"$D/create-fails"
run_plugin "$D" p1 p2 -n shop -c app --clsid "$CLSID" --name clrattach-h -o json
check plugin-result-checked '
doc = json.loads(out)
assert "injected" not in doc, doc
by = {p["pod"]: p for p in doc["pods"]}
assert by["p1"]["result"] is None and by["p1"]["outcome"] == "error" and "no result" in by["p1"]["message"], by["p1"]
assert by["p2"]["event"].startswith("Event not posted: the pod could not (could not report the Event"), by["p2"]
assert "nor could this machine" in by["p2"]["event"], by["p2"]
'

# ---- 8b. the fallback Event's words, and a Role that grants events on the core group only ------
# The ephemeral container sees the app's pid as the app does (no "node-side" pid); a streamed
# profiler is named by the file it became; the pod's reason is cut at a word; a 403 on
# events.k8s.io/v1 posts the same Event as core/v1.
D=$WORK/eventwords
cluster "$D"
export LONGWHY="clrattach: warning: could not report the Event: k8s: POST /apis/events.k8s.io/v1/namespaces/shop/events: 403 Forbidden: events.events.k8s.io is forbidden: User system:serviceaccount:shop:default cannot create resource events in API group events.k8s.io in the namespace shop"
pod "$D" shop p1 result='{"command":"attach","outcome":"attached","exit_code":0,"pid":8,"ns_pid":8,"uid":1654,"profiler":"-","clsid":"{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}","delivered_path":"/tmp/clrattach-3f2a/libclrprobe.so","duration_ms":90}' logs="$LONGWHY"
: >"$D/events-group-forbidden"
run_plugin "$D" p1 -n shop -c app --clsid "$CLSID" --name clrattach-w -o json
check plugin-event-core-v1-fallback '
(e,) = events()
assert e["apiVersion"] == "v1" and e["kind"] == "Event", e
assert e["involvedObject"]["kind"] == "Pod" and e["involvedObject"]["name"] == "p1", e
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal" and e["count"] == 1, e
assert e["reportingComponent"] == "clrattach.dev/clrattach" and e["source"]["component"] == "clrattach", e
m = e["message"]
assert m.startswith("Attached profiler (streamed) libclrprobe.so {5F3C8A2E"), m
assert "to .NET pid 8 (uid 1654)" in m and "node-side" not in m and "-  " not in m, m
doc = json.loads(out)
ev = doc["pods"][0]["event"]
assert ev.startswith("Event posted from here as core/v1 (events.k8s.io/v1 was forbidden)"), ev
why = ev.split("the pod could not: ", 1)[1]
assert why.endswith("...)") and len(why) < 215, why
cut = why[:-4]
LONG = os.environ["LONGWHY"][len("clrattach: warning: "):]
assert LONG.startswith(cut) and LONG[len(cut)] == " ", (cut, LONG[len(cut):len(cut) + 10])
'

# ---- 9. usage errors: exit 2 before any kubectl call ---------------------------------------------
D=$WORK/usage
cluster "$D"
usage_ok=1 usage_why=""
for args in "p1" "p1 --clsid nope" "p1 -l app=x --clsid $CLSID" "p1 -A --clsid $CLSID" \
    "p1 --clsid $CLSID --name Bad_Name" "p1 --clsid $CLSID --parallel 0" \
    "p1 --clsid $CLSID --image bad//image" "p1 --clsid $CLSID --uid 0" "p1 --clsid $CLSID -o yaml" \
    "p1 --clsid $CLSID --bogus" "p1 --clsid $CLSID --profiler relative/none"; do
    # shellcheck disable=SC2086 # words on purpose
    run_plugin "$D" $args
    if [ "$RC" != 2 ] || [ -s "$D/argv" ]; then usage_ok="" usage_why+=" [$args] exit $RC $(head -c 200 "$D/err");"; fi
done
run_plugin "$D" p1 --clsid "$CLSID" --client-data "$(printf 'a\tb')"
if [ "$RC" != 2 ] || [ -s "$D/argv" ]; then usage_ok="" usage_why+=" [control character] exit $RC;"; fi
if [ -n "$usage_ok" ]; then ok plugin-usage; else fail plugin-usage "$usage_why"; fi

# ---- 10. bash and kubectl only: no python3 on PATH ----------------------------------------------
# ---- otel: OpenTelemetry into a Deployment's replicas, then --stop; the refusals ------------------
STARTED='{"command":"otel","outcome":"otel_started","exit_code":0,"pid":4242,"ns_pid":1,"uid":1654,"agent":"/otel-agent","action":"start","otel":{"state":"started","instrumentations":["http_client","aspnetcore"],"exporter":"otlp","protocol":"http/protobuf","endpoint":"http://otel-collector.observability:4318","service_name":"Orders.Api"},"duration_ms":310}'
SDK='{"command":"otel","outcome":"otel_sdk_present","exit_code":14,"pid":4242,"ns_pid":1,"error":"the app runs an OpenTelemetry SDK of its own (/app/OpenTelemetry.dll is mapped)","next_step":"--force starts the agent beside it"}'
STOPPED='{"command":"otel","outcome":"otel_stopped","exit_code":0,"pid":4242,"ns_pid":1,"uid":1654,"agent":"/otel-agent","action":"stop","otel":{"state":"stopped","flushed":true},"duration_ms":40}'
D=$WORK/otel
cluster "$D"
deployment "$D" shop orders '{"matchLabels":{"app":"orders"}}' app
pod "$D" shop orders-a labels="app:orders" result="$STARTED" logs="$STARTED
$NOTPOSTED"
pod "$D" shop orders-b labels="app:orders" result="$SDK" logs="$SDK
$NOTPOSTED"
run_plugin "$D" otel deployment/orders -n shop --endpoint http://otel-collector.observability:4318 \
    --service-name orders --env OTEL_METRIC_EXPORT_INTERVAL=5000 --name clrattach-o1 --timeout 4
check plugin-otel-command '
c = ec("shop/orders-a", "clrattach-o1")
assert c["command"] == ["/clrattach", "otel", "--pid", "1", "--agent", "/otel-agent", "-o", "json",
    "--events", "auto", "--endpoint", "http://otel-collector.observability:4318",
    "--service-name", "orders", "--env", "OTEL_METRIC_EXPORT_INTERVAL=5000"], c["command"]
env = {e["name"]: e for e in c["env"]}
assert env["CLRATTACH_POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
assert env["CLRATTACH_CONTAINER_NAME"]["value"] == "app"
assert RC == 14, RC
'
check plugin-otel-lines-events '
l = lines()
by = {x.split(" ")[0]: x for x in l[:2]}
assert ": otel_started (exit 0)" in by["shop/orders-a"], by
assert ": otel_sdk_present (exit 14)" in by["shop/orders-b"] and "OpenTelemetry SDK of its own" in by["shop/orders-b"], by
assert l[2] == "2 pod(s): 1 started, 0 already active, 1 refused, 0 failed", l
ev = {e["regarding"]["name"]: e for e in events()}
a, b = ev["orders-a"], ev["orders-b"]
assert a["reason"] == "OpenTelemetryStarted" and a["type"] == "Normal" and a["action"] == "ApplyStartupHook", a
assert a["note"].startswith("Started OpenTelemetry in .NET pid 1 (uid 1654) in 310 ms: service Orders.Api") and "to http://otel-collector.observability:4318" in a["note"], a["note"]
assert b["reason"] == "OpenTelemetryFailed" and b["type"] == "Warning", b
assert b["note"].startswith("OpenTelemetry start, pid 1: otel_sdk_present: the app runs an OpenTelemetry SDK"), b["note"]
'
pod "$D" shop orders-a labels="app:orders" result="$STOPPED" logs="$STOPPED
$POSTED"
pod "$D" shop orders-b labels="app:orders" result="$STOPPED" logs="$STOPPED
$POSTED"
run_plugin "$D" otel deployment/orders -n shop --stop --name clrattach-o2 --timeout 4 -o json
check plugin-otel-stop '
c = ec("shop/orders-a", "clrattach-o2")
assert c["command"] == ["/clrattach", "otel", "--pid", "1", "--agent", "/otel-agent", "-o", "json",
    "--events", "auto", "--stop"], c["command"]
doc = json.loads(out)
assert RC == 0 and [p["outcome"] for p in doc["pods"]] == ["otel_stopped", "otel_stopped"], (RC, doc)
assert doc["pods"][0]["result"]["otel"]["flushed"] is True
'
for bad in "otel deployment/orders -n shop" "otel deployment/orders -n shop --endpoint ftp://x" \
    "otel deployment/orders -n shop --endpoint http://c:4318 --clsid $CLSID" \
    "otel deployment/orders -n shop --stop --endpoint http://c:4318" \
    "deployment/orders -n shop --clsid $CLSID --endpoint http://c:4318"; do
    # shellcheck disable=SC2086 # the words are the test's own
    run_plugin "$D" $bad
    check "plugin-otel-usage: $bad" '
assert RC == 2 and open(D + "/argv").read() == "", (RC, err)
'
done

# The plugin's PATH holds bash, the (fake) kubectl and the few POSIX tools it uses, nothing else.
D=$WORK/nopython
cluster "$D"
pod "$D" shop p1 result="$ATTACHED" logs="$NOTPOSTED"
pod "$D" shop p2 uid=none result="$ATTACHED" logs="$POSTED" probe="$PS1654"
mkdir -p "$D/bin"
printf '#!/usr/bin/env bash\nexec "%s" "$@"\n' "$ROOT/tests/deploy/fake/kubectl" >"$D/bin/kubectl"
chmod 755 "$D/bin/kubectl"
for t in bash env date mktemp rm mkdir mv cat grep cut tr head sleep tar; do
    ln -s "$(command -v "$t")" "$D/bin/$t"
done
if PATH=$D/bin command -v python3 >/dev/null 2>&1; then
    fail plugin-without-python3 "python3 is on the restricted PATH"
else
    : >"$D/argv"
    FAKE_DIR=$D PATH=$D/bin "$(command -v timeout)" -k 5 120 "$PLUGIN" p1 p2 -n shop -c app --clsid "$CLSID" \
        --name clrattach-np -o json >"$D/out" 2>"$D/err"
    RC=$?
    check plugin-without-python3 '
doc = json.loads(out)
assert RC == 0 and [p["outcome"] for p in doc["pods"]] == ["attached", "attached"], (RC, doc)
assert doc["pods"][1]["uid_from_process"] == {"uid": 1654, "gid": 1654}
(e,) = events()
assert e["regarding"]["name"] == "p1" and e["reason"] == "ProfilerAttached", e
assert "command not found" not in err and "No such file" not in err, err
'
fi

echo "deploy-plugin: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
