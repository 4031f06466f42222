# shellcheck shell=bash
# The real kube-apiserver of this suite and its etcd on loopback (sourced by run.sh and by
# bench/agent.sh, after tests/e2e/lib.sh): the PKI, free ports and the admin's kubeconfig, and
# the servers started and stopped. Needs WORK, ROOT, APISERVER (build-apiserver.sh's binary) and
# NS (the kubeconfig's namespace).
# Sets PKI, URL, KCFG, ETCD_PID, API_PID (W_PID, a watch run.sh starts, is stopped with them).
PKI=$WORK/pki
ETCD_PID= API_PID= W_PID=

# ---- certificates, keys, kubeconfig ------------------------------------------------------------
gen_pki() (
    cd "$PKI" || exit 1
    exec 2>openssl.log
    set -e
    ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@"; }
    ec -x509 -days 2 -subj "/CN=clrattach-apiserver-test-ca" -keyout ca.key -out ca.crt
    ec -x509 -days 2 -subj "/CN=clrattach-apiserver-test-ca" -keyout other-ca.key -out other-ca.crt
    # The serving certificate names the loopback address as an IP SAN, as a cluster's names
    # KUBERNETES_SERVICE_HOST.
    ec -subj "/CN=kube-apiserver" -keyout server.key -out server.csr
    printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc' \
        'extendedKeyUsage=serverAuth' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out server.crt
    # The setup's client: system:masters, the admin group RBAC's bootstrap policy binds.
    ec -subj "/O=system:masters/CN=clrattach-test-admin" -keyout admin.key -out admin.csr
    printf 'extendedKeyUsage=clientAuth\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile admin.ext -out admin.crt
    # Service-account tokens are signed with this key (RS256).
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
    openssl pkey -in sa.key -pubout -out sa.pub
)

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# apiserver_config: ports, URL and the kubeconfig of the setup's admin (KCFG).
apiserver_config() {
    ETCD_PORT=$(free_port)
    ETCD_PEER=$(free_port)
    API_PORT=$(free_port)
    URL=https://127.0.0.1:$API_PORT
    KCFG=$WORK/kubeconfig
    cat >"$KCFG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$URL", certificate-authority: "$PKI/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$PKI/admin.crt", client-key: "$PKI/admin.key"}
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: $NS}
current-context: test
EOF
}
K() { timeout 60 kubectl --kubeconfig "$KCFG" --cache-dir "$WORK/kcache" --request-timeout=30s "$@"; }

# ---- etcd and kube-apiserver -------------------------------------------------------------------
# Stops a running watch (its timeout forwards the TERM; a KILL of the timeout alone would leave
# clrattach running), kube-apiserver and etcd: TERM, 3 s, then KILL.
stop_servers() {
    local p i
    for p in $W_PID $API_PID $ETCD_PID; do kill -TERM "$p" 2>/dev/null; done
    for i in $(seq 30); do
        for p in $W_PID $API_PID $ETCD_PID; do kill -0 "$p" 2>/dev/null && break; p=; done
        [ -z "$p" ] && break
        sleep 0.1
    done
    for p in $W_PID $API_PID $ETCD_PID; do kill -KILL "$p" 2>/dev/null; done
    API_PID= ETCD_PID= W_PID=
}

start_etcd() {
    etcd --name test --data-dir "$WORK/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        --initial-cluster "test=http://127.0.0.1:$ETCD_PEER" \
        --logger zap --log-outputs stderr --log-level warn >"$WORK/etcd.log" 2>&1 &
    ETCD_PID=$!
    disown "$ETCD_PID"
    for _ in $(seq 150); do
        curl -sf "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' && return 0
        kill -0 "$ETCD_PID" 2>/dev/null || break
        sleep 0.2
    done
    return 1
}

# start_apiserver LOG [FLAGS...]: starts kube-apiserver and waits for /readyz (RBAC's bootstrap
# roles included). --v=3 logs every request with its user agent and source port, and
# GODEBUG=http2debug=1 makes Go's HTTP/2 server log each connection's source: together they
# tell which protocol a client spoke.
start_apiserver() {
    local log=$1
    shift
    GODEBUG=http2debug=1 "$APISERVER" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
        --insecure-port 0 --endpoint-reconciler-type none --cert-dir "$WORK/apiserver-certs" \
        --tls-cert-file "$PKI/server.crt" --tls-private-key-file "$PKI/server.key" \
        --client-ca-file "$PKI/ca.crt" --authorization-mode Node,RBAC \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-signing-key-file "$PKI/sa.key" \
        --service-account-key-file "$PKI/sa.pub" \
        --api-audiences https://kubernetes.default.svc.cluster.local \
        --service-cluster-ip-range 10.96.0.0/24 --allow-privileged=false --profiling=false \
        --feature-gates EphemeralContainers=true --v 3 "$@" >"$log" 2>&1 &
    API_PID=$!
    disown "$API_PID"
    APILOG=$log
    for _ in $(seq 600); do
        [ "$(curl -s --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
            --key "$PKI/admin.key" "$URL/readyz" 2>/dev/null)" = ok ] && return 0
        kill -0 "$API_PID" 2>/dev/null || break
        sleep 0.2
    done
    return 1
}

stop_apiserver() {
    kill -TERM "$API_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$API_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$API_PID" 2>/dev/null
    API_PID=
}
