#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Events against a REAL kube-apiserver (issue 15): kube-apiserver 1.20 built from Debian's
# `kubernetes` source (build-apiserver.sh, cached in build/apiserver) with Debian's etcd 3.4, on
# loopback with TLS, RBAC, service-account tokens from the TokenRequest API and deploy/base's
# ServiceAccount, Role and RoleBinding applied. A Pod object is created (it stays Pending: there is
# no kubelet); clrattach (the dynamic build/clrattach and the static build/static/clrattach, seccomp
# filter in kill mode) attaches to real .NET targets in their own namespaces, runs like a sidecar
# of that pod (its own mount namespace with the service-account files at the kubelet's path and
# the downward-API environment), and the Events are read back through the API with kubectl.
# The kubectl plugin runs against it too (plugin.sh: selectors, its ephemeral container through
# the server's validation, its fallback Event), with EphemeralContainers on (alpha in 1.20).
#
# What the stand-in (tests/k8s/apiserver.py) cannot prove is checked here: the stored Event with
# the pod's real uid, `kubectl describe pod` and `kubectl events` showing it, the series PATCH,
# the core/v1 fallback (a second start with --runtime-config=events.k8s.io/v1=false), RBAC 403s
# (authorization runs before routing), a revoked token, the HTTP version each build speaks.
#
# Prints "ok NAME" / "FAIL NAME: reason" per check and "apiserver: N passed, M failed". Needs
# root, dotnet, kubectl, etcd, golang-1.19-go (scripts/install-deps.sh), `make all target static`.
# A missing prerequisite fails the suite, in CI and outside it; CLRATTACH_SKIP_SUITES=apiserver
# skips it (tests/suite.sh).
# Env: KEEP_WORK=1 keeps build/e2e.*/ (logs of etcd, kube-apiserver and every run).
. "$(dirname "$0")/../e2e/lib.sh"
suite_skipped apiserver && exit 0

STATIC=$ROOT/build/static/clrattach
APISERVER=$ROOT/build/apiserver/kube-apiserver
NS=shop
POD=orders-api-0
SA=orders-api
START=$(date +%s)

prereq_fail() {
    suite_cannot_run apiserver "$1"
    FAILED=$((FAILED + 1))
    finish apiserver
    exit 1
}

[ "$(id -u)" -eq 0 ] || prereq_fail "needs root (namespaces, other uids)"
for tool in kubectl etcd openssl dotnet unshare timeout curl python3; do
    command -v "$tool" >/dev/null || prereq_fail "$tool not on PATH (scripts/install-deps.sh)"
done
for f in "$CLRATTACH" "$STATIC" "$PROBE" "$TARGET_DLL"; do
    [ -e "$f" ] || prereq_fail "$f missing (make all target static)"
done

# The build is the long pole (8 to 12 minutes on 2 cores, once per machine and source version);
# the checks take about two minutes.
t0=$(date +%s)
if ! timeout 3000 "$(dirname "$0")/build-apiserver.sh"; then
    prereq_fail "kube-apiserver could not be built (see build/apiserver/build.log)"
fi
ok "apiserver-build ($(($(date +%s) - t0)) s, $("$APISERVER" --version))"

# shellcheck source=tests/apiserver/server.sh
. "$(dirname "$0")/server.sh"
mkdir -p "$PKI"
gen_pki || { fail apiserver-pki "$(cat "$PKI/openssl.log")"; finish apiserver; exit 1; }
apiserver_config
trap 'stop_servers; cleanup_targets' EXIT
# A timeout's TERM (tests/run-all.sh) must still stop etcd, kube-apiserver and the targets.
trap 'exit 143' TERM INT

fatal() {
    fail "$1" "$2"
    finish apiserver
    exit 1
}

t0=$(date +%s)
start_etcd || fatal etcd-start "$(tail -5 "$WORK/etcd.log")"
start_apiserver "$WORK/apiserver.log" ||
    fatal apiserver-start "$(grep -E '^[EF][0-9]{4}' "$WORK/apiserver.log" | tail -5)"
ok "apiserver-start (etcd and kube-apiserver on 127.0.0.1:$API_PORT ready in $(($(date +%s) - t0)) s)"

