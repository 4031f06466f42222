#!/usr/bin/env bash
# What `clrattach agent` (the static binary, as the DaemonSet ships it, with its defaults: 1 s
# scan interval, seccomp on, Events on) costs and how fast it acts, against the real
# kube-apiserver and etcd of tests/apiserver (tests/apiserver/server.sh starts them; the
# scenario's helpers come from tests/apiserver/agent.sh), its pods bound to a node name of ours:
#   - annotation to attach: --pods running .NET apps, each in a cgroup named as containerd's
#     systemd driver names a container, their pods annotated one at a time (a merge patch of the
#     pod's metadata, as `kubectl annotate` sends it); from the patch's answer to the agent's
#     result line (stamped as it leaves the agent), to its Event's eventTime and to the probe's
#     Initialize (its report's attach_unix_ms: the profiler loaded); p50 and p95. The result
#     comes after watch's 2 s settle. The attach's own duration_ms (the same result) is the
#     baseline of the same run: what is left is the follower, the judgement, the wait for a scan.
#   - idle: --idle-pods `sleep`s, each in a container-named cgroup, with their Pod objects for
#     the node (--annotated of them annotated with a profile they may use, 10 with one they may
#     not), the agent's utime + stime (with its filesystem helper's, its child) over
#     --idle-seconds once the processes are past their young phase, its VmRSS and VmHWM; beside
#     it over the same window, `clrattach watch` with a selector nothing matches at the agent's
#     interval (the scan alone, on the same /proc): the ratio is what following the pods adds.
#     Twice: on the machine's /proc, and in a PID namespace of its own (a quiet node: only the
#     pods' processes, the agent and the watch).
# A measurement, not a test: it fails only when a step cannot run. Prints a Markdown report and
# keeps it in $BUILD/bench/agent.md. Needs root, what tests/apiserver/run.sh needs (the
# kube-apiserver it builds and caches), `make all target static`.
# Usage: bench/agent.sh [--pods N] [--idle-pods N] [--annotated N] [--idle-seconds S]
#        (make bench-agent)
set -u
PODS=20
IDLE_PODS=100
ANNOTATED=20
IDLE_SECONDS=60
while [ $# -gt 0 ]; do
    case $1 in
    --pods) PODS=$2; shift ;;
    --idle-pods) IDLE_PODS=$2; shift ;;
    --annotated) ANNOTATED=$2; shift ;;
    --idle-seconds) IDLE_SECONDS=$2; shift ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for v in "$PODS" "$IDLE_PODS" "$IDLE_SECONDS"; do
    case $v in '' | *[!0-9]* | 0) echo "bench: counts and seconds take a positive number, not '$v'" >&2; exit 2 ;; esac
done
case $ANNOTATED in '' | *[!0-9]*) echo "bench: --annotated takes a number" >&2; exit 2 ;; esac
[ $((ANNOTATED + 10)) -le "$IDLE_PODS" ] || { echo "bench: --annotated must leave 10 pods of --idle-pods" >&2; exit 2; }

# shellcheck source=../tests/e2e/lib.sh
. "$(dirname "$0")/../tests/e2e/lib.sh"
require_env
B="$ROOT/$BUILD/bench"
mkdir -p "$B"
APISERVER=$ROOT/build/apiserver/kube-apiserver
STATIC=$ROOT/build/static/clrattach
NS=agent-ok # the kubeconfig's namespace (tests/apiserver/server.sh)
[ -x "$STATIC" ] || { echo "bench: $STATIC missing (make static)" >&2; exit 1; }
CLRATTACH=$STATIC
timeout 3000 "$ROOT/tests/apiserver/build-apiserver.sh" >/dev/null ||
    { echo "bench: kube-apiserver could not be built (build/apiserver/build.log)" >&2; exit 1; }
