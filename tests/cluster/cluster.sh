# shellcheck shell=bash
# A real single-node Kubernetes 1.20 on loopback, for tests/cluster/run.sh: etcd (Debian's
# etcd-server), kube-apiserver (tests/apiserver/build-apiserver.sh), kube-controller-manager,
# kube-scheduler and the kubelet (tests/cluster/build-cluster.sh). The node's runtime
# (CLUSTER_RUNTIME): "docker", the kubelet's built-in dockershim driving a private Docker Engine
# (tests/containers/lib.sh's, with its own state directory); "containerd", the kubelet talking CRI
# to a containerd of its own (tests/cluster/containerd.sh). PKI made per run with openssl. Pods
# run with hostNetwork (there is no CNI).
#
# Everything started is remembered by pid and stopped by cluster_stop (TERM, then KILL); what the
# kubelet changes on the host (sysctls, its cgroups, /var/lib/kubelet/device-plugins, the pod log
# directories) is put back. Nothing listens beyond loopback: etcd, kube-apiserver and the kubelet
# bind 127.0.0.1, the controller-manager and the scheduler serve nothing, dockerd and containerd
# use unix sockets, the kubelet's streaming server for exec/attach/logs binds localhost.
#
# Needs (set by the caller): ROOT, BUILD, WORK (this run's directory), CLUSTER_RUN (this run's
# short directory for sockets: short_run_dir, tests/suite.sh), and tests/containers/lib.sh
# sourced (dk, start_dockerd, stop_dockerd, ENGINE_DIR); for "containerd", containerd.sh sourced.

KBIN=$ROOT/build/cluster/bin
APISERVER_BIN=$ROOT/build/apiserver/kube-apiserver
# The engine's images and layers stay between runs (only changed images are loaded again).
CLUSTER_ENGINE=$ROOT/build/cluster/docker
NODE=127.0.0.1
# The `kubernetes` Service is the first address of the service range, port 443: with the range
# 127.0.0.0/24 it is 127.0.0.1:443, where kube-apiserver itself listens, so a hostNetwork pod's
# KUBERNETES_SERVICE_HOST/PORT reach the API exactly as through a Service in a real cluster
# (there is no kube-proxy).
API_PORT=443
URL=https://127.0.0.1:$API_PORT
GATES=EphemeralContainers=true,BoundServiceAccountTokenVolume=true
PAUSE_IMAGE=clrattach-test/pause:$(cat "$KBIN/pause.version" 2>/dev/null || echo 3.4)
# The kubelet binds its sockets under its root directory (pod-resources/kubelet.sock,
# plugins_registry/): a short one of its own, whatever the checkout's path.
KUBELET_ROOT=$CLUSTER_RUN/kubelet
# Where the kubelet reads Localhost seccomp profiles: its --seccomp-profile-root, whose default
# is /var/lib/kubelet/seccomp whatever --root-dir says; given here as the same place under this
# run's root directory.
SECCOMP_DIR=$KUBELET_ROOT/seccomp
CLUSTER_PIDS=()
CLUSTER_RUNTIME=${CLUSTER_RUNTIME:-docker}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- PKI --------------------------------------------------------------------------------------
# cluster_pki: a CA; serving certificates for kube-apiserver and the kubelet; client
# certificates for the admin (system:masters), the controller-manager, the scheduler, the
# kubelet (system:node:127.0.0.1 in system:nodes, what the Node authorizer and NodeRestriction
# know it by) and kube-apiserver's own client to the kubelet; the service-account key (RSA).
cluster_pki() (
    PKI=$WORK/pki
    mkdir -p "$PKI"
    cd "$PKI" || exit 1
    exec 2>openssl.log
    set -e
    ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@"; }
    ec -x509 -days 2 -subj "/CN=clrattach-cluster-test-ca" -keyout ca.key -out ca.crt
    # cert NAME SUBJECT EXTENSIONS...
    cert() {
        local name=$1 subj=$2
        shift 2
        ec -subj "$subj" -keyout "$name.key" -out "$name.csr"
        printf '%s\n' "$@" >"$name.ext"
        openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile "$name.ext" -out "$name.crt"
    }
    cert apiserver /CN=kube-apiserver extendedKeyUsage=serverAuth \
        subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
    cert kubelet-serving "/CN=$NODE" extendedKeyUsage=serverAuth "subjectAltName=IP:$NODE"
    cert admin "/O=system:masters/CN=clrattach-cluster-admin" extendedKeyUsage=clientAuth
    cert controller-manager /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
    cert scheduler /CN=system:kube-scheduler extendedKeyUsage=clientAuth
    cert kubelet "/O=system:nodes/CN=system:node:$NODE" extendedKeyUsage=clientAuth
    cert apiserver-kubelet-client /CN=kube-apiserver-kubelet-client extendedKeyUsage=clientAuth
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
    openssl pkey -in sa.key -pubout -out sa.pub
    for n in admin controller-manager scheduler kubelet; do
        cat >"$n.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$URL", certificate-authority: "$PKI/ca.crt"}
