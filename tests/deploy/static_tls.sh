# The TLS guarantees of the static binary (libcurl + OpenSSL), in its empty root under the kill
# filter: TLS 1.2 and later only, no downgrade of a TLS 1.3-capable client, the CA file only, the
# API server's identity checked by the address it is reached at (iPAddress SANs compared as
# addresses, IPv4 and IPv6 literals alike), https only, no proxy whatever the environment says. Sourced by test_static.sh once its target
# P has a profiler: every run below is a second attach, which the runtime answers with
# already_active (3) at once, and then reports an Event, so that each scenario costs one TLS
# connection. Each scenario gets its own test API server (tests/k8s/apiserver.py) serving one
# certificate or protocol version, which appends every API request it gets to a file: whether
# anything got through is read from there, not asked over TLS.

TLS_CERTS=$WORK/certs
TLS_EVENTS_PATH="POST /apis/events.k8s.io/v1/namespaces/shop/events"

# tls_server NAME BIND CERT [TLS-VERSION]: a test API server on BIND (127.0.0.1 or ::1) serving
# $TLS_CERTS/CERT.crt, optionally one TLS version only. Sets TLS_URL (an address literal, in
# brackets for IPv6), TLS_PID and TLS_LOG (its request log).
tls_server() {
    local name=$1 bind=$2 cert=$3 ver=${4:-} host=$2
    TLS_LOG=$WORK/tls-$name.requests
    : >"$TLS_LOG"
    python3 "$K8S/apiserver.py" --ca-dir "$TLS_CERTS" --token-file "$WORK/token" --bind "$bind" \
        --cert "$cert" ${ver:+--tls-version "$ver"} --request-log "$TLS_LOG" \
        --port-file "$WORK/tls-$name.port" 2>"$WORK/tls-$name.log" &
    TLS_PID=$!
    disown "$TLS_PID"
    TARGET_PIDS+=("$TLS_PID")
    for _ in $(seq 100); do [ -s "$WORK/tls-$name.port" ] && break; sleep 0.1; done
    case $bind in *:*) host="[$bind]" ;; esac
    TLS_URL=https://$host:$(cat "$WORK/tls-$name.port" 2>/dev/null)
}

# tls_listener NAME: a plain TCP listener on 127.0.0.1 that writes one line per connection it
# accepts to $WORK/tls-NAME.conns, standing for an http:// server or a proxy. Sets TLS_PORT.
tls_listener() {
    local name=$1
    : >"$WORK/tls-$name.conns"
    python3 -c '
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("connection\n")
    c.close()
' "$WORK/tls-$name.port" "$WORK/tls-$name.conns" 2>"$WORK/tls-$name.log" &
    local pid=$!
    disown "$pid"
    TARGET_PIDS+=("$pid")
    for _ in $(seq 100); do [ -s "$WORK/tls-$name.port" ] && break; sleep 0.1; done
    TLS_PORT=$(cat "$WORK/tls-$name.port" 2>/dev/null)
}

# tls_handshakes URL VERSION [OPENSSL-ARGS...]: OpenSSL's client completes a handshake of that
# version ("1.1", "1.2", "1.3") with the server at URL. A cipher is named only when the
# handshake succeeded; the version is on the "New," line for TLS 1.3 (whose suites are 1.3's
# own) and in the session summary ("Protocol :", printed even for a failed handshake, and not
# at all for TLS 1.3 when the client quits before the session ticket) for the others.
tls_handshakes() {
    local url=$1 v=$2 out
    shift 2
    out=$(echo | timeout 10 openssl s_client -connect "${url#https://}" "-tls${v/./_}" "$@" 2>&1)
    grep -q "^New, .*Cipher is [A-Z]" <<<"$out" &&
        grep -Eq "^New, TLSv$v,|Protocol *: TLSv$v\$" <<<"$out"
}

