#!/bin/sh
# Makes the test API server's certificates in DIR with the openssl CLI:
#   ca.crt/ca.key          the cluster CA the client is given
#   server.crt/server.key  signed by it, SANs 127.0.0.1, ::1 and localhost
#   other-ca.crt           an unrelated CA, for the wrong-CA scenario
set -eu
dir=${1:?usage: gen-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
exec 3>openssl.log
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=clrattach-test-ca" -keyout ca.key -out ca.crt 2>&3
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=kube-apiserver" -keyout server.key -out server.csr 2>&3
printf '%s\n' 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost' \
    'extendedKeyUsage=serverAuth' 'basicConstraints=CA:FALSE' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt 2>&3
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=clrattach-test-ca" -keyout other-ca.key -out other-ca.crt 2>&3
rm -f server.csr server.ext