users:
- name: $n
  user: {client-certificate: "$PKI/$n.crt", client-key: "$PKI/$n.key"}
contexts:
- name: test
  context: {cluster: test, user: $n}
current-context: test
EOF
    done
)

# K ARGS...: kubectl as the cluster's admin, never hanging.
K() {
    timeout 90 kubectl --kubeconfig "$WORK/pki/admin.kubeconfig" --cache-dir "$WORK/kcache" \
        --request-timeout=60s "$@"
}

# ---- processes -------------------------------------------------------------------------------
# bg LOG CMD...: starts CMD in the background, output to LOG, its pid remembered (and in BG_PID).
bg() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
    BG_PID=$!
    CLUSTER_PIDS+=("$BG_PID")
}

# stop_pid PID SECONDS: TERM, up to SECONDS for PID to end, then KILL.
stop_pid() {
    local i
    kill -TERM "$1" 2>/dev/null || return 0
    for i in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null
}

# wait_for SECONDS PID CMD...: until CMD succeeds; fails early when PID has died.
wait_for() {
    local n=$(($1 * 5)) pid=$2
    shift 2
    while [ "$n" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.2
        n=$((n - 1))
    done
    return 1
}

api_ready() {
    [ "$(curl -s --max-time 2 --cacert "$WORK/pki/ca.crt" --cert "$WORK/pki/admin.crt" \
        --key "$WORK/pki/admin.key" "$URL/readyz")" = ok ]
}

start_etcd() {
    ETCD_PORT=$(free_port)
    local peer
    peer=$(free_port)
    bg "$WORK/etcd.log" etcd --name cluster --data-dir "$WORK/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "cluster=http://127.0.0.1:$peer" \
        --logger zap --log-outputs stderr --log-level warn
    wait_for 30 "$BG_PID" sh -c "curl -sf http://127.0.0.1:$ETCD_PORT/health | grep -q '\"health\":\"true\"'"
}

start_apiserver() {
    local p=$WORK/pki
    bg "$WORK/apiserver.log" "$APISERVER_BIN" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
        --insecure-port 0 --endpoint-reconciler-type none --cert-dir "$WORK/apiserver-certs" \
        --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
        --client-ca-file "$p/ca.crt" \
        --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-signing-key-file "$p/sa.key" --service-account-key-file "$p/sa.pub" \
        --api-audiences https://kubernetes.default.svc.cluster.local \
        --service-cluster-ip-range 127.0.0.0/24 \
        --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" \
        --kubelet-client-key "$p/apiserver-kubelet-client.key" \
        --kubelet-certificate-authority "$p/ca.crt" \
        --kubelet-preferred-address-types Hostname \
        --allow-privileged=false --profiling=false --feature-gates "$GATES" --v 2
    wait_for 120 "$BG_PID" api_ready
}

start_controllers() {
    local p=$WORK/pki
    # The controllers each with their own service account (the token controller signs their
    # tokens); the root CA publisher fills the kube-root-ca.crt ConfigMap that the pods'
    # kube-api-access-* volumes (BoundServiceAccountTokenVolume) project.
    bg "$WORK/controller-manager.log" "$KBIN/kube-controller-manager" \
        --kubeconfig "$p/controller-manager.kubeconfig" --leader-elect=false \
        --port 0 --secure-port 0 --bind-address 127.0.0.1 \
        --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
        --use-service-account-credentials --feature-gates "$GATES" --v 1
    CM_PID=$BG_PID
    bg "$WORK/scheduler.log" "$KBIN/kube-scheduler" \
        --kubeconfig "$p/scheduler.kubeconfig" --leader-elect=false \
        --port 0 --secure-port 0 --bind-address 127.0.0.1 --feature-gates "$GATES" --v 1
    SCHED_PID=$BG_PID
    sleep 1
    kill -0 "$CM_PID" 2>/dev/null && kill -0 "$SCHED_PID" 2>/dev/null
}

# ---- the node ----------------------------------------------------------------------------------
# The kubelet sets these on start (its container manager and the dockershim's network plugin):
# saved before, put back after.
SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/bridge/bridge-nf-call-iptables
net/bridge/bridge-nf-call-ip6tables"
SAVED_SYSCTLS=()
save_sysctls() {
    local s
    for s in $SYSCTLS; do
        [ -e "/proc/sys/$s" ] && SAVED_SYSCTLS+=("$s=$(cat "/proc/sys/$s")")
    done
}
restore_sysctls() {
    local kv
    for kv in ${SAVED_SYSCTLS[@]+"${SAVED_SYSCTLS[@]}"}; do
        [ "$(cat "/proc/sys/${kv%%=*}")" = "${kv#*=}" ] || echo "${kv#*=}" >"/proc/sys/${kv%%=*}"
    done
    SAVED_SYSCTLS=()
}

# Host paths the kubelet creates whatever its --root-dir: the device-plugin socket's directory is
# fixed at /var/lib/kubelet/device-plugins in 1.20, the pod logs at /var/log/pods and
# /var/log/containers. Those absent before the run are removed after it; of those present, only
# the entries this run added.
HOST_DIRS="/var/lib/kubelet /var/log/pods /var/log/containers"
host_dirs_snapshot() {
    local d
    for d in $HOST_DIRS; do
        if [ -d "$d" ]; then ls -A "$d" >"$WORK/host-$(basename "$d").before"; fi
    done
}
host_dirs_restore() {
    local d before e
    for d in $HOST_DIRS; do
        before=$WORK/host-$(basename "$d").before
        [ -d "$d" ] || continue
        if [ ! -e "$before" ]; then
            rm -rf "$d"
            continue
        fi
        ls -A "$d" | while read -r e; do
            grep -qxF -- "$e" "$before" || rm -rf "${d:?}/$e"
        done
    done
}

# The cgroup the kubelet makes for its pods (cgroupfs driver), in every v1 hierarchy, removed
# deepest first once no task is left in it, when it was not there before.
KUBEPODS_EXISTED=
kubepods_cleanup() {
    [ -n "$KUBEPODS_EXISTED" ] && return 0
    local d
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    return 0
}

# The private engine's runc wrapper, its default runtime. On this kind of VM root's bounding set
# lacks CAP_SYS_RESOURCE, and the kernel refuses an oom_score_adj below the current minimum
# without it: the kubelet asks -998 for every pod sandbox (and -997 for Guaranteed pods), runc
# cannot write it and its init fails ("can't get final child's PID from pipe: EOF"). A real node
# has the capability; here a negative process.oomScoreAdj in the bundle is raised to 0 before
# runc reads it. Nothing else differs from runc.
write_runc_wrapper() {
    cat >"$1" <<'EOF'
#!/bin/sh
bundle= prev=
for a in "$@"; do
    case $prev in --bundle | -b) bundle=$a ;; esac
    case $a in --bundle=*) bundle=${a#--bundle=} ;; esac
    prev=$a
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
    sed -i 's/"oomScoreAdj":[[:space:]]*-[0-9]*/"oomScoreAdj":0/' "$bundle/config.json"
fi
exec /usr/sbin/runc "$@"
EOF
    chmod 755 "$1"
}

