#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What we ship, under a real kubelet (issue 26): a single-node Kubernetes 1.20 from Debian's
# `kubernetes` source (tests/cluster/cluster.sh brings it up on loopback), the project's image
# built by its own Dockerfile, the manifests applied from deploy/ as a user would, a .NET app
# image from this machine's runtime with the numeric `USER 1654:1654`.
#
# The manifests are applied exactly as shipped, with one patch of the suite's own: every pod gets
# `hostNetwork: true` (there is no CNI plugin here; the kubelet's dockershim, or containerd's CRI
# plugin, gives a pod the host's network). The images are present under the names the manifests
# use, so nothing else changes.
#
# Two node shapes, one after the other (CLUSTER_SHAPES, "dockershim cri" by default): the kubelet
# on its dockershim with a private Docker Engine (tests/cluster/scenarios.sh, then
# tests/cluster/scenario_otel.sh, then the node agent's scenario_agent.sh), then a fresh cluster
# whose kubelet talks CRI to a containerd of its own (tests/cluster/cri.sh, the agent's scenario
# again; checks named cri-*). CLUSTER_SHAPES=cri runs the second shape's
# scenarios alone (the dockershim node still comes up: its engine holds the images the containerd
# node imports). CLUSTER_SCENARIOS=otel runs scenario_otel.sh alone, on the dockershim node, and
# no second shape.
#
# Prints "ok NAME" / "FAIL NAME: reason" per check and "cluster: N passed, M failed". Needs
# root, kubectl, etcd, openssl, Debian's docker.io and containerd, golang-1.19-go
# (scripts/install-deps.sh), `make all target otel-agent otel-apps`. A missing prerequisite (or an
# unknown CLUSTER_SHAPES or CLUSTER_SCENARIOS word) fails the suite, in CI and outside it;
# CLRATTACH_SKIP_SUITES=cluster skips it (tests/suite.sh).
# Env: KEEP_WORK=1 keeps build/cluster/run.*/ (every component's log, the rendered manifests).
# CLUSTER_SCENARIOS=agent runs only the node agent's scenario (tests/cluster/scenario_agent.sh,
# its checks agent-* and cri-agent-*) on each shape.
# The sockets (the engine's, containerd's, the kubelet's) are in short directories of their own
# under /run, whatever the checkout's path.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/suite.sh
. "$here/../suite.sh"
suite_skipped cluster && exit 0
# shellcheck source=tests/containers/lib.sh
. "$here/../containers/lib.sh"
cd "$ROOT" || exit 2
T0=$SECONDS
mkdir -p "$ROOT/build/cluster"
WORK=$(mktemp -d "$ROOT/build/cluster/run.XXXXXX")
chmod 755 "$WORK"
# The second shape's cluster has its own directory under it (cri.sh sets WORK to it).
RUN_WORK=$WORK
SHAPES=" ${CLUSTER_SHAPES:-dockershim cri} "
SCENARIOS=${CLUSTER_SCENARIOS:-all}
[ "$SCENARIOS" = otel ] && SHAPES=" dockershim "
CLUSTER_RUN=$(short_run_dir cluster exec) || { suite_cannot_run cluster "no directory under /run or /tmp"; exit 1; }
chmod 755 "$CLUSTER_RUN"
# shellcheck source=tests/cluster/cluster.sh
. "$here/cluster.sh"
# shellcheck source=tests/cluster/containerd.sh
. "$here/containerd.sh"

finish() {
    echo "cluster: $PASSED passed, $FAILED failed ($((SECONDS - T0)) s)"
    [ "$FAILED" -eq 0 ]
    exit
}
cleanup() {
    cluster_stop
    if [ -n "${KEEP_WORK:-}" ]; then echo "kept $RUN_WORK" >&2; else rm -rf "$RUN_WORK"; fi
    remove_run_dir "$CLUSTER_RUN"
}
trap cleanup EXIT
# A timeout's TERM (tests/run-all.sh) must still stop the cluster.
trap 'exit 143' TERM INT

prereq_fail() {
    suite_cannot_run cluster "$1"
    FAILED=$((FAILED + 1))
    finish
}
for w in $SHAPES; do
    case $w in dockershim | cri) ;; *) prereq_fail "CLUSTER_SHAPES: '$w' is not a shape (dockershim, cri)" ;; esac