# ---- cluster objects ---------------------------------------------------------------------------
# deploy/base's ServiceAccount, Role and RoleBinding exactly as kustomize renders them (the
# Deployment needs a kubelet and is left out); a Pod that stays Pending; two more service
# accounts whose Roles lack what clrattach needs.
setup_cluster() {
    K create namespace "$NS" >/dev/null || return 1
    kubectl kustomize "$ROOT/deploy/base" >"$WORK/base.yaml" || return 1
    python3 - "$WORK/base.yaml" >"$WORK/rbac.yaml" <<'PY' || return 1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1]))
        if d and d.get("kind") in ("ServiceAccount", "Role", "RoleBinding")]
assert sorted(d["kind"] for d in docs) == ["Role", "RoleBinding", "ServiceAccount"], docs
yaml.safe_dump_all(docs, sys.stdout)
PY
    K apply -f "$WORK/rbac.yaml" >/dev/null || return 1
    K apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: $POD, namespace: $NS}
spec:
  serviceAccountName: $SA
  # No token controller runs here: the tokens come from the TokenRequest API below.
  automountServiceAccountToken: false
  containers:
  - {name: app, image: registry.example.com/shop/orders-api:1.0.0}
---
# A Role without events or pods.
apiVersion: v1
kind: ServiceAccount
metadata: {name: no-events, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: no-events, namespace: $NS}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: no-events, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: no-events}
subjects: [{kind: ServiceAccount, name: no-events, namespace: $NS}]
---
# Core events only, no events.k8s.io: the apiserver authorizes before it routes, so the
# events.k8s.io POST gets 403, never the 404 that would switch clrattach to core/v1.
apiVersion: v1
kind: ServiceAccount
metadata: {name: core-events-only, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: core-events-only, namespace: $NS}
rules:
- {apiGroups: [""], resources: [events], verbs: [create, patch]}
- {apiGroups: [""], resources: [pods], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: core-events-only, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: core-events-only}
subjects: [{kind: ServiceAccount, name: core-events-only, namespace: $NS}]
---
# Two objects for tokens to be bound to: deleting one revokes its token.
apiVersion: v1
kind: Secret
metadata: {name: token-anchor-1, namespace: $NS}
---
apiVersion: v1
kind: Secret
metadata: {name: token-anchor-2, namespace: $NS}
EOF
    POD_UID=$(K get pod "$POD" -o 'jsonpath={.metadata.uid}') && [ -n "$POD_UID" ]
}
setup_cluster || fatal cluster-setup "see $WORK (KEEP_WORK=1)"
ok "cluster-setup (deploy/base RBAC applied, pod $NS/$POD uid $POD_UID)"

# token SA [kubectl create token flags...]: a token from the TokenRequest API.
token() { K create token "$@" --duration 1h; }
TOKEN=$(token "$SA" --bound-object-kind Pod --bound-object-name "$POD") &&
    TOKEN_NO_EVENTS=$(token no-events) && TOKEN_CORE_ONLY=$(token core-events-only) &&
    TOKEN_ROT1=$(token "$SA" --bound-object-kind Secret --bound-object-name token-anchor-1) &&
    TOKEN_ROT2=$(token "$SA" --bound-object-kind Secret --bound-object-name token-anchor-2) ||
    fatal tokens "kubectl create token failed"
ok "tokens (TokenRequest API, pod- and secret-bound)"

# shellcheck source=tests/apiserver/agent.sh
. "$(dirname "$0")/agent.sh"
# APISERVER_ONLY=agent: the node agent's scenario alone (below), for working on it.
if [ "${APISERVER_ONLY:-}" = agent ]; then
    agent_scenario
    finish apiserver
    exit
fi

# ---- running clrattach like a container of the pod ---------------------------------------------
# sa_dir NAME TOKEN [CA]: a service-account directory laid out as the kubelet does it (a
# timestamped directory behind the ..data symlink, the files as links through it).
sa_dir() {
    local d=$WORK/sa/$1 ts
    ts=..$(date +%Y_%m_%d_%H_%M_%S).$RANDOM
    mkdir -p "$d/$ts"
    printf '%s' "$2" >"$d/$ts/token"
    cp "${3:-$PKI/ca.crt}" "$d/$ts/ca.crt"
    printf '%s' "$NS" >"$d/$ts/namespace"
    ln -sfn "$ts" "$d/..data_tmp" && mv -T "$d/..data_tmp" "$d/..data"
    local f
    for f in token ca.crt namespace; do [ -L "$d/$f" ] || ln -s "..data/$f" "$d/$f"; done
    echo "$d"
}
# sa_rotate DIR TOKEN: what the kubelet does when it refreshes a projected token: a new
# timestamped directory swapped in atomically behind ..data, the old one removed.
sa_rotate() {
    local old
    old=$(readlink "$1/..data")
    sa_dir "$(basename "$1")" "$2" >/dev/null
    rm -rf "${1:?}/$old"
}