# start_engine: the kubelet's private dockerd (tests/containers/lib.sh's start_dockerd with its
# own state directory and the runc wrapper as the default runtime).
start_engine() {
    mkdir -p "$CLUSTER_ENGINE"
    write_runc_wrapper "$CLUSTER_ENGINE/runc-oom"
    ENGINE_DIR=$CLUSTER_ENGINE
    ENGINE_CONFIG=$(printf '{"default-runtime": "runc-oom", "runtimes": {"runc-oom": {"path": "%s"}}}' \
        "$CLUSTER_ENGINE/runc-oom")
    # Sets DOCKER_HOST: the engine's socket, in a short directory of its own.
    start_dockerd || return 1
    # Containers a killed run left behind (the kubelet's "k8s_" ones): this engine is ours alone.
    local ids
    ids=$(dk ps -aq)
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1
    return 0
}

start_kubelet() {
    local p=$WORK/pki
    KUBELET_PORT=$(free_port)
    mkdir -p "$KUBELET_ROOT" "$SECCOMP_DIR"
    sock_path_fits "$KUBELET_ROOT/plugins_registry/kubelet.sock" "the kubelet's sockets" || return 1
    cat >"$WORK/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
tlsCertFile: $p/kubelet-serving.crt
tlsPrivateKeyFile: $p/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failSwapOn: false
# No iptables chains or hairpin setup on the host: pods use the host's network.
makeIPTablesUtilChains: false
hairpinMode: none
# A shared build machine's disk must not evict the test pods or collect their images.
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
featureGates: {EphemeralContainers: true, BoundServiceAccountTokenVolume: true}
EOF
    local runtime=(--experimental-dockershim-root-directory "$WORK/dockershim"
        --container-runtime docker --docker-endpoint "$DOCKER_HOST")
    [ "$CLUSTER_RUNTIME" = containerd ] &&
        runtime=(--container-runtime remote --container-runtime-endpoint "unix://$CONTAINERD_SOCK")
    bg "$WORK/kubelet.log" "$KBIN/kubelet" --config "$WORK/kubelet.yaml" \
        --kubeconfig "$p/kubelet.kubeconfig" --root-dir "$KUBELET_ROOT" "${runtime[@]}" \
        --pod-infra-container-image "$PAUSE_IMAGE" --seccomp-profile-root "$SECCOMP_DIR" \
        --hostname-override "$NODE" --v 2
    KUBELET_PID=$BG_PID
    wait_for 120 "$KUBELET_PID" node_ready
}

