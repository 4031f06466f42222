#!/usr/bin/env bash
# deploy/kubectl-clrattach against a fake kubectl (tests/deploy/fake/kubectl) that records its
# command lines and answers with canned pod JSON: the exact kubectl commands, the ephemeral
# container it creates (on a 1.22+ server and on a 1.20 one), the stream and its end, and the
# Event it posts when the pod could not. tests/cluster/run.sh runs it against a real cluster.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLUGIN=$ROOT/deploy/kubectl-clrattach
PASSED=0 FAILED=0
ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CLSID='{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}'

# setup DIR RESULT_JSON LOGS [MINOR]: a pod whose "app" runs as 1654 (from the container) and has
# the generated token volume, on a server 1.MINOR (default 30); once the ephemeral container
# ends, its message is RESULT_JSON.
setup() {
    local d=$1
    mkdir -p "$d"
    : >"$d/argv"
    python3 - "$d" "$2" "${4:-30}" <<'PY'
import json, sys
d, result, minor = sys.argv[1], sys.argv[2], sys.argv[3]
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "orders-7d9c8b6f5-x2x7k", "namespace": "shop",
                    "uid": "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11", "resourceVersion": "417"},
       "spec": {"securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
                "containers": [{"name": "istio-proxy", "image": "proxy"},
                               {"name": "app", "image": "orders",
                                "securityContext": {"runAsUser": 1654, "runAsGroup": 1655}}],
                "volumes": [{"name": "data", "emptyDir": {}},
                            {"name": "kube-api-access-7xq2k", "projected": {"sources": [
                                {"serviceAccountToken": {"path": "token"}},
                                {"configMap": {"name": "kube-root-ca.crt"}}]}}]},
       "status": {}}
json.dump(pod, open(d + "/pod.json", "w"))
json.dump({"major": "1", "minor": minor + "+", "gitVersion": "v1.%s.3" % minor},
          open(d + "/version.json", "w"))
if int(minor) >= 22:   # the subresource answers with the Pod itself
    json.dump(pod, open(d + "/ephemeral.json", "w"))
else:                  # 1.16 to 1.21: an EphemeralContainers object
    json.dump({"kind": "EphemeralContainers", "apiVersion": "v1",
               "metadata": {"name": pod["metadata"]["name"], "namespace": "shop",
                            "resourceVersion": "417"}, "ephemeralContainers": None},
              open(d + "/ephemeral.json", "w"))