SA_GOOD=$(sa_dir good "$TOKEN")
SA_NO_EVENTS=$(sa_dir no-events "$TOKEN_NO_EVENTS")
SA_CORE_ONLY=$(sa_dir core-only "$TOKEN_CORE_ONLY")
SA_WRONG_CA=$(sa_dir wrong-ca "$TOKEN" "$PKI/other-ca.crt")
SA_BOGUS=$(sa_dir bogus "bogus-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')")

# pod_run NAME BIN SADIR [VAR=VALUE...] -- CLRATTACH-ARGS...: runs BIN as a container of the pod
# would: its own mount namespace with SADIR at /var/run/secrets/kubernetes.io/serviceaccount,
# KUBERNETES_SERVICE_HOST/PORT and the downward-API variables (no pod uid: clrattach GETs the
# pod). stdout in $WORK/NAME.out, stderr in $WORK/NAME.err, the termination log in
# $WORK/NAME.tlog, exit code in RC. With BG=1 it runs in the background (pid in BG_PID).
pod_run() {
    local name=$1 bin=$2 sa=$3
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    OUT=$WORK/$name.out ERR=$WORK/$name.err TLOG=$WORK/$name.tlog
    local cmd=(timeout -k 5 "${RUN_TIMEOUT:-90}" unshare --mount --propagation private sh -c '
        mount -t tmpfs -o mode=755 tmpfs /run &&
        mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
        mount --bind "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"' "$sa"
        env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" KUBERNETES_SERVICE_HOST=127.0.0.1
        KUBERNETES_SERVICE_PORT="$API_PORT" CLRATTACH_POD_NAME="$POD"
        CLRATTACH_CONTAINER_NAME=app ${envs[@]+"${envs[@]}"} "$bin" "$@" --termination-log "$TLOG")
    if [ "${BG:-0}" = 1 ]; then
        "${cmd[@]}" >"$OUT" 2>"$ERR" &
        BG_PID=$!
        disown "$BG_PID"
        TARGET_PIDS+=("$BG_PID")
        return 0
    fi
    LOGMARK=$(wc -l <"$APILOG")
    "${cmd[@]}" >"$OUT" 2>"$ERR"
    RC=$?
}

attach_args() { echo attach --pid "$1" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json; }

# event_name ERRFILE: the Event the run reported or updated, from its log line.
event_name() {
    sed -n 's/.*\(reported\|updated\) Event [a-z0-9-]*\/\([^ ]*\) .*/\2/p' "$1" | tail -n1
}

# check_event NAME GROUP PY: reads Event NAME back through the API (GROUP events.k8s.io or core)
# and runs the assertions in PY over `e`; POD_UID is known to them, and well_formed(note).
check_event() {
    local res=events.events.k8s.io
    [ "$2" = core ] && res=events
    [ -n "$1" ] || { echo "no Event name in the log" >"$WORK/check.err"; return 1; }
    K get "$res" "$1" -o json >"$WORK/event.json" 2>"$WORK/check.err" || return 1
    POD_UID=$POD_UID python3 - "$WORK/event.json" "$3" 2>>"$WORK/check.err" <<'PY'
import json, os, sys
e = json.load(open(sys.argv[1]))
POD_UID = os.environ["POD_UID"]
def well_formed(n):
    # One sentence per part: no doubled punctuation (an ellipsis inside a text is fine), a
    # final period.
    bare = n.replace("...", "")
    return n.endswith(".") and not any(p in bare for p in ("..", ". .", ".:", ":.", ",.", ".,"))
exec(sys.argv[2])
PY
}
why() { echo "rc=$RC $(tr '\n' ' ' <"$ERR" | cut -c1-600) $(cut -c1-300 "$WORK/check.err" 2>/dev/null)"; }

# result_kept CODE: stdout's JSON and the termination log both hold the result with CODE.
result_kept() {
    [ "$RC" = "$1" ] && [ "$(json_get "$OUT" exit_code)" = "$1" ] &&
        [ "$(json_get "$TLOG" exit_code)" = "$1" ] &&
        [ -n "$(json_get "$OUT" outcome)" ] &&
        [ "$(json_get "$OUT" outcome)" = "$(json_get "$TLOG" outcome)" ]
}