node_ready() {
    [ "$(K get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# cluster_start: everything, in order; prints what failed. The kubelet's node is named
# 127.0.0.1 and kube-apiserver reaches it by that name (--kubelet-preferred-address-types
# Hostname), on loopback: the node's InternalIP (the kubelet refuses a loopback one) is never
# dialled.
cluster_start() {
    local t0=$SECONDS
    CLUSTER_STARTED=1
    [ -d /sys/fs/cgroup/memory/kubepods ] && KUBEPODS_EXISTED=1
    host_dirs_snapshot
    save_sysctls
    cluster_pki || { echo "openssl: $(tail -3 "$WORK/pki/openssl.log")"; return 1; }
    if [ "$CLUSTER_RUNTIME" = containerd ]; then
        containerd_start >"$WORK/engine.msg" 2>&1 || { cat "$WORK/engine.msg"; return 1; }
    else
        start_engine >"$WORK/engine.msg" 2>&1 || { echo "dockerd: $(cat "$WORK/engine.msg")"; return 1; }
    fi
    start_etcd || { echo "etcd: $(tail -3 "$WORK/etcd.log")"; return 1; }
    start_apiserver || { echo "kube-apiserver: $(grep -E '^[EF][0-9]{4}' "$WORK/apiserver.log" | tail -3)"; return 1; }
    # kube-apiserver's own client to the kubelet (logs, exec, attach) under the kubelet's
    # Webhook authorization.
    K create clusterrolebinding apiserver-kubelet-client --clusterrole system:kubelet-api-admin \
        --user kube-apiserver-kubelet-client >/dev/null || { echo "RBAC for the kubelet client"; return 1; }
    start_controllers || { echo "controllers: $(tail -3 "$WORK/controller-manager.log" "$WORK/scheduler.log")"; return 1; }
    start_kubelet || { echo "kubelet: $(grep -E '^[EF][0-9]{4}' "$WORK/kubelet.log" | tail -5)"; return 1; }
    CLUSTER_UP_SECONDS=$((SECONDS - t0))
}

# listeners_outside_loopback: TCP/UDP sockets of the cluster's processes (and their children)
# bound to anything but loopback, one per line; empty when there is none.
listeners_outside_loopback() {
    local pids p
    pids=" $(for p in "${CLUSTER_PIDS[@]}" ${DOCKERD_PID:-} ${CONTAINERD_PID:-}; do echo "$p"; pgrep -P "$p"; done | tr '\n' ' ') "
    ss -Hlntup 2>/dev/null | while read -r _ _ _ _ local _ users; do
        case $local in 127.* | "[::1]":* | "::1":*) continue ;; esac
        for p in $(printf '%s' "$users" | grep -o 'pid=[0-9]*' | cut -d= -f2); do
            case $pids in *" $p "*) echo "$local $users" ;; esac
        done
    done
}