# shellcheck source=../tests/apiserver/server.sh
. "$ROOT/tests/apiserver/server.sh"
# shellcheck source=../tests/apiserver/agent.sh
. "$ROOT/tests/apiserver/agent.sh"
mkdir -p "$PKI"
gen_pki || { echo "bench: openssl: $(cat "$PKI/openssl.log")" >&2; exit 1; }
apiserver_config
AGB_CG=
bench_cleanup() {
    stop_servers
    cleanup_targets
    [ -n "$AGB_CG" ] && find "$AGB_CG" -depth -type d -exec rmdir {} \; 2>/dev/null
}
trap bench_cleanup EXIT
trap 'exit 143' TERM INT
start_etcd && start_apiserver "$WORK/apiserver.log" ||
    { echo "bench: etcd or kube-apiserver did not start (KEEP_WORK=1 keeps $WORK)" >&2; exit 1; }
D=$WORK/agent
mkdir -p "$D"
base=$(findmnt -t cgroup2 -n -o TARGET | head -n1)
[ -n "$base" ] && [ -w "$base" ] || { echo "bench: no writable cgroup v2 hierarchy" >&2; exit 1; }
AG_CG=$base/clrattach-bench.slice
AGB_CG=$AG_CG
ag_setup "$D" >/dev/null || { echo "bench: deploy/agent's RBAC, namespaces, token" >&2; exit 1; }
hexid() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# The admin's calls straight to the API (no kubectl start per call): api.py METHOD PATH [BODY].
cat >"$D/api.py" <<'PY'
import json, os, ssl, sys, time, urllib.request
pki, url = os.environ["PKI"], os.environ["URL"]
ctx = ssl.create_default_context(cafile=pki + "/ca.crt")
ctx.load_cert_chain(pki + "/admin.crt", pki + "/admin.key")
def call(method, path, body=None, ctype="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return json.loads(r.read())
PY

# agent_start NAME: the shipped binary with the DaemonSet's defaults (the agent has no --settle:
# its results come after watch's 2 s settle), its result lines stamped (ns) as they leave it.
# Sets AGB_PID.
agent_start() {
    local n=$1
    rm -f "$D/$n.pid"
    sh -c 'echo $$ >"$0"; exec "$@"' "$D/$n.pid" "$CLRATTACH" agent --node "$AG_NODE" \
        --profiles "$D/profiles.json" --status-file "$D/$n.status" --api-url "$URL" \
        --token-file "$D/token" --ca-file "$PKI/ca.crt" --namespace clrattach-system \
        --pod clrattach-agent-bench -o json 2>"$D/$n.err" |
        python3 -u -c '
import sys, time
for line in iter(sys.stdin.buffer.readline, b""):
    sys.stdout.write("%d %s" % (time.time_ns(), line.decode()))
    sys.stdout.flush()
' >"$D/$n.stamped" &
    ag_wait 5 test -s "$D/$n.pid" || return 1
    AGB_PID=$(cat "$D/$n.pid")
    TARGET_PIDS+=("$AGB_PID")
    ag_wait 10 grep -q 'following its pods' "$D/$n.err"
}

# ---- (a) annotation to attach ------------------------------------------------------------------
latency_bench() {
    local i id pids=()
    for i in $(seq "$PODS"); do
        id=$(hexid)
        ag_pod agent-ok "lat-$i" "$AG_NODE" && ag_status agent-ok "lat-$i" "$id" &&
            ag_app "lat-$i" "$id" || return 1
        pids+=("$AG_PID")
    done
    agent_start lat || return 1
    sleep 3 # its first list judged, every app seen once
    PYTHONPATH=$D PKI=$PKI URL=$URL python3 - "$D/lat.stamped" "$D/lat.dat" "${pids[@]}" <<'PY'
import json, sys, time, random
from api import call
stamped, out, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
def result_for(pid, deadline):
    while time.time() < deadline:
        for line in open(stamped):
            ns, _, js = line.partition(" ")
            if f'"pid":{pid},' in js:
                return int(ns) / 1e9, json.loads(js)
        time.sleep(0.005)
    return None, None
rows = []
for i, pid in enumerate(pids, 1):
    time.sleep(1 + random.random())  # a phase of the scan interval of its own
    call("PATCH", f"/api/v1/namespaces/agent-ok/pods/lat-{i}",
         {"metadata": {"annotations": {"clrattach.io/profile": "probe"}}},
         "application/merge-patch+json")
    t0 = time.time()
    t1, r = result_for(pid, t0 + 60)
    if r is None or r.get("outcome") != "attached":
        sys.exit(f"lat-{i}: no attach ({r})")
    # The probe's own stamp: when the runtime ran its Initialize (the profiler loaded).
    rep = json.load(open(f"/proc/{pid}/root/tmp/probe-agent.json"))
    rows.append([i, t0, t1, r.get("duration_ms", 0), rep["attach_unix_ms"] / 1000])
time.sleep(3)
evs = call("GET", "/apis/events.k8s.io/v1/namespaces/agent-ok/events")["items"]
def micro(s):
    import datetime
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
with open(out, "w") as f:
    for i, t0, t1, dur, tp in rows:
        ev = [e for e in evs if e.get("regarding", {}).get("name") == f"lat-{i}"
              and e.get("reason") == "ProfilerAttached"]
        te = micro(ev[0]["eventTime"]) if ev and ev[0].get("eventTime") else float("nan")
        f.write(f"{(t1 - t0) * 1000:.1f} {(te - t0) * 1000:.1f} {dur} {(tp - t0) * 1000:.1f}\n")
PY
    local rc=$?
    kill -TERM "$AGB_PID" 2>/dev/null
    for i in "${pids[@]}"; do kill -KILL "$i" 2>/dev/null; done
    ag_wait 5 sh -c "! kill -0 $AGB_PID 2>/dev/null"
    K delete pods -n agent-ok --all --grace-period=0 --force >/dev/null 2>&1
    return $rc
}

# ---- (b) idle with 100 pods' processes ----------------------------------------------------------
idle_bench() {
    local i id sl=() ids=()
    for i in $(seq "$IDLE_PODS"); do
        id=$(hexid)
        ids+=("$id")
        mkdir -p "$AG_CG/clrattach-bench-pod.slice/cri-containerd-$id.scope" || return 1
        sh -c 'echo $$ >"$0"; exec sleep 100000' "$AG_CG/clrattach-bench-pod.slice/cri-containerd-$id.scope/cgroup.procs" &
        sl+=($!)
        disown $!
        TARGET_PIDS+=($!)
    done
    # The pods, their status (the containers' IDs) and annotations through the API.
    PYTHONPATH=$D PKI=$PKI URL=$URL python3 - "$AG_NODE" "$ANNOTATED" "${ids[@]}" <<'PY' || return 1
import sys
from api import call
node, annotated, ids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for i, cid in enumerate(ids, 1):
    ann = {}
    if i <= annotated:
        ann = {"clrattach.io/profile": "probe"}
    elif i <= annotated + 10:
        ann = {"clrattach.io/profile": "nosuch"}
    pod = call("POST", "/api/v1/namespaces/agent-ok/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"idle-{i}", "annotations": ann},
        "spec": {"nodeName": node, "automountServiceAccountToken": False,
                 "containers": [{"name": "app", "image": "registry.example.com/shop/idle:1.0.0"}]}})
    pod["status"]["phase"] = "Running"
    pod["status"]["containerStatuses"] = [{
        "name": "app", "ready": True, "restartCount": 0, "imageID": "",
        "image": "registry.example.com/shop/idle:1.0.0", "containerID": "containerd://" + cid,
        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]
    call("PUT", f"/api/v1/namespaces/agent-ok/pods/idle-{i}/status", pod)
PY
    # On the machine's /proc, shared with whatever else runs on it.
    agent_start idle || return 1
    idle_measure idle "$AGB_PID" || return 1
    kill -TERM "$AGB_PID" 2>/dev/null
    for i in "${sl[@]}"; do kill -KILL "$i" 2>/dev/null; done
    ag_wait 5 sh -c "! kill -0 $AGB_PID 2>/dev/null"
    # A quiet node: a PID namespace of its own with its own /proc, where only the pods' sleeps
    # (moved into the same cgroups), the agent and the watch run, as bench/run.sh measures
    # watch at scale. The apiserver is the same, on loopback.
    printf '%s\n' "${ids[@]}" >"$D/ids"
    export -f agent_start idle_measure ag_wait
    export D CLRATTACH AG_NODE URL PKI IDLE_SECONDS AG_CG
    unshare --pid --fork --mount-proc bash -c '
        TARGET_PIDS=()
        while read -r id; do
            sh -c "echo \$\$ >\"\$0\"; exec sleep 100000" \
                "$AG_CG/clrattach-bench-pod.slice/cri-containerd-$id.scope/cgroup.procs" &
        done <"$D/ids"
        sleep 1
        agent_start quiet && idle_measure quiet "$AGB_PID"
        r=$?
        kill $(jobs -p) 2>/dev/null
        exit $r
    '
}

# idle_measure NAME AGENT_PID: `watch` started beside the agent (a selector nothing matches, the
# agent's 1 s interval);
# once past the young phase (procindex.h: PROCINDEX_YOUNG_MS) and the refusals' Events, both
# processes' CPU time (each with its filesystem helper, its child) over IDLE_SECONDS, the
# agent's and watch's RSS, into $D/NAME.dat.
idle_measure() {
    local n=$1 a=$2 w t0 t1 w0 w1 visible
    "$CLRATTACH" watch --profiler /nonexistent.so --clsid "{00000000-0000-0000-0000-000000000001}" \
        --match-cmdline "no such process anywhere" --events off --interval 1000 \
        --ready-file "$D/$n.watch.ready" \
        >/dev/null 2>"$D/$n.watch.err" &
    w=$!
    ag_wait 10 test -e "$D/$n.watch.ready" || return 1
    sleep 15
    ticks() { local s=0 p; for p in "$1" $(cat "/proc/$1/task/$1/children"); do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $s; }
    rss() { awk "/^$2/ {print \$2}" "/proc/$1/status"; }
    visible=$(ls -d /proc/[0-9]* | wc -l)
    t0=$(ticks "$a")
    w0=$(ticks "$w")
    sleep "$IDLE_SECONDS"
    t1=$(ticks "$a")
    w1=$(ticks "$w")
    echo "$IDLE_SECONDS $((t1 - t0)) $((w1 - w0)) $(getconf CLK_TCK) $visible" \
        "$(rss "$a" VmRSS) $(rss "$a" VmHWM) $(rss "$w" VmRSS)" \
        "$(wc -w <"/proc/$a/task/$a/children")" \
        "$(for p in $(cat "/proc/$a/task/$a/children"); do cat "/proc/$p/status"; done | awk '/^VmRSS/ {s += $2} END {print s + 0}')" \
        "$(grep -c ': refused' "$D/$n.status")" \
        "$(grep -c 'allowed profile=probe' "$D/$n.status")" >"$D/$n.dat"
    kill -TERM "$w" 2>/dev/null
    wait "$w" 2>/dev/null
    return 0
}

failed=0
rm -f "$D/lat.dat" "$D/idle.dat" "$D/quiet.dat"
latency_bench || { echo "bench: the latency bench failed; see $D (KEEP_WORK=1)" >&2; failed=$((failed + 1)); }
idle_bench || { echo "bench: the idle bench failed; see $D (KEEP_WORK=1)" >&2; failed=$((failed + 1)); }

python3 - "$D" "$PODS" "$IDLE_PODS" "$ANNOTATED" "$("$APISERVER" --version)" <<'PY' | tee "$B/agent.md"
import os, platform, subprocess, sys, time
d, pods, idle_pods, annotated, apiver = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))] if xs else float("nan")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
load = open("/proc/loadavg").read().split()[:3]
print(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()}: {cpu}, "
      f"{os.cpu_count()} CPUs, Linux {platform.release()}, {apiver}; load average at the end "
      f"{' '.join(load)} (the machine is shared: other builds and suites ran beside it).\n")