# protocol_of_run: HTTP/2 or HTTP/1.1, for every request of the last run (from the apiserver's
# log: the request lines give the client's source port, the HTTP/2 server logs its connections).
protocol_of_run() {
    local ports="" p protos="" i
    for i in $(seq 30); do
        ports=$(tail -n +"$((LOGMARK + 1))" "$APILOG" | grep 'userAgent="clrattach/' |
            sed -n 's/.*srcIP="127\.0\.0\.1:\([0-9]*\)".*/\1/p' | sort -u)
        [ -n "$ports" ] && break
        sleep 0.1
    done
    [ -n "$ports" ] || { echo none; return; }
    for p in $ports; do
        # Only connections opened during the run: a source port may have been used before.
        if tail -n +"$((LOGMARK + 1))" "$APILOG" | grep -q "http2: server connection from 127.0.0.1:$p "; then
            protos="$protos HTTP/2"
        else
            protos="$protos HTTP/1.1"
        fi
    done
    echo $protos | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# requests_of_run: "VERB URI STATUS" for each request the last run made, from the apiserver's log.
requests_of_run() {
    sleep 0.2
    tail -n +"$((LOGMARK + 1))" "$APILOG" | grep 'userAgent="clrattach/' |
        sed -n 's/.*verb="\([A-Z]*\)" URI="\([^"]*\)".* resp=\([0-9]*\).*/\1 \2 \3/p'
}

# ---- each build against the real API -----------------------------------------------------------
# suite LABEL BIN PROTO: the checks both builds must pass; PROTO is the HTTP version it must speak.
suite() {
    local l=$1 bin=$2 proto=$3 n p got

    if ! start_target "$l-app" --pidns --uid 1000; then
        fail "$l-target" "the .NET target did not start"
        return
    fi
    p=$TARGET_PID
    pod_run "$l-attached" "$bin" "$SA_GOOD" -- $(attach_args "$p")
    n=$(event_name "$ERR")
    if [ "$RC" = 0 ] && result_kept 0 && check_event "$n" events.k8s.io '
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal", e
r = e["regarding"]
assert r["kind"] == "Pod" and r["name"] == "orders-api-0" and r["uid"] == POD_UID, r
assert r["fieldPath"] == "spec.containers{app}", r
assert e["reportingController"] == "clrattach.dev/clrattach" and e["action"] == "AttachProfiler", e
assert well_formed(e["note"]) and e["note"].startswith("Attached profiler libclrprobe.so "), e["note"]
'; then
        ok "$l-event-attached (stored with the pod's uid, read back through the API)"
    else
        fail "$l-event-attached" "$(why)"
    fi
    got=$(protocol_of_run)
    [ "$got" = "$proto" ] && ok "$l-speaks-$proto" || fail "$l-speaks-$proto" "saw: $got"

    pod_run "$l-already" "$bin" "$SA_GOOD" -- $(attach_args "$p")
    n=$(event_name "$ERR")
    if result_kept 3 && check_event "$n" events.k8s.io '
assert e["reason"] == "ProfilerAlreadyActive" and e["type"] == "Normal", e
assert e["regarding"]["uid"] == POD_UID, e
n = e["note"]
assert well_formed(n) and "(CORPROF_E_PROFILER_ALREADY_ACTIVE 0x8013136A). " in n, n
assert "slots are used. Next step: " in n, n
'; then
        ok "$l-event-already-active (note well-formed)"
    else
        fail "$l-event-already-active" "$(why)"
    fi

    # Not .NET: a failed attach is a Warning with the cause and the next step.
    start_not_dotnet 300
    local notnet=$NOTNET
    pod_run "$l-failed" "$bin" "$SA_GOOD" -- $(attach_args "$notnet")
    n=$(event_name "$ERR")
    if result_kept 4 && check_event "$n" events.k8s.io '
assert e["reason"] == "ProfilerAttachFailed" and e["type"] == "Warning", e
assert e["regarding"]["uid"] == POD_UID, e
assert well_formed(e["note"]) and "not_dotnet. " in e["note"] and " Next step: " in e["note"], e
'; then
        ok "$l-event-attach-failed"
    else
        fail "$l-event-attach-failed" "$(why)"
    fi

    # RBAC: a service account whose Role lacks pods and events. The pod GET (no uid given) is
    # refused first; with the uid given, the Event POST is.
    pod_run "$l-forbidden-get" "$bin" "$SA_NO_EVENTS" -- $(attach_args "$p")
    if result_kept 3 && grep -q 'warning: could not report the Event' "$ERR" &&
        grep -q 'cannot get resource \\\?"pods\\\?"' "$ERR"; then
        ok "$l-rbac-403-pod-get (result kept on stdout and in the termination log)"
    else
        fail "$l-rbac-403-pod-get" "$(why)"
    fi
    pod_run "$l-forbidden-post" "$bin" "$SA_NO_EVENTS" CLRATTACH_POD_UID="$POD_UID" -- \
        $(attach_args "$p")
    if result_kept 3 && grep -q 'cannot create resource \\\?"events\\\?" in API group \\\?"events.k8s.io' "$ERR" &&
        grep -q 'next step:.*create' "$ERR"; then
        ok "$l-rbac-403-event"
    else
        fail "$l-rbac-403-event" "$(why)"
    fi

    pod_run "$l-wrong-ca" "$bin" "$SA_WRONG_CA" -- $(attach_args "$p")
    if result_kept 3 && grep -q 'warning: could not report' "$ERR" && grep -qi 'certificate' "$ERR"; then
        ok "$l-wrong-ca"
    else
        fail "$l-wrong-ca" "$(why)"
    fi

    pod_run "$l-bogus-token" "$bin" "$SA_BOGUS" -- $(attach_args "$p")
    if result_kept 3 && grep -q 'warning: could not report' "$ERR" && grep -qi 'unauthorized\|401' "$ERR"; then
        ok "$l-bogus-token"
    else
        fail "$l-bogus-token" "$(why)"
    fi

    # A pod that does not exist: the GET answers 404. --events=required makes a successful
    # attach exit 10, and stdout and the termination log say 10 too.
    if start_target "$l-ghost-app" --pidns --uid 1000; then
        pod_run "$l-no-pod" "$bin" "$SA_GOOD" CLRATTACH_POD_NAME=no-such-pod -- \
            $(attach_args "$TARGET_PID") --events=required
        if result_kept 10 && [ "$(json_get "$OUT" outcome)" = attached ] &&
            grep -q 'pods \\\?"no-such-pod\\\?" not found' "$ERR"; then
            ok "$l-pod-missing-required-exit-10"
        else
            fail "$l-pod-missing-required-exit-10" "$(why) out: $(cat "$OUT") tlog: $(cat "$TLOG")"
        fi
    fi

    # Ephemeral container: no token of its own; the app container's (in the target's root) is
    # used, the pod name comes from HOSTNAME.
    local sadir=/run/secrets/kubernetes.io/serviceaccount
    if start_target "$l-eph-app" --pidns --uid 1000 --pre "mkdir -p /run/secrets && mount -t tmpfs tmpfs /run/secrets && mkdir -p $sadir && cp -a '$SA_GOOD/.' $sadir/"; then
        OUT=$WORK/$l-eph.out ERR=$WORK/$l-eph.err
        timeout -k 5 90 unshare --mount --propagation private sh -c \
            'mount -t tmpfs -o mode=755 tmpfs /run && exec "$@"' sh \
            env -i PATH=/usr/bin:/bin KUBERNETES_SERVICE_HOST=127.0.0.1 \
            KUBERNETES_SERVICE_PORT="$API_PORT" HOSTNAME="$POD" \
            "$bin" $(attach_args "$TARGET_PID") >"$OUT" 2>"$ERR"
        RC=$?
        n=$(event_name "$ERR")
        if [ "$RC" = 0 ] && check_event "$n" events.k8s.io '
assert e["reason"] == "ProfilerAttached" and e["regarding"]["uid"] == POD_UID, e
'; then
            ok "$l-ephemeral-uses-app-token"
        else
            fail "$l-ephemeral-uses-app-token" "$(why)"
        fi
    fi
}

# watch_run LABEL BIN SADIR CMDLINE-TAG [ARGS...]: starts `watch` as a sidecar in the background.
watch_start() {
    local l=$1 bin=$2 sa=$3 tag=$4
    shift 4
    rm -f "$WORK/$l.ready"
    BG=1 RUN_TIMEOUT=300 pod_run "$l" "$bin" "$sa" -- watch --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --match-cmdline "ClrTarget.dll --seconds $tag" \
        --ready-file "$WORK/$l.ready" -o json "$@"
    W_PID=$BG_PID W_OUT=$OUT W_ERR=$ERR
    for _ in $(seq 100); do [ -e "$WORK/$l.ready" ] && return 0; sleep 0.1; done
    return 1
}
# wait_log FILE PATTERN COUNT: until FILE has COUNT lines matching PATTERN (30 s at most).
wait_log() {
    for _ in $(seq 300); do
        [ "$(grep -c "$2" "$1")" -ge "$3" ] && return 0
        sleep 0.1
    done
    return 1
}
watch_stop() {
    kill -TERM "$W_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$W_PID" 2>/dev/null || break; sleep 0.1; done
    W_PID=
}

# Watch: two runtimes attached alike are one Event whose series.count is 2 (a merge PATCH), and
# the token is rotated in between: the old one is revoked (its Secret deleted: the apiserver
# answers it 401 from then on) and the file behind ..data replaced, as the kubelet does. Each
# report reads the token file afresh (a session per report; within one, it is re-read after a
# 401 and every 60 s: that path is driven by tests/k8s/run.sh), so the PATCH goes out with the
# new token; a 401 on the way is tolerated, a failed PATCH is not.
watch_rotation() {
    local l=$1 bin=$2 tag=$3 sa
    sa=$(sa_dir "rot-$l" "$TOKEN_ROT1")
    if ! watch_start "$l-watch" "$bin" "$sa" "$tag"; then
        fail "$l-watch-series-token-rotation" "watch did not get ready: $(cat "$W_ERR")"
        return
    fi
    start_target "$l-w1" --pidns --uid 1000 --seconds "$tag" &&
        wait_log "$W_ERR" 'reported Event' 1
    # Revoke the first token (it is bound to the Secret) and rotate the file.
    K delete secret token-anchor-1 >/dev/null
    sa_rotate "$sa" "$TOKEN_ROT2"
    local revoked=0
    for _ in $(seq 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$PKI/ca.crt" \
            -H "Authorization: Bearer $TOKEN_ROT1" "$URL/api")" = 401 ] && { revoked=1; break; }
        sleep 0.2
    done
    LOGMARK=$(wc -l <"$APILOG")
    start_target "$l-w2" --pidns --uid 1000 --seconds "$tag" &&
        wait_log "$W_ERR" 'updated Event' 1
    watch_stop
    ERR=$W_ERR RC=watch
    local n
    n=$(event_name "$W_ERR")
    local reqs
    reqs=$(requests_of_run | tr '\n' ';')
    if [ $revoked = 1 ] && grep -q "updated Event $NS/.*(ProfilerAttached, seen 2 times" "$W_ERR" &&
        case $reqs in *"PATCH /apis/events.k8s.io/v1/namespaces/$NS/events/$n 200;") true ;; *) false ;; esac &&
        check_event "$n" events.k8s.io '