# tls_report NAME URL [ENV=VALUE...]: the static binary's second attach to P, reporting to URL
# with the cluster CA, ENV added to its environment. Sets RC, OUT, ERR.
tls_report() {
    local name=$1 url=$2
    shift 2
    STATIC_WRAP="timeout -s KILL 60" STATIC_ENV="$*" in_empty_root "tls-$name" attach --pid "$P" \
        --profiler /libclrprobe.so --clsid "$PROBE_CLSID" --settle 0 --api-url "$url" \
        --token-file /token --ca-file /ca.crt -o json ${STATIC_SECCOMP:+--seccomp "$STATIC_SECCOMP"}
}

# tls_accepted NAME: the Event reached the server (and nothing else was wrong).
tls_accepted() {
    if [ $RC -eq 3 ] && ! grep -q "could not report" "$ERR" && grep -qx "$TLS_EVENTS_PATH" "$TLS_LOG"; then
        ok "static-tls-$1"
    else
        fail "static-tls-$1" "exit $RC, requests: $(cat "$TLS_LOG"): $(cat "$ERR")"
    fi
}

# tls_refused NAME WHY: the report failed, for a reason that matches WHY (a grep pattern: a
# refusal for another reason, a server that did not start, proves nothing), and not one request
# reached the server: the handshake ended before the token was sent.
tls_refused() {
    if [ $RC -eq 3 ] && grep "could not report" "$ERR" | grep -q "$2" && [ ! -s "$TLS_LOG" ]; then
        ok "static-tls-$1"
    else
        fail "static-tls-$1" "exit $RC, requests: $(cat "$TLS_LOG"): $(cat "$ERR")"
    fi
}

# An IPv6-literal API server whose certificate names it only as IP:::1: accepted, however the
# URL spells the address (the SAN is compared as an address, not as text). A certificate naming
# other addresses only (127.0.0.2, ::2): refused. The refusal names the address it checked
# (libcurl's own host check, which compares iPAddress SANs by their bytes).
tls_server ip6 ::1 server-ip6
tls_report ip6-literal "$TLS_URL"
tls_accepted ip6-literal
: >"$TLS_LOG"
tls_report ip6-long-spelling "https://[0:0:0:0:0:0:0:1]:${TLS_URL##*:}"
tls_accepted ip6-long-spelling
kill "$TLS_PID" 2>/dev/null

tls_server ip6-other ::1 server-other
tls_report ip6-san-mismatch "$TLS_URL"
tls_refused ip6-san-mismatch "matches target host name '::1'"
kill "$TLS_PID" 2>/dev/null

# The same for IPv4: IP:127.0.0.1 only accepted, other addresses refused, and a certificate
# that names only DNS:localhost is refused when the server is reached by its address.
tls_server ip4 127.0.0.1 server-ip4
tls_report ip4-literal "$TLS_URL"
tls_accepted ip4-literal
kill "$TLS_PID" 2>/dev/null

tls_server ip4-other 127.0.0.1 server-other
tls_report ip4-san-mismatch "$TLS_URL"
tls_refused ip4-san-mismatch "matches target host name '127.0.0.1'"
kill "$TLS_PID" 2>/dev/null

tls_server dns 127.0.0.1 server-dns
tls_report dns-only-san-by-ip "$TLS_URL"
tls_refused dns-only-san-by-ip "matches target host name '127.0.0.1'"
kill "$TLS_PID" 2>/dev/null

# Protocol versions: a TLS 1.1-only server is refused (nothing below 1.2 is compiled in); a
# TLS 1.3-only server is accepted ("TLS 1.2 or later").
tls_server tls11 127.0.0.1 server 1.1
# The server really speaks TLS 1.1 (OpenSSL's client, its security level lowered for the test).
if tls_handshakes "$TLS_URL" 1.1 -cipher 'DEFAULT:@SECLEVEL=0' && ! tls_handshakes "$TLS_URL" 1.2; then
    ok "static-tls-tls11-server-is-tls11"
else
    fail "static-tls-tls11-server-is-tls11" "not a TLS 1.1-only server"
