# shellcheck shell=bash
# tests/cluster/run.sh's second node shape: the kubelet talking CRI to containerd (Debian's 1.6,
# its CRI plugin: tests/cluster/containerd.sh), the runtime of every cluster since dockershim left
# Kubernetes 1.24. Sourced by run.sh after the dockershim node's scenarios: the images the
# manifests use are saved from that node's engine, that cluster is stopped, and a fresh one (new
# etcd, PKI, kubelet root) comes up with the containerd node, on which the scenarios every shape
# runs (tests/cluster/common.sh) run again, their checks named cri-*; then what a node agent
# matches on: the container ID the kubelet reports is containerd's, and the kernel shows the app's
# process in a cgroup named by it.

# cri_container_id: the app container's ID as the kubelet reports it (containerd://ID), and the
# cgroup of the app's process (containerd's task for that container, the .NET app) naming it.
cri_container_id() {
    local cid id pid cg cmd
    cid=$(K get pod -n shop "$BASE_POD" -o 'jsonpath={.status.containerStatuses[?(@.name=="app")].containerID}')
    case $cid in
    containerd://[0-9a-f]*) ok "cri-container-id-is-containerd ($cid)" ;;
    *)
        fail cri-container-id-is-containerd "the app's containerID: '$cid'"
        return
        ;;
    esac
    id=${cid#containerd://}
    pid=$(ctrd tasks ls 2>/dev/null | awk -v id="$id" '$1 == id { print $2 }')
    cmd=$(tr '\0' ' ' <"/proc/${pid:-0}/cmdline" 2>/dev/null)
    cg=$(cat "/proc/${pid:-0}/cgroup" 2>/dev/null)
    if [ -n "$pid" ] && [[ $cmd == *Orders.Api.dll* ]] && grep -q "/$id\$" <<<"$cg"; then
        ok "cri-app-cgroup-names-container-id (pid $pid, $(grep -c "/$id\$" <<<"$cg") of $(grep -c . <<<"$cg") hierarchies: $(grep -m1 "/$id\$" <<<"$cg"))"
    else
        fail cri-app-cgroup-names-container-id "containerd's task for $id: pid '${pid:-none}' ($cmd); its cgroups: $(tr '\n' ' ' <<<"$cg")"
    fi
}

# cri_shape: the whole second shape; returns early when the node cannot come up.
cri_shape() {
    local t started=$SECONDS top=$WORK tar=$WORK/cri-images.tar v out
    CONTAINERD_IMAGES=("$APP_IMAGE" "$CLR_IMAGE" "$PAUSE_IMAGE")
    if ! DK_TIMEOUT=600 dk save -o "$tar" "${CONTAINERD_IMAGES[@]}" >"$WORK/cri-save.log" 2>&1; then
        fail cri-images-saved "$(tail -3 "$WORK/cri-save.log")"
        return
    fi
    cluster_stop
    WORK=$top/cri
    mkdir -p "$WORK"
    CLUSTER_RUNTIME=containerd
    KUBELET_ROOT=$CLUSTER_RUN/kubelet-cri
    SECCOMP_DIR=$KUBELET_ROOT/seccomp
    v=$(timeout 10 "$CONTAINERD_BIN" --version | awk '{ print $3 }')
    if cluster_start >"$WORK/start.msg" 2>&1; then
        ok "cri-cluster-up (containerd $v, node $NODE Ready in $CLUSTER_UP_SECONDS s)"
    else
        fail cri-cluster-up "$(cat "$WORK/start.msg")"
        return
    fi
    t=$SECONDS
    if containerd_images_import "$tar" >"$WORK/load.log" 2>&1; then
        ok "cri-images-loaded ($((SECONDS - t)) s: ctr images import into k8s.io)"
    else
        fail cri-images-loaded "$(tail -5 "$WORK/load.log")"
        return
    fi
    rm -f "$tar"
    out=$(listeners_outside_loopback)
    [ -z "$out" ] && ok "cri-loopback-only" || fail cri-loopback-only "$out"

    PFX=cri-
    if [ "$SCENARIOS" != agent ]; then
        scenario_base
        [ -n "$BASE_POD" ] && cri_container_id
        scenario_restart
        scenario_plugin_stream
        scenario_plugin_on_base
    fi
    # The node agent (scenario_agent.sh): containerd:// IDs, the cgroupfs driver's paths.
    scenario_agent
    PFX=
    echo "cluster: the containerd node's part $((SECONDS - started)) s"
}
cri_shape