assert e["series"]["count"] == 2 and e["series"]["lastObservedTime"], e
assert e["reason"] == "ProfilerAttached" and e["regarding"]["uid"] == POD_UID, e
'; then
        ok "$l-watch-series-after-token-rotation (old token revoked: 401; then: $reqs)"
    else
        fail "$l-watch-series-after-token-rotation" "revoked=$revoked requests: $reqs $(why)"
    fi
}

# Watch, a repeated failure: two runtimes whose profiler refuses its client data alike are one
# Warning Event with series.count 2.
watch_repeated_failure() {
    local l=$1 bin=$2 tag=$3 group=$4
    if ! watch_start "$l-watchfail" "$bin" "$SA_GOOD" "$tag" --client-data 'not-a-key-value'; then
        fail "$l-watch-repeated-failure" "watch did not get ready: $(cat "$W_ERR")"
        return
    fi
    start_target "$l-f1" --pidns --uid 1000 --seconds "$tag" &&
        wait_log "$W_ERR" 'reported Event' 1 &&
        start_target "$l-f2" --pidns --uid 1000 --seconds "$tag" &&
        wait_log "$W_ERR" 'updated Event' 1
    watch_stop
    ERR=$W_ERR RC=watch
    if [ "$(grep -c '"outcome":"load_failed"' "$W_OUT")" = 2 ] &&
        grep -q "updated Event $NS/.*(ProfilerAttachFailed, seen 2 times" "$W_ERR" &&
        check_event "$(event_name "$W_ERR")" "$group" '
series = e["series"]
assert series["count"] == 2, e
assert e["reason"] == "ProfilerAttachFailed" and e["type"] == "Warning", e
ref = e.get("regarding") or e.get("involvedObject")
assert ref["uid"] == POD_UID, e
note = e.get("note") or e.get("message")
assert well_formed(note) and "E_INVALIDARG 0x80070057" in note, note
'; then
        ok "$l-watch-repeated-failure ($group, one Warning Event, series.count 2)"
    else
        fail "$l-watch-repeated-failure" "$(why) $(cat "$W_OUT")"
    fi
}