print("| what | figure |\n|---|---|")
lat = os.path.join(d, "lat.dat")
if os.path.exists(lat):
    rows = [list(map(float, l.split())) for l in open(lat) if l.strip()]
    res, ev, dur = [r[0] for r in rows], [r[1] for r in rows if r[1] == r[1]], [r[2] for r in rows]
    loaded = [r[3] for r in rows]
    print(f"| annotation to the profiler loaded (the probe's Initialize), {len(rows)} pods, p50 / p95 | {q(loaded, .5):.0f} ms / {q(loaded, .95):.0f} ms |")
    print(f"| annotation to the agent's result, {len(rows)} pods, p50 / p95 | {q(res, .5):.0f} ms / {q(res, .95):.0f} ms |")
    print(f"| annotation to the Event's eventTime, p50 / p95 | {q(ev, .5):.0f} ms / {q(ev, .95):.0f} ms |")
    print(f"| the attach's own duration_ms (baseline, same results), p50 / p95 | {q(dur, .5):.0f} ms / {q(dur, .95):.0f} ms |")
    left = [a - b for a, b in zip(res, dur)]
    print(f"| what is left: follower, judgement, wait for a scan, p50 / p95 | {q(left, .5):.0f} ms / {q(left, .95):.0f} ms |")
goals = []
for name, where in (("idle", "the machine's /proc (shared: other helpers' builds and suites churn processes)"),
                    ("quiet", "a quiet node: a PID namespace of its own, only the pods' processes")):
    idle = os.path.join(d, name + ".dat")
    if not os.path.exists(idle):
        continue
    v = open(idle).read().split()
    secs, at, wt, hz, visible = (float(x) for x in v[:5])
    rss, hwm, wrss, nchild, crss, refused, allowed = v[5:12]
    acpu, wcpu = at / hz * 100 / secs, wt / hz * 100 / secs
    print(f"| **idle, on {where}**: {idle_pods} pods' processes in container cgroups, {annotated} "
          f"pods annotated and allowed, 10 refused; {visible:.0f} processes visible | over {secs:.0f} s |")
    print(f"| the agent's CPU (utime + stime, with its helper's) | {at / hz:.2f} s = {acpu:.3f}% of a CPU |")
    print(f"| `watch` beside it, a selector nothing matches, 1 s interval (baseline) | {wt / hz:.2f} s = {wcpu:.3f}% of a CPU; ratio {at / wt if wt else float('inf'):.2f} |")
    print(f"| the agent's VmRSS / VmHWM | {int(rss) / 1024:.2f} MiB / {int(hwm) / 1024:.2f} MiB |")
    print(f"| its children ({nchild}: the filesystem helper), VmRSS | {int(crss or 0) / 1024:.2f} MiB |")
    print(f"| `watch`'s VmRSS (baseline) | {int(wrss) / 1024:.2f} MiB |")
    print(f"| status file: pods allowed / refused | {allowed} / {refused} |")
    goals.append(f"{name}: CPU {acpu:.3f}% ({'met' if acpu <= 0.1 else 'not met'}), RSS peak "
                 f"{int(hwm) / 1024:.2f} MiB ({'met' if int(hwm) <= 10240 else 'not met'})")
if goals:
    print("\nGoals (issue 38: idle CPU ≤ 0.1% of a CPU, RSS ≤ 10 MiB): " + "; ".join(goals) + ".")
PY
exit $failed