done
case $SCENARIOS in all | otel | agent) ;; *) prereq_fail "CLUSTER_SCENARIOS: '$SCENARIOS' (all, otel or agent)" ;; esac
[ "$(id -u)" -eq 0 ] || prereq_fail "needs root (dockerd, the kubelet)"
for tool in kubectl etcd openssl dotnet curl python3 ss; do
    command -v "$tool" >/dev/null || prereq_fail "$tool not on PATH (scripts/install-deps.sh)"
done
[ -x "$DOCKERD_BIN" ] && [ -x /usr/sbin/runc ] ||
    prereq_fail "Debian's docker.io is not installed (scripts/install-deps.sh)"
if [[ $SHAPES == *" cri "* ]]; then
    [ -x "$CONTAINERD_BIN" ] && [ -x "$CTR_BIN" ] && [ -x /usr/bin/containerd-shim-runc-v2 ] ||
        prereq_fail "Debian's containerd is not installed (scripts/install-deps.sh)"
fi
for f in "$ABS_BUILD/target/ClrTarget.dll" "$ABS_BUILD/libclrprobe.so" \
    "$ABS_BUILD/otel-agent/ClrattachOtelAgent.dll" "$ABS_BUILD/otel-apps/console/OtelConsole.dll"; do
    [ -e "$f" ] || prereq_fail "$f missing (make all target otel-agent otel-apps)"
done
if ss -Hltn 'sport = :443' | grep -q .; then
    prereq_fail "127.0.0.1:443 is taken (the kubernetes Service's port: kube-apiserver listens there)"
fi

# ---- builds ------------------------------------------------------------------------------------
t=$SECONDS
if timeout 3000 "$ROOT/tests/apiserver/build-apiserver.sh" >"$WORK/build.log" 2>&1 &&
    timeout 3000 "$here/build-cluster.sh" >>"$WORK/build.log" 2>&1; then
    ok "cluster-build ($((SECONDS - t)) s: $("$KBIN/kubelet" --version))"
else
    fail cluster-build "$(tail -5 "$WORK/build.log")"
    finish
fi
t=$SECONDS
# The image references the manifests use.
kubectl kustomize deploy/base >"$WORK/base.yaml" 2>"$WORK/kustomize.err" ||
    { fail cluster-kustomize "$(cat "$WORK/kustomize.err")"; finish; }
read -r APP_IMAGE CLR_IMAGE < <(python3 - "$WORK/base.yaml" <<'PY'
import sys, yaml
dep = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment")
cs = {c["name"]: c["image"] for c in dep["spec"]["template"]["spec"]["containers"]}
print(cs["app"], cs["clrattach"])
PY
)
if images_build >"$WORK/images.log" 2>&1; then
    ok "cluster-images-built ($((SECONDS - t)) s)"
else
    fail cluster-images-built "$(tail -5 "$WORK/images.log")"
    finish
fi

# ---- the cluster -------------------------------------------------------------------------------
# Not in a subshell: the pids it starts are this shell's to stop.
if cluster_start >"$WORK/start.msg" 2>&1; then
    ok "cluster-up (node $NODE Ready in $CLUSTER_UP_SECONDS s)"
else
    fail cluster-up "$(cat "$WORK/start.msg")"
    finish
fi
t=$SECONDS
if images_load "$APP_IMAGE" "$CLR_IMAGE" >"$WORK/load.log" 2>&1; then
    ok "cluster-images-loaded ($((SECONDS - t)) s: $APP_IMAGE, $CLR_IMAGE, $PAUSE_IMAGE)"
else
    fail cluster-images-loaded "$(tail -5 "$WORK/load.log")"
    finish
fi
out=$(listeners_outside_loopback)
[ -z "$out" ] && ok "cluster-loopback-only" || fail cluster-loopback-only "$out"

# shellcheck source=tests/cluster/helpers.sh
. "$here/helpers.sh"
# shellcheck source=tests/cluster/common.sh
. "$here/common.sh"
# shellcheck source=tests/cluster/scenario_agent.sh
. "$here/scenario_agent.sh"
if [[ $SHAPES == *" dockershim "* ]]; then
    if [ "$SCENARIOS" = all ]; then
        # shellcheck source=tests/cluster/scenarios.sh
        . "$here/scenarios.sh"
    fi
    if [ "$SCENARIOS" != agent ]; then
        # shellcheck source=tests/cluster/scenario_otel.sh
        . "$here/scenario_otel.sh"
    fi
    [ "$SCENARIOS" = otel ] || scenario_agent
fi
if [[ $SHAPES == *" cri "* ]]; then
    # shellcheck source=tests/cluster/cri.sh
    . "$here/cri.sh"
fi

echo "cluster: wall time $((SECONDS - T0)) s"
finish