suite dyn "$CLRATTACH" HTTP/2
suite static "$STATIC" HTTP/1.1
watch_rotation dyn "$CLRATTACH" 151
watch_repeated_failure dyn "$CLRATTACH" 152 events.k8s.io
watch_repeated_failure static "$STATIC" 154 events.k8s.io

# The core-events-only Role: 403 on events.k8s.io, and no fallback to core/v1.
if start_target core-only-app --pidns --uid 1000; then
    before=$(K get events -o name | wc -l)
    pod_run core-only "$CLRATTACH" "$SA_CORE_ONLY" -- $(attach_args "$TARGET_PID")
    after=$(K get events -o name | wc -l)
    if result_kept 0 && grep -q 'cannot create resource \\\?"events\\\?" in API group \\\?"events.k8s.io' "$ERR" &&
        [ "$before" = "$after" ]; then
        ok "rbac-core-events-only-403-no-fallback"
    else
        fail "rbac-core-events-only-403-no-fallback" "$(why) events $before -> $after"
    fi
fi

# What people read: kubectl describe pod and kubectl events show the three reasons.
K describe pod "$POD" >"$WORK/describe.txt" 2>&1
if grep -q ProfilerAttached "$WORK/describe.txt" && grep -q ProfilerAlreadyActive "$WORK/describe.txt" &&
    grep -q ProfilerAttachFailed "$WORK/describe.txt"; then
    ok "kubectl-describe-pod-shows-events"