pod["status"]["ephemeralContainerStatuses"] = [
    {"name": "clrattach-t1", "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}}]
json.dump(pod, open(d + "/pod-running.json", "w"))
pod["status"]["ephemeralContainerStatuses"] = [
    {"name": "clrattach-t1", "state": {"terminated": {"exitCode": json.loads(result)["exit_code"],
                                                      "message": result}}}]
json.dump(pod, open(d + "/pod-done.json", "w"))
PY
    printf '%s\n' "$3" >"$d/logs.txt"
}

# again DIR: the same pod, before any ephemeral container.
again() { rm -f "$1/.seen" "$1/.attached" "$1/stdin.bin" "$1/put.json" "$1/attach.log"; : >"$1/argv"; }

run_plugin() {
    local d=$1
    shift
    FAKE_DIR=$d PATH="$ROOT/tests/deploy/fake:$PATH" "$PLUGIN" "$@" >"$d/out" 2>"$d/err"
    RC=$?
}

# created DIR PY: runs the assertions in PY over `ec`, the ephemeral container the plugin PUT,
# and `obj`, the whole object it PUT.
created() {
    python3 - "$1/put.json" "$2" <<'PY'
import json, sys
obj = json.load(open(sys.argv[1]))
holder = obj if obj.get("kind") == "EphemeralContainers" else obj["spec"]
(ec,) = holder["ephemeralContainers"]
# What an ephemeral container may have at all (the API server refuses the rest).
allowed = {"name", "image", "command", "args", "workingDir", "env", "envFrom", "volumeMounts",
           "volumeDevices", "terminationMessagePath", "terminationMessagePolicy",
           "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
           "targetContainerName"}
assert set(ec) <= allowed, set(ec) - allowed
exec(sys.argv[2])
PY
}

# 1. The pod could not post its Event (warning in the logs): the plugin posts it.
D=$WORK/noevent
RES='{"command":"attach","outcome":"attached","exit_code":0,"pid":4242,"ns_pid":1,"uid":1654,"profiler":"/profilers/linux-x64/libclrprobe.so","clsid":"{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}","delivered_path":"/tmp/clrprobe-ab12.so","duration_ms":142}'
setup "$D" "$RES" "$RES
clrattach: warning: could not report the Event: k8s: POST ...: 403 Forbidden"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 --timeout 5
EC=/api/v1/namespaces/shop/pods/orders-7d9c8b6f5-x2x7k/ephemeralcontainers
cat >"$WORK/want-argv" <<EOF
get | --raw | /version
get | pod | orders-7d9c8b6f5-x2x7k | -n | shop | -o | json
get | --raw | $EC
replace | --raw | $EC | -f | PUT
get | pod | orders-7d9c8b6f5-x2x7k | -n | shop | -o | json
logs | orders-7d9c8b6f5-x2x7k | -n | shop | -c | clrattach-t1
create | -f | - | -n | shop
EOF
sed -E 's/\| -f \| [^ ]*put.json/| -f | PUT/' "$D/argv" >"$D/argv.norm"
if [ $RC -eq 0 ] && diff -u "$WORK/want-argv" "$D/argv.norm" >"$D/diff"; then
    ok "plugin-command-lines"
else
    fail "plugin-command-lines" "exit $RC $(cat "$D/err" "$D/diff")"
fi
if created "$D" '
assert obj["kind"] == "Pod" and obj["metadata"]["resourceVersion"] == "417", obj["metadata"]
assert ec["name"] == "clrattach-t1" and ec["image"] == "registry.example.com/clrattach:0.1.0", ec
assert ec["targetContainerName"] == "app", ec
assert ec["command"] == ["/clrattach", "attach", "--pid", "1", "--profiler",
    "/profilers/linux-x64/libclrprobe.so", "--clsid", "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}",
    "-o", "json", "--events", "auto"], ec["command"]
assert "stdin" not in ec and "stdinOnce" not in ec, ec
sc = ec["securityContext"]
assert sc["runAsUser"] == 1654 and sc["runAsGroup"] == 1655 and sc["runAsNonRoot"] is True, sc
assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}, sc
assert sc["readOnlyRootFilesystem"] is True and sc["seccompProfile"] == {"type": "RuntimeDefault"}, sc
assert ec["volumeMounts"] == [{"name": "kube-api-access-7xq2k", "readOnly": True,
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}], ec["volumeMounts"]
env = {e["name"]: e for e in ec["env"]}
assert env["CLRATTACH_POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
assert env["CLRATTACH_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid"
assert env["CLRATTACH_CONTAINER_NAME"]["value"] == "app"
assert ec["terminationMessagePolicy"] == "File"
'; then ok "plugin-ephemeral-container"; else fail "plugin-ephemeral-container" "$(cat "$D/put.json")"; fi
if python3 - "$D/created.json" <<'PY'
import json, re, sys
e = json.load(open(sys.argv[1]))
assert e["apiVersion"] == "events.k8s.io/v1" and e["kind"] == "Event", e
assert re.fullmatch(r"orders-7d9c8b6f5-x2x7k\.[0-9a-f]+", e["metadata"]["name"]), e["metadata"]
assert e["metadata"]["namespace"] == "shop"
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", e["eventTime"]), e["eventTime"]
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal" and e["action"] == "AttachProfiler"
assert e["reportingController"] == "clrattach.dev/clrattach"
r = e["regarding"]
assert r == {"apiVersion": "v1", "kind": "Pod", "name": "orders-7d9c8b6f5-x2x7k", "namespace": "shop",
             "uid": "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11", "fieldPath": "spec.containers{app}"}, r
assert "libclrprobe.so {5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}" in e["note"] and "pid 1" in e["note"], e["note"]
assert not [k for k in e if k.startswith("deprecated")]
PY
then ok "plugin-posts-event"; else fail "plugin-posts-event" "$(cat "$D/created.json" "$D/err" 2>&1)"; fi
grep -qF '"outcome":"attached"' "$D/out" && ok "plugin-prints-result" || fail "plugin-prints-result" "$(cat "$D/out")"

# 2. The pod posted its Event: nothing is created, the exit code is clrattach's (3).
D=$WORK/posted
RES='{"command":"attach","outcome":"already_active","exit_code":3,"pid":4242,"ns_pid":1,"hresult":"0x8013136A","hresult_name":"CORPROF_E_PROFILER_ALREADY_ACTIVE","error":"a profiler is already loaded"}'
setup "$D" "$RES" "$RES
clrattach: reported Event shop/orders-7d9c8b6f5-x2x7k.18d0dc59c18be115 (events.k8s.io/v1, 1 request)"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop --clsid "$CLSID" --name clrattach-t1 --pid 7 --timeout 5
if [ $RC -eq 3 ] && [ ! -e "$D/created.json" ] && ! grep -q '^create' "$D/argv" &&
    created "$D" '
assert ec["targetContainerName"] == "istio-proxy", ec
assert ec["command"][2:4] == ["--pid", "7"], ec["command"]'; then
    ok "plugin-no-duplicate-event"
else
    fail "plugin-no-duplicate-event" "exit $RC $(cat "$D/argv" "$D/err")"
fi

# 3. No non-root uid in the pod spec: refused before any ephemeral container is created.
D=$WORK/root
setup "$D" '{"exit_code":0}' ""
python3 - "$D/pod.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["spec"]["securityContext"] = {}
p["spec"]["containers"][1]["securityContext"] = {}
json.dump(p, open(sys.argv[1], "w"))
PY
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1
if [ $RC -ne 0 ] && grep -q "runAsUser" "$D/err" && grep -q -- "--uid UID" "$D/err" &&
    grep -q "1654" "$D/err" && ! grep -q '^replace' "$D/argv"; then
    ok "plugin-refuses-unknown-uid"
else
    fail "plugin-refuses-unknown-uid" "exit $RC $(cat "$D/argv" "$D/err")"
fi
# ... and with --uid (the image's USER, e.g. the .NET images' APP_UID) it runs as that uid.
again "$D"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 \
    --uid 1654 --timeout 5
if [ $RC -eq 0 ] && created "$D" '
sc = ec["securityContext"]
assert sc["runAsUser"] == 1654 and sc["runAsGroup"] == 1654, sc'; then
    ok "plugin-uid-option"
else
    fail "plugin-uid-option" "exit $RC $(cat "$D/err")"
fi

# 4. Usage errors exit 2 without calling kubectl.
D=$WORK/usage
setup "$D" '{"exit_code":0}' ""
run_plugin "$D" orders-7d9c8b6f5-x2x7k
[ $RC -eq 2 ] && [ ! -s "$D/argv" ] && ok "plugin-usage" || fail "plugin-usage" "exit $RC"

# 5. A profiler directory on the operator's machine is streamed as a tar on the ephemeral
# container's stdin (kubectl attach -i once it runs), and clrattach reads it with --profiler -;
# so is a single .so. The container has stdinOnce: its stdin ends with the stream.
D=$WORK/local
RES='{"command":"attach","outcome":"attached","exit_code":0}'
setup "$D" "$RES" "$RES
clrattach: reported Event shop/x (events.k8s.io/v1, 1 request)"
mkdir -p "$D/vendor/lib"
printf 'engine' >"$D/vendor/libEngine.so"
printf 'helper' >"$D/vendor/lib/libhelper.so"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 \
    --profiler "$D/vendor" --entry libEngine.so --client-data 'conf={dir}/x' --timeout 5
if [ $RC -eq 0 ] && created "$D" '
assert ec["stdin"] is True and ec["stdinOnce"] is True, ec
c = ec["command"]
assert c[:6] == ["/clrattach", "attach", "--pid", "1", "--profiler", "-"], c
assert c[-4:] == ["--entry", "libEngine.so", "--client-data", "conf={dir}/x"], c' &&
    grep -q '^attach | orders-7d9c8b6f5-x2x7k | -n | shop | -c | clrattach-t1 | -i | -q$' "$D/argv" &&
    [ "$(tar -tf "$D/stdin.bin" | sort | tr '\n' ' ')" = "./ ./lib/ ./lib/libhelper.so ./libEngine.so " ]; then
    ok "plugin-streams-directory"
else
    fail "plugin-streams-directory" "exit $RC $(cat "$D/argv" "$D/err"; tar -tf "$D/stdin.bin")"
fi
again "$D"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 \
    --profiler "$D/vendor/libEngine.so" --timeout 5
if [ $RC -eq 0 ] && created "$D" 'assert ec["stdinOnce"] is True and ec["command"][5] == "-", ec' &&
    grep -q '^attach | .* | -i | -q$' "$D/argv" && [ "$(cat "$D/stdin.bin")" = engine ]; then
    ok "plugin-streams-file"
else
    fail "plugin-streams-file" "exit $RC $(cat "$D/argv" "$D/err")"
fi
# The stream's attach fails: the plugin attaches once more with an empty stdin, so that the
# container's input ends (clrattach exits) instead of leaving it waiting for good.
again "$D"
: >"$D/attach-fails"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 \
    --profiler "$D/vendor/libEngine.so" --timeout 5
if [ "$(grep -c '^attach ' "$D/argv")" = 2 ] && [ "$(cat "$D/attach.log" 2>/dev/null)" = empty ] &&
    grep -q 'kubectl attach failed' "$D/err"; then
    ok "plugin-ends-input-after-failed-attach"
else
    fail "plugin-ends-input-after-failed-attach" "exit $RC $(cat "$D/argv" "$D/err")"
fi
rm -f "$D/attach-fails" "$D/.attach-failed"
# image:PATH is a path in the clrattach image, never read here.
again "$D"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 \
    --profiler "image:$D/vendor/libEngine.so" --timeout 5
if [ $RC -eq 0 ] &&
    created "$D" "assert ec['command'][5] == '$D/vendor/libEngine.so' and 'stdin' not in ec, ec" &&
    ! grep -q '^attach' "$D/argv" && [ ! -e "$D/stdin.bin" ]; then
    ok "plugin-image-path"
else
    fail "plugin-image-path" "exit $RC $(cat "$D/argv" "$D/err")"
fi

# 6. Kubernetes 1.20: the EphemeralContainers object, and no securityContext (refused there), so
# only when the pod's own runAsUser/runAsGroup are the app's, which at first they are not.
D=$WORK/k120
RES='{"command":"attach","outcome":"attached","exit_code":0}'
setup "$D" "$RES" "$RES
clrattach: reported Event shop/x (events.k8s.io/v1, 1 request)" 20
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 --timeout 5
if [ $RC -ne 0 ] && grep -q 'Kubernetes 1.20 cannot give an ephemeral container a securityContext' "$D/err" &&
    grep -q '(1000:None)' "$D/err" && grep -q '1654:1655' "$D/err" && ! grep -q '^replace' "$D/argv"; then
    ok "plugin-1.20-refuses-another-pod-user"
else
    fail "plugin-1.20-refuses-another-pod-user" "exit $RC $(cat "$D/err")"
fi
python3 - "$D/pod.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["spec"]["securityContext"].update(runAsUser=1654, runAsGroup=1655)
json.dump(p, open(sys.argv[1], "w"))
PY
again "$D"
run_plugin "$D" orders-7d9c8b6f5-x2x7k -n shop -c app --clsid "$CLSID" --name clrattach-t1 --timeout 5
if [ $RC -eq 0 ] && created "$D" '
assert obj["kind"] == "EphemeralContainers" and obj["metadata"]["resourceVersion"] == "417", obj
assert "securityContext" not in ec and ec["targetContainerName"] == "app", ec'; then
    ok "plugin-1.20-ephemeral-containers-object"
else
    fail "plugin-1.20-ephemeral-containers-object" "exit $RC $(cat "$D/err" "$D/put.json")"
fi

echo "deploy-plugin: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
