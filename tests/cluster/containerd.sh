# shellcheck shell=bash
# The container runtime of tests/cluster/run.sh's second node shape: Debian's containerd (1.6)
# with its CRI plugin, an instance of its own that the kubelet talks CRI to. Its root (images,
# snapshots) is under the run's directory, its state and socket in the run's short directory
# (CLUSTER_RUN); runc (the runc v2 shim) runs the containers with their state there too; the
# cgroupfs driver, as the kubelet's. The images come from the dockershim node's engine, imported
# into the k8s.io namespace (the CRI plugin's) with `ctr images import`.
#
# No network: pods use the host's network, which containerd's CRI plugin sets up without CNI. It
# still reports the network not ready (and the kubelet the node NotReady) until it has loaded
# one CNI configuration: it is given a loopback-only one, and an empty plugin directory, so no
# CNI plugin can run at all. Pulls from the registries the images name are pointed at a closed
# loopback port (a registry host configuration each), so a missing image fails here instead of
# being fetched. The CRI streaming server (exec, attach, logs) binds 127.0.0.1;
# no TCP CRI service, no metrics or debug listener.
#
# What differs from a real node, for this VM: root lacks CAP_SYS_RESOURCE in its bounding set, and
# the kernel refuses the -998 oom_score_adj the kubelet asks for a pod sandbox (as under the
# dockershim node's runc wrapper); the CRI plugin's restrict_oom_score_adj keeps every container's
# at containerd's own instead.
#
# Needs cluster.sh (WORK, CLUSTER_RUN, PAUSE_IMAGE, wait_for, stop_pid) and tests/containers/lib.sh
# (unmount_under).

CONTAINERD_BIN=${CONTAINERD_BIN:-/usr/bin/containerd}
CTR_BIN=${CTR_BIN:-/usr/bin/ctr}
RUNC_BIN=/usr/sbin/runc
CONTAINERD_PID=
# The images the node runs (set by the caller): pulls from their registries are refused.
CONTAINERD_IMAGES=()

# ctrd ARGS...: ctr on this instance, in the CRI plugin's namespace, never hanging.
ctrd() {
    timeout "${CTR_TIMEOUT:-60}" "$CTR_BIN" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"
}

containerd_config() {
    local cri='plugins."io.containerd.grpc.v1.cri"'
    cat <<EOF
version = 2
root = "$CONTAINERD_ROOT"
state = "$CONTAINERD_STATE"
# /opt/containerd (the opt plugin) and snapshotters this node does not use.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$CONTAINERD_SOCK"
[metrics]
  address = ""
[debug]
  address = ""
[$cri]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_tls_streaming = false
  [$cri.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [$cri.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [$cri.containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BIN"
        Root = "$CONTAINERD_STATE/runc"
        SystemdCgroup = false
  [$cri.cni]
    bin_dir = "$CONTAINERD_STATE/cni-bin"
    conf_dir = "$CONTAINERD_STATE/cni-conf"
  [$cri.registry]
    config_path = "$CONTAINERD_STATE/registry"
EOF
}

# containerd_start: writes the configuration, starts containerd (its pid in CONTAINERD_PID) and
# waits until its CRI plugin is up.
containerd_start() {
    CONTAINERD_ROOT=$WORK/containerd
    CONTAINERD_STATE=$CLUSTER_RUN/containerd
    CONTAINERD_SOCK=$CONTAINERD_STATE/containerd.sock
    sock_path_fits "$CONTAINERD_SOCK.ttrpc" "containerd's socket" || return 1
    mkdir -p "$CONTAINERD_ROOT" "$CONTAINERD_STATE/cni-bin" "$CONTAINERD_STATE/cni-conf"
    printf '%s\n' '{"cniVersion": "0.4.0", "name": "clrattach-test-loopback",' \
        ' "plugins": [{"type": "loopback"}]}' >"$CONTAINERD_STATE/cni-conf/10-loopback.conflist"
    # Every registry the images name, served at port 1 on loopback: nothing listens, a pull
    # fails at once.
    local ref host
    for ref in "${CONTAINERD_IMAGES[@]}"; do
        host=$(image_ref_full "$ref")
        host=${host%%/*}
        mkdir -p "$CONTAINERD_STATE/registry/$host"
        printf '%s\n' 'server = "http://127.0.0.1:1"' >"$CONTAINERD_STATE/registry/$host/hosts.toml"
    done
    containerd_config >"$WORK/containerd.toml"
    "$CONTAINERD_BIN" --config "$WORK/containerd.toml" >"$WORK/containerd.log" 2>&1 &
    CONTAINERD_PID=$!
    wait_for 60 "$CONTAINERD_PID" cri_plugin_up || {
        echo "containerd's CRI plugin is not up: $(grep -E 'level=(error|fatal)' "$WORK/containerd.log" | tail -3)"
        return 1
    }
}
cri_plugin_up() { ctrd plugins ls | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'; }

# image_ref_full REF: REF with its registry host, as containerd names it (docker.io when the first
# component names no host, docker.io/library for a single name).
image_ref_full() {
    case $1 in
    */*) ;;
    *) echo "docker.io/library/$1" && return ;;
    esac
    case ${1%%/*} in
    *.* | *:* | localhost) echo "$1" ;;
    *) echo "docker.io/$1" ;;
    esac
}

# containerd_images_import TAR: the images of TAR (a `docker save` of CONTAINERD_IMAGES) into the
# k8s.io namespace, unpacked for the overlayfs snapshotter; every one must then be there.
containerd_images_import() {
    local ref
    CTR_TIMEOUT=600 ctrd images import "$1" || return 1
    ctrd images ls -q >"$WORK/containerd-images.txt" || return 1
    for ref in "${CONTAINERD_IMAGES[@]}"; do
        ref=$(image_ref_full "$ref")
        grep -qxF "$ref" "$WORK/containerd-images.txt" || { echo "$ref not imported"; return 1; }
    done
}

# containerd_stop: every task the kubelet left (killed, deleted), containerd (TERM, 10 s, KILL),
# then whatever survived it: runc's containers in this instance's runc root, the shims serving
# this instance's socket (by pid), the mounts under its root and state, its state directory.
containerd_stop() {
    [ -n "${CONTAINERD_PID:-}" ] || return 0
    local id pid runc_root=$CONTAINERD_STATE/runc/k8s.io
    if kill -0 "$CONTAINERD_PID" 2>/dev/null; then
        for id in $(ctrd tasks ls -q 2>/dev/null); do
            ctrd tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1
        done
        for id in $(ctrd tasks ls -q 2>/dev/null); do
            ctrd tasks delete -f "$id" >/dev/null 2>&1
        done
        stop_pid "$CONTAINERD_PID" 10
    fi
    wait "$CONTAINERD_PID" 2>/dev/null
    for id in $(timeout 30 "$RUNC_BIN" --root "$runc_root" list -q 2>/dev/null); do
        timeout 30 "$RUNC_BIN" --root "$runc_root" delete -f "$id" >/dev/null 2>&1
    done
    for pid in $(grep -lszFx -e "$CONTAINERD_SOCK" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
        [ "$(readlink "/proc/$pid/exe")" = /usr/bin/containerd-shim-runc-v2 ] && kill -KILL "$pid" 2>/dev/null
    done
    unmount_under "$CONTAINERD_STATE"
    unmount_under "$CONTAINERD_ROOT"
    rm -rf --one-file-system "$CONTAINERD_STATE"
    CONTAINERD_PID=
}