fi
: >"$TLS_LOG"
tls_report tls11-server "$TLS_URL"
tls_refused tls11-server "alert protocol version"
kill "$TLS_PID" 2>/dev/null

tls_server tls13 127.0.0.1 server 1.3
# The server really speaks TLS 1.3 and refuses TLS 1.2.
if tls_handshakes "$TLS_URL" 1.3 && ! tls_handshakes "$TLS_URL" 1.2; then
    ok "static-tls-tls13-server-is-tls13"
else
    fail "static-tls-tls13-server-is-tls13" "not a TLS 1.3-only server"
fi
: >"$TLS_LOG"
tls_report tls13-server "$TLS_URL"
tls_accepted tls13-server
kill "$TLS_PID" 2>/dev/null

# No downgrade: a TLS 1.3-capable client answered with a forged TLS 1.2 ServerHello
# (tests/deploy/downgrade_server.py) that picks a suite the client never offered (CVE-2024-5814),
# or an offered one with the TLS 1.2 downgrade sentinel in the server random (RFC 8446 4.1.3),
# must end the handshake there with an illegal_parameter alert (2 47). A client that goes on
# waits for a certificate that never comes: "no answer" in the server's log. Every connection
# (one per retry) must have offered TLS 1.3 and been refused so, and nothing was reported.
# tls_downgrade MODE OFFERED: OFFERED is whether the forged suite is one the client offered.
tls_downgrade() {
    local mode=$1 log=$WORK/tls-downgrade-$1.conns
    : >"$log"
    python3 "$ROOT/tests/deploy/downgrade_server.py" "$mode" "$WORK/tls-downgrade-$mode.port" \
        "$log" 2>"$WORK/tls-downgrade-$mode.log" &
    local pid=$!
    disown "$pid"
    TARGET_PIDS+=("$pid")
    for _ in $(seq 100); do [ -s "$WORK/tls-downgrade-$mode.port" ] && break; sleep 0.1; done
    tls_report "downgrade-$mode" "https://127.0.0.1:$(cat "$WORK/tls-downgrade-$mode.port" 2>/dev/null)"
    kill "$pid" 2>/dev/null
    if [ $RC -eq 3 ] && grep -q "could not report" "$ERR" && [ -s "$log" ] &&
        ! grep -qv "^tls13=yes suite=0x[0-9a-f]* offered=$2 alert 2 47\$" "$log"; then
        ok "static-tls-downgrade-$mode-refused"
    else
        fail "static-tls-downgrade-$mode-refused" "exit $RC, connections: $(cat "$log"): $(cat "$ERR")"
    fi
}
tls_downgrade cipher no
tls_downgrade sentinel yes

# http:// is refused before any connection is made.
tls_listener http
tls_report http-url "http://127.0.0.1:$TLS_PORT"
if [ $RC -ne 0 ] && [ "$(json_get "$OUT" outcome 2>/dev/null)" != attached ] &&
    [ ! -s "$WORK/tls-http.conns" ] && grep -q "https" "$ERR"; then
    ok "static-tls-http-refused"
else
    fail "static-tls-http-refused" "exit $RC, $(wc -l <"$WORK/tls-http.conns") connections: $(cat "$ERR")"
fi

# Proxy variables are ignored (the static libcurl has no proxy support at all): the Event goes
# straight to the API server and the "proxy" sees no connection.
tls_listener proxy
proxy=http://127.0.0.1:$TLS_PORT
tls_server direct 127.0.0.1 server
tls_report proxy-env-ignored "$TLS_URL" HTTPS_PROXY="$proxy" https_proxy="$proxy" \
    HTTP_PROXY="$proxy" http_proxy="$proxy" ALL_PROXY="$proxy" all_proxy="$proxy"
if [ -s "$WORK/tls-proxy.conns" ]; then
    fail "static-tls-proxy-env-ignored" "the proxy got $(wc -l <"$WORK/tls-proxy.conns") connections"
else
    tls_accepted proxy-env-ignored
fi
kill "$TLS_PID" 2>/dev/null
