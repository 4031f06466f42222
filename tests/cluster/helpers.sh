# shellcheck shell=bash
# Helpers of the cluster scenarios (tests/cluster/scenarios.sh, common.sh, cri.sh,
# scenario_otel.sh): kustomizations of deploy/ as shipped, pods waited for and read through K, the
# sample profiler's report, Events, an on-call pod without the sidecar, the kubectl plugin as an
# operator runs it. Sourced by tests/cluster/run.sh once the cluster is up (K, dk, ok, fail, WORK,
# ROOT are its).

PROBE_CLSID=$(sed -n 's/^#define CLRPROBE_CLSID[[:space:]]*"\(.*\)"/\1/p' profiler/clrprobe.h)
REPORT=/clrattach-profilers/clrprobe-report.json
SEL=app.kubernetes.io/name=orders-api

# until_ok TRIES CMD...: CMD until it succeeds, once a second (every UNTIL_STEP seconds if set).
until_ok() {
    local n=$1
    shift
    while [ "$n" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep "${UNTIL_STEP:-1}"
        n=$((n - 1))
    done
    return 1
}

# app_deployment NS NAME REPLICAS IMAGE [TEMPLATE-METADATA]: a Deployment of one .NET app, the
# shape of deploy/base without the sidecar (the pod's runAsUser/runAsGroup the app's, its root
# read-only, TMPDIR an emptyDir), on the node's network; TEMPLATE-METADATA goes into its pod
# template's metadata (", annotations: {...}").
app_deployment() {
    cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}${5:-}}
    spec:
      hostNetwork: true
      securityContext:
        runAsNonRoot: true
        runAsUser: 1654
        runAsGroup: 1654
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: app
        image: $4
        env:
        - {name: TMPDIR, value: /app-tmp}
        volumeMounts:
        - {name: app-tmp, mountPath: /app-tmp}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
      volumes:
      - name: app-tmp
        emptyDir: {sizeLimit: 64Mi}
EOF
}