# cluster_stop: the kubelet first (so it restarts nothing), then every container it made, the
# engine (or containerd: containerd_stop), the controllers, kube-apiserver, etcd; TERM, 5 s, then
# KILL, by pid. Then the mounts under the run's directory (the kubelet's volume tmpfs), the
# sysctls, the host directories and the pod cgroups.
cluster_stop() {
    local p i alive ids
    [ -n "${KUBELET_PID:-}" ] && stop_pid "$KUBELET_PID" 5
    if [ -n "${DOCKERD_PID:-}" ]; then
        ids=$(DK_TIMEOUT=30 dk ps -aq 2>/dev/null)
        [ -z "$ids" ] || DK_TIMEOUT=60 dk rm -f $ids >/dev/null 2>&1
        stop_dockerd
    fi
    [ -n "${CONTAINERD_PID:-}" ] && containerd_stop
    for p in "${CLUSTER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for i in $(seq 50); do
        alive=
        for p in "${CLUSTER_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    for p in "${CLUSTER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    CLUSTER_PIDS=()
    KUBELET_PID=
    unmount_under "$WORK"
    unmount_under "$CLUSTER_RUN"
    restore_sysctls
    # Only what this run snapshotted: a run that never started touches nothing of the host's.
    if [ -n "${CLUSTER_STARTED:-}" ]; then
        host_dirs_restore
        kubepods_cleanup
    fi
    CLUSTER_STARTED=
}

# ---- images ------------------------------------------------------------------------------------
# No registry: the images are made by the container suite's functions in its own engine (the
# Dockerfile's image, the .NET app image), saved from there and loaded into this engine when their
# ids changed; then tagged as the manifests name them, so the kubelet finds them present (the
# manifests' tags are not `latest`: imagePullPolicy IfNotPresent, nothing is pulled).
IMAGES=(clrattach-test/clrattach clrattach-test/app)
IMAGE_IDS=$CLUSTER_ENGINE/data/clrattach-test-images.ids

# images_build: in the container suite's engine (started and stopped here); leaves the saved
# images in $CLUSTER_ENGINE/images.tar when the cluster engine's copies are not current.
images_build() (
    ENGINE_DIR=$CT
    DOCKERD_PID=
    ENGINE_RUN=
    trap stop_dockerd EXIT
    start_dockerd || exit 1
    make_base_image && make_app_image && make_clrattach_image || exit 1
    dk image inspect -f '{{.Id}}' "${IMAGES[@]}" >"$WORK/images.ids" || exit 1
    if ! cmp -s "$WORK/images.ids" "$IMAGE_IDS"; then
        mkdir -p "$CLUSTER_ENGINE"
        DK_TIMEOUT=600 dk save -o "$CLUSTER_ENGINE/images.tar" "${IMAGES[@]}" || exit 1
    fi
)

# images_load APP-REF CLRATTACH-REF: into the running cluster engine; the app image as APP-REF,
# the project's as CLRATTACH-REF; the pause image.
images_load() {
    local app_ref=$1 clr_ref=$2 ctx key
    if [ -s "$CLUSTER_ENGINE/images.tar" ]; then
        DK_TIMEOUT=600 dk load -q -i "$CLUSTER_ENGINE/images.tar" >/dev/null || return 1
        rm -f "$CLUSTER_ENGINE/images.tar"
        cp "$WORK/images.ids" "$IMAGE_IDS"
    fi
    dk tag clrattach-test/clrattach "$clr_ref" || return 1
    # The pod sandbox: the static pause, alone in its image.
    key=$(sha256sum "$KBIN/pause" | cut -c1-16)
    if ! image_present "$PAUSE_IMAGE" "$key"; then
        tar -C "$KBIN" -c pause | dk import -c "LABEL dev.clrattach.test.inputs=$key" \
            -c 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null || return 1
    fi
    # The app as deploy/base names it: the test app under the file name the sidecar's
    # --match-cmdline looks for (Orders.Api.dll, with its runtimeconfig; Billing.dll for the
    # docs/sidecar.md example), running for a day, with the app image's numeric USER 1654:1654.
    local aliases="Orders.Api Billing" a
    key=$( { dk image inspect -f '{{.Id}}' clrattach-test/app; declare -f app_alias_dockerfile
        echo "$aliases"; } | sha256sum | cut -c1-16)
    image_present "$app_ref" "$key" && return 0
    ctx=$WORK/app-alias
    mkdir -p "$ctx/app"
    for a in $aliases; do
        cp "$ABS_BUILD/target/ClrTarget.dll" "$ctx/app/$a.dll"
        cp "$ABS_BUILD/target/ClrTarget.runtimeconfig.json" "$ctx/app/$a.runtimeconfig.json"
    done
    app_alias_dockerfile "$key" >"$ctx/Dockerfile"
    DK_TIMEOUT=300 dk build --network none -q -t "$app_ref" "$ctx" >"$WORK/app-alias.log" 2>&1
}

app_alias_dockerfile() {
    cat <<EOF
FROM clrattach-test/app
COPY app /app
LABEL dev.clrattach.test.inputs=$1
ENTRYPOINT ["/usr/share/dotnet/dotnet", "/app/Orders.Api.dll"]
CMD ["--seconds", "86400"]
EOF
}
