#!/bin/sh
# Makes the test API server's certificates in DIR with the openssl CLI:
#   ca.crt/ca.key          the cluster CA the client is given
#   server.crt/server.key  signed by it, SANs 127.0.0.1, ::1 and localhost
#   other-ca.crt           an unrelated CA, for the wrong-CA scenario
# and, signed by the same CA, servers that name themselves in one way only (apiserver.py
# --cert NAME), for the host-name checks:
#   server-ip4    IP:127.0.0.1 only          server-ip6    IP:::1 only
#   server-dns    DNS:localhost only         server-other  IP:127.0.0.2 and IP:::2
set -eu
dir=${1:?usage: gen-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
exec 3>openssl.log
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=clrattach-test-ca" -keyout ca.key -out ca.crt 2>&3
# server NAME SAN: NAME.crt/NAME.key, signed by the CA, with that subjectAltName.
server() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=kube-apiserver" -keyout "$1.key" -out "$1.csr" 2>&3
    printf '%s\n' "subjectAltName=$2" 'extendedKeyUsage=serverAuth' 'basicConstraints=CA:FALSE' \
        >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.crt" 2>&3
    rm -f "$1.csr" "$1.ext"
}
server server 'IP:127.0.0.1,IP:::1,DNS:localhost'
server server-ip4 'IP:127.0.0.1'
server server-ip6 'IP:::1'
server server-dns 'DNS:localhost'
server server-other 'IP:127.0.0.2,IP:::2'
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=clrattach-test-ca" -keyout other-ca.key -out other-ca.crt 2>&3