# relpath PATH FROM: PATH relative to the directory FROM.
relpath() { python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$1" "$2"; }

# shipped NAME DIR [COMPONENT...]: a kustomization in $WORK/k/NAME whose only resource is DIR (a
# directory of deploy/, as shipped), with deploy/'s COMPONENTs if any, plus the suite's own patch:
# hostNetwork for every Deployment, since this node has no CNI plugin. Its patches come last (a
# scenario may append some).
shipped() {
    local d=$WORK/k/$1 dir=$2 c
    shift 2
    mkdir -p "$d"
    {
        printf '%s\n' "apiVersion: kustomize.config.k8s.io/v1beta1" "kind: Kustomization" \
            "resources:" "- $(relpath "$dir" "$d")"
        [ $# = 0 ] || echo "components:"
        for c in "$@"; do echo "- $(relpath "$c" "$d")"; done
        cat <<EOF
patches:
- target: {kind: Deployment}
  patch: '[{"op": "add", "path": "/spec/template/spec/hostNetwork", "value": true}]'
EOF
    } >"$d/kustomization.yaml"
    echo "$d"
}

# pod_of NS SELECTOR: the newest pod that is not being deleted.
pod_of() {
    K get pods -n "$1" -l "$2" -o json | python3 -c '
import json, sys
pods = [p for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")]
pods.sort(key=lambda p: p["metadata"]["creationTimestamp"])
print(pods[-1]["metadata"]["name"] if pods else "")'
}

# all_ready NS POD: every container of the pod is running and ready.
all_ready() {
    K get pod -n "$1" "$2" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
st = p["status"].get("containerStatuses") or []
sys.exit(0 if p["status"].get("phase") == "Running" and st and all(s["ready"] for s in st) else 1)'
}

# wait_pod NS SELECTOR: sets POD to the selector's pod once all its containers are ready.
wait_pod() {
    local i
    POD=
    for i in $(seq 90); do
        POD=$(pod_of "$1" "$2")
        [ -n "$POD" ] && all_ready "$1" "$POD" && return 0
        sleep 1
    done
    return 1
}

# report_ok NS POD CONTAINER FILE [SINCE-MS]: the sample profiler's report, read in the app
# container, says it attached (after SINCE-MS: a new runtime instance).
report_ok() {
    K exec -n "$1" "$2" -c "$3" -- cat "$4" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
sys.exit(0 if r.get("attach_complete") and r["attach_unix_ms"] > int(sys.argv[1]) else 1)' "${5:-0}" 2>/dev/null
}
wait_report() { until_ok 60 report_ok "$@"; }

# event_count NS POD REASON [CONTAINER]: occurrences (series counted) of the Events about the
# pod with that reason, through the events.k8s.io API.
event_count() {
    K get events.events.k8s.io -n "$1" -o json | python3 -c '
import json, sys
ns, pod, reason, ctr = sys.argv[1:5]
n = 0
for e in json.load(sys.stdin)["items"]:
    r = e.get("regarding") or {}
    if r.get("name") == pod and e.get("reason") == reason and \
            (not ctr or r.get("fieldPath") == "spec.containers{%s}" % ctr):
        n += (e.get("series") or {}).get("count", 1)
print(n)' "$1" "$2" "$3" "${4:-}"
}
# wait_events NS POD REASON AT-LEAST [CONTAINER]
wait_events() {
    local i n=0
    for i in $(seq 60); do
        n=$(event_count "$1" "$2" "$3" "${5:-}")
        [ "$n" -ge "$4" ] && return 0
        sleep 1
    done
    return 1
}

now_ms() { date +%s%3N; }
logs_of() { K logs -n "$1" "$2" -c "$3" 2>&1 | tail -n "${4:-5}" | tr '\n' ' ' | cut -c1-600; }
# kill_app NS POD CONTAINER DLL: ends the .NET app in the container (the kubelet restarts it).
# By its executable: the shell doing it has the DLL's name in its own command line.
kill_app() {
    K exec -n "$1" "$2" -c "$3" -- sh -c 'for d in /proc/[0-9]*; do
        [ "$(readlink "$d/exe")" = /usr/share/dotnet/dotnet ] && grep -q "$1" "$d/cmdline" &&
            kill "${d#/proc/}"
    done; true' sh "$4"
}
restarts() {
    K get pod -n "$1" "$2" -o "jsonpath={.status.containerStatuses[?(@.name==\"$3\")].restartCount}"
}
restarted() { [ "$(restarts "$1" "$2" "$3")" -ge "$4" ] 2>/dev/null; }
# gone NS SELECTOR: no pod of the selector is left; some: at least one is there.
gone() { [ -z "$(K get pods -n "$1" -l "$2" -o name 2>/dev/null)" ]; }
some() { ! gone "$@"; }
pod_absent() { ! K get pod -n "$1" "$2" >/dev/null 2>&1; }

# oncall_pod NAME [notoken]: deploy/base's pod as shipped, without the sidecar and without the
# shared PID namespace (the shape `kubectl debug --target` is for: a pod nobody prepared), as a
# bare Pod. Without its containerPort too: with the node's network the port is the node's, and
# the Deployment's pod holds it. "notoken": no service-account token either (the pod cannot
# post its own Event).
oncall_pod() {
    kubectl kustomize "$(shipped base "$ROOT/deploy")" | python3 -c '
import sys, yaml
name = sys.argv[1]
notoken = len(sys.argv) > 2 and sys.argv[2] == "notoken"
dep = next(d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "Deployment")
t = dep["spec"]["template"]
spec = t["spec"]
spec["containers"] = [c for c in spec["containers"] if c["name"] != "clrattach"]
spec.pop("shareProcessNamespace")
if notoken:
    spec["automountServiceAccountToken"] = False
for c in spec["containers"]:
    c.pop("ports", None)
pod = {"apiVersion": "v1", "kind": "Pod", "spec": spec,
       "metadata": {"name": name, "namespace": dep["metadata"]["namespace"],
                    "labels": {"clrattach-test/oncall": name}}}
yaml.safe_dump(pod, sys.stdout)' "$1" "${2:-}" | K apply -f - >/dev/null && wait_pod shop "clrattach-test/oncall=$1"
}

# eph_state NS POD NAME: "running", "terminated CODE", or the waiting reason; the terminated
# container's message in $WORK/NAME.msg.
eph_state() {
    K get pod -n "$1" "$2" -o json | python3 -c '
import json, sys
pod = json.load(sys.stdin)
st = next((s for s in pod["status"].get("ephemeralContainerStatuses") or [] if s["name"] == sys.argv[1]), None)
state = (st or {}).get("state") or {}
if "terminated" in state:
    open(sys.argv[2], "w").write(state["terminated"].get("message", ""))
    print("terminated %d" % state["terminated"]["exitCode"])
elif "running" in state:
    print("running")
else:
    print((state.get("waiting") or {}).get("reason", "pending"))' "$3" "$WORK/$3.msg"
}
eph_terminated() { case $(eph_state "$@") in terminated*) true ;; *) false ;; esac; }

# plugin ARGS...: deploy/kubectl-clrattach as an operator runs it (kubectl on PATH, the admin's
# kubeconfig); rc in RC, stdout/stderr in $WORK/plugin.{out,err}.
plugin() {
    KUBECONFIG=$WORK/pki/admin.kubeconfig timeout -k 5 240 "$ROOT/deploy/kubectl-clrattach" "$@" \
        >"$WORK/plugin.out" 2>"$WORK/plugin.err"
    RC=$?
}