else
    fail "kubectl-describe-pod-shows-events" "$(sed -n '/^Events:/,$p' "$WORK/describe.txt" | head -20)"
fi
K events --for "pod/$POD" >"$WORK/kevents.txt" 2>&1
if grep -q ProfilerAttached "$WORK/kevents.txt" && grep -q ProfilerAlreadyActive "$WORK/kevents.txt" &&
    grep -q ProfilerAttachFailed "$WORK/kevents.txt"; then
    ok "kubectl-events-shows-events"
else
    fail "kubectl-events-shows-events" "$(head -20 "$WORK/kevents.txt")"
fi

# ---- the kubectl plugin: selectors, its ephemeral container, its Event (tests/apiserver/plugin.sh)
# shellcheck source=tests/apiserver/plugin.sh
. "$(dirname "$0")/plugin.sh"
plugin_scenario

# ---- the node agent: pods followed, annotations judged, runtimes attached (tests/apiserver/agent.sh)
agent_scenario

# ---- the stand-in answers these probes as the real server does ---------------------------------
"$ROOT/tests/k8s/gen-certs.sh" "$WORK/standin-certs" >/dev/null 2>&1
printf 'standin-%s\n' "$RANDOM$RANDOM" >"$WORK/standin-token"
python3 "$ROOT/tests/k8s/apiserver.py" --ca-dir "$WORK/standin-certs" \
    --token-file "$WORK/standin-token" --port-file "$WORK/standin-port" --pod "$NS/$POD" \
    2>"$WORK/standin.log" &
STANDIN_PID=$!
disown "$STANDIN_PID"
TARGET_PIDS+=("$STANDIN_PID")
for _ in $(seq 100); do [ -s "$WORK/standin-port" ] && break; sleep 0.1; done
timeout 120 python3 "$(dirname "$0")/compare.py" "$URL" "$PKI/ca.crt" "$TOKEN" \
    "https://127.0.0.1:$(cat "$WORK/standin-port")" "$WORK/standin-certs/ca.crt" \
    "$(tr -d '\n' <"$WORK/standin-token")" "$NS" "$POD" >"$WORK/compare.txt" 2>&1
cat "$WORK/compare.txt"
PASSED=$((PASSED + $(grep -c '^ok ' "$WORK/compare.txt")))
FAILED=$((FAILED + $(grep -c '^FAIL' "$WORK/compare.txt")))
grep -q '^ok \|^FAIL' "$WORK/compare.txt" || fail standin-agrees "compare.py ran no probe"
kill "$STANDIN_PID" 2>/dev/null

# ---- core/v1 fallback: the same cluster with events.k8s.io/v1, then the whole group, off -------
# unserved_answer LABEL CONTENT-TYPE BODY-PYTHON-CHECK: what the apiserver answers a POST to an
# unserved events.k8s.io/v1 (the stand-in's /_test/unserved copies both forms).
unserved_answer() {
    curl -s -D "$WORK/unserved.h" -o "$WORK/unserved.b" --cacert "$PKI/ca.crt" \
        -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{}' \
        "$URL/apis/events.k8s.io/v1/namespaces/$NS/events"
    if head -n1 "$WORK/unserved.h" | grep -q ' 404' &&
        grep -qi "^content-type: $2" "$WORK/unserved.h" &&
        python3 -c "import sys; b = open(sys.argv[1]).read(); $3" "$WORK/unserved.b" 2>/dev/null; then
        ok "$1"
    else
        fail "$1" "$(cat "$WORK/unserved.h" "$WORK/unserved.b" | tr '\r\n' '  ')"
    fi
}

# fallback_checks LABEL: both builds fall back to core/v1; a watch series is PATCHed there.
fallback_checks() {
    local l bin n
    for l in dyn static; do
        bin=$CLRATTACH
        [ $l = static ] && bin=$STATIC
        start_target "$l-core-$1-app" --pidns --uid 1000 || continue
        pod_run "$l-core-$1" "$bin" "$SA_GOOD" -- $(attach_args "$TARGET_PID")
        n=$(event_name "$ERR")
        if result_kept 0 && check_event "$n" core '
assert e["apiVersion"] == "v1" and e["reason"] == "ProfilerAttached", e
assert e["involvedObject"]["uid"] == POD_UID and e["involvedObject"]["kind"] == "Pod", e
assert e["reportingComponent"] == "clrattach.dev/clrattach" and e["action"] == "AttachProfiler", e
assert well_formed(e["message"]), e
' && [ "$(requests_of_run | tr '\n' ';')" = "GET /api/v1/namespaces/$NS/pods/$POD 200;POST /apis/events.k8s.io/v1/namespaces/$NS/events 404;POST /api/v1/namespaces/$NS/events 201;" ]; then
            ok "$l-core-v1-fallback-$1 (404 from events.k8s.io, stored as core/v1)"
        else
            fail "$l-core-v1-fallback-$1" "$(why) requests: $(requests_of_run | tr '\n' ';')"
        fi
    done
}

stop_apiserver
t0=$(date +%s)
if start_apiserver "$WORK/apiserver-nov1.log" --runtime-config events.k8s.io/v1=false; then
    ok "apiserver-restart-without-events.k8s.io/v1 ($(($(date +%s) - t0)) s)"
    # The group still serves v1beta1: the answer is a Status that names nothing.
    unserved_answer unserved-version-is-status-404 application/json '
import json; d = json.loads(b)
assert d["kind"] == "Status" and d["reason"] == "NotFound" and d["details"] == {}, d'
    fallback_checks version-off
    watch_repeated_failure core "$CLRATTACH" 153 core
else
    fail apiserver-restart-without-events.k8s.io/v1 "$(grep -E '^[EF][0-9]{4}' "$WORK/apiserver-nov1.log" | tail -5)"
fi
stop_apiserver
t0=$(date +%s)
if start_apiserver "$WORK/apiserver-nogroup.log" \
    --runtime-config events.k8s.io/v1=false,events.k8s.io/v1beta1=false; then
    ok "apiserver-restart-without-events.k8s.io ($(($(date +%s) - t0)) s)"
    # No version of the group served: the mux's text/plain answer.
    unserved_answer unserved-group-is-text-404 text/plain 'assert b == "404 page not found\n", b'
    fallback_checks group-off
else
    fail apiserver-restart-without-events.k8s.io "$(grep -E '^[EF][0-9]{4}' "$WORK/apiserver-nogroup.log" | tail -5)"
fi

echo "apiserver: wall time $(($(date +%s) - START)) s"
finish apiserver
