#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Scenario tests of Event reporting: starts the test API server (apiserver.py) on an ephemeral
# port with fresh certificates, runs the C driver once per scenario with faults injected, and
# checks the exact requests the server saw and the outcome the driver printed.
# Env: K8S_DRIVER (default build/tests/k8s_driver). Prints "ok NAME" / "FAIL NAME" per test
# and "k8s: N passed, M failed"; exits non-zero on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
driver=${K8S_DRIVER:-$root/build/tests/k8s_driver}
case $driver in /*) ;; *) driver=$root/$driver ;; esac
[ -x "$driver" ] || { echo "k8s: driver $driver not built" >&2; exit 2; }

work=$(mktemp -d /tmp/clrattach-k8s.XXXXXX)
srv_pid=
cleanup() {
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$here/gen-certs.sh" "$work/certs" || { echo "k8s: certificate generation failed" >&2; exit 2; }
printf 'token-%s\n' "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >"$work/token"
python3 "$here/apiserver.py" --ca-dir "$work/certs" --token-file "$work/token" \
    --port-file "$work/port" 2>"$work/server.log" &
srv_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "k8s: test API server did not start" >&2; cat "$work/server.log" >&2; exit 2; }
url=https://127.0.0.1:$(cat "$work/port")
ca=$work/certs/ca.crt
T0=1790000000123456789 # event time in unix ns; the event name is derived from it

ctl() { curl -sS --fail --cacert "$ca" -X "$1" "$url$2" ${3:+--data-binary "$3"}; }

passed=0 failed=0 name= ok=1
# begin NAME [FAULTS-JSON [DENIED-JSON [UNSERVED-JSON]]]: a fresh server state with these faults,
# requests the token may not make ("VERB GROUP/RESOURCE") and group versions not served.
begin() {
    name=$1 ok=1
    ctl POST /_test/reset >/dev/null && ctl POST /_test/faults "${2:-[]}" >/dev/null &&
        ctl POST /_test/deny "${3:-[]}" >/dev/null && ctl POST /_test/unserved "${4:-[]}" >/dev/null || ok=0
    rm -f "$work/out.json" "$work/requests.json" "$work/events.json"
}
# drive [VAR=VALUE...] [-- DRIVER-ARGS...]: runs the driver in a clean env (nothing leaks from
# the host: HOSTNAME, KUBERNETES_*), with the common flags unless --bare is the first arg.
drive() {
    local envs=() common=(--api-url "$url" --token-file "$work/token" --ca-file "$ca"
        --namespace shop --time-ns "$T0")
    while [ $# -gt 0 ] && [ "$1" != -- ] && [ "$1" != --bare ]; do envs+=("$1"); shift; done
    if [ "${1:-}" = --bare ]; then common=(); shift; fi
    [ "${1:-}" = -- ] && shift
    env -i PATH="$PATH" "${envs[@]}" "$driver" "${common[@]}" "$@" >"$work/out.json" \
        2>"$work/driver.err"
    local rc=$?
    echo $rc >"$work/exit"
    # The driver prints nothing on stderr; sanitizer reports (SAN=1 builds) land there.
    if [ -s "$work/driver.err" ]; then sed 's/^/  driver: /' "$work/driver.err" >&2; ok=0; fi
    python3 "$here/expect.py" "$work" "(o.get('rc') == 0) == ($rc == 0)" || ok=0
    ctl GET /_test/requests >"$work/requests.json" && ctl GET /_test/events >"$work/events.json" || ok=0
}
expect() { python3 "$here/expect.py" "$work" "$1" || ok=0; }
finish() {
    if [ $ok = 1 ]; then echo "ok $name"; passed=$((passed + 1))
    else echo "FAIL $name"; failed=$((failed + 1)); fi
}
POD=(CLRATTACH_POD_NAME=orders-api-1 CLRATTACH_CONTAINER_NAME=app)
UID_ENV=CLRATTACH_POD_UID=2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11

begin events_v1_created
drive "${POD[@]}" "$UID_ENV"
expect 'o["rc"] == 0 and o["attempts"] == 1 and o["used_core_v1"] is False'
expect 'calls == [("POST", POST_V1, 201)]'
expect 'o["event_name"] == "orders-api-1.%x" % 1790000000123456789'
expect 'R[0]["content_type"] == "application/json" and R[0]["accept"] == "application/json"'
expect 'R[0]["authorization_headers"] == 1 and R[0]["user_agent"].startswith("clrattach/")'
expect 'R[0]["body"] == {"apiVersion": "events.k8s.io/v1", "kind": "Event",
  "metadata": {"name": o["event_name"], "namespace": "shop"},
  "eventTime": "2026-09-21T14:13:20.123456Z", "reportingController": "clrattach.dev/clrattach",
  "reportingInstance": "clrattach-orders-api-1", "action": "AttachProfiler",
  "reason": "ProfilerAttached", "type": "Normal", "note": "attached",
  "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "orders-api-1", "namespace": "shop",
                "uid": "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11", "fieldPath": "spec.containers{app}"}}'
expect 'len(E) == 1 and E[0]["postedAs"] == "events.k8s.io/v1"'
finish

begin pod_get_fills_uid
drive "${POD[@]}"
expect 'calls == [("GET", GET_POD, 200), ("POST", POST_V1, 201)] and o["rc"] == 0'
expect 'R[1]["body"]["regarding"]["uid"] == o["uid"] and len(o["uid"]) == 36'
expect 'R[0]["content_type"] is None and R[0]["body"] is None'
finish

begin pod_missing
# Any pod the server does not know is 404 (the old stand-in made up a uid for every name).
drive CLRATTACH_POD_NAME=missing-pod
expect 'calls == [("GET", "/api/v1/namespaces/shop/pods/missing-pod", 404)]'
expect 'o["errno"] == "ENOENT" and "pods \"missing-pod\" not found" in o["error"] and E == []'
finish

# events.k8s.io/v1 not served while v1beta1 is (kube-apiserver 1.20 started with
# --runtime-config=events.k8s.io/v1=false answers a Status 404 with empty details,
# tests/apiserver/run.sh).
begin fallback_core_v1 '[]' '[]' '["events.k8s.io/v1"]'
drive "${POD[@]}" "$UID_ENV" -- --type Warning --reason ProfilerAttachFailed --note "no socket"
expect 'calls == [("POST", POST_V1, 404), ("POST", POST_CORE, 201)]'
expect 'R[0]["response"]["reason"] == "NotFound" and R[0]["response"]["details"] == {}'
expect 'o["rc"] == 0 and o["used_core_v1"] is True and o["attempts"] == 2'
expect 'R[1]["body"]["apiVersion"] == "v1" and R[1]["body"]["involvedObject"]["fieldPath"] == "spec.containers{app}"'
expect 'R[1]["body"]["message"] == "no socket" and R[1]["body"]["reportingComponent"] == "clrattach.dev/clrattach"'
expect 'not any(k in R[1]["body"] for k in ("note", "regarding", "reportingController", "source", "count"))'
expect 'len(E) == 1 and E[0]["postedAs"] == "v1" and E[0]["type"] == "Warning"'
finish

# Authorization runs before routing: a Role without events.k8s.io gets 403 even where the group
# is not served, never the 404 that would switch to core/v1.
begin forbidden_before_routing '[]' '["create events.k8s.io/events"]' '["events.k8s.io/v1"]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 403)] and o["errno"] == "EACCES" and o["used_core_v1"] is False'
expect 'R[0]["response"]["message"] == "events.events.k8s.io is forbidden: User \"system:serviceaccount:shop:default\" cannot create resource \"events\" in API group \"events.k8s.io\" in the namespace \"shop\""'
finish

begin pod_get_forbidden '[]' '["get /pods"]'
drive "${POD[@]}"
expect 'calls == [("GET", GET_POD, 403)] and o["errno"] == "EACCES" and E == []'
expect '"cannot get resource \"pods\" in API group \"\"" in o["error"] and "get" in o["hint"] and "pods" in o["hint"]'
finish

begin namespace_404_is_final '[{"match": "POST", "do": "status", "status": 404, "body":
  {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 404,
   "message": "namespaces \"shop\" not found", "reason": "NotFound",
   "details": {"name": "shop", "kind": "namespaces"}}}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 404)] and o["errno"] == "ENOENT"'
expect '"namespaces \"shop\" not found" in o["error"] and o["used_core_v1"] is False'
finish

# No version of events.k8s.io served: the mux's text/plain 404 (1.20 with v1 and v1beta1 off).
begin fallback_on_text_404 '[]' '[]' '["events.k8s.io"]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 404), ("POST", POST_CORE, 201)] and o["rc"] == 0'
expect 'R[0]["response"] == "404 page not found\n"'
finish

begin token_rotated_401_once '[{"match": "POST", "do": "rotate401", "times": 1}]'
old_token=$(tr -d '\n' <"$work/token")
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 401), ("POST", POST_V1, 201)] and o["rc"] == 0'
expect "R[0]['token'] == '$old_token' and R[1]['token'].startswith('rotated-')"
finish

begin token_401_twice_gives_up '[{"match": "POST", "do": "rotate401", "times": 5}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 401), ("POST", POST_V1, 401)]'
expect 'o["errno"] == "EACCES" and "token" in o["hint"] and E == []'
finish

begin forbidden_403 '[{"match": "POST", "do": "status", "status": 403}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 403)] and o["errno"] == "EACCES"'
expect '"cannot create resource \"events\"" in o["error"]'
expect '"[create]" in o["hint"] and "events.k8s.io" in o["hint"] and "shop" in o["hint"]'
finish

begin conflict_409_first_try '[{"match": "POST", "do": "status", "status": 409}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 409)] and o["errno"] == "EEXIST"'
finish

begin lost_response_then_409_is_success '[{"match": "POST", "do": "store500", "times": 1}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 500), ("POST", POST_V1, 409)] and o["rc"] == 0'
expect 'len(E) == 1 and R[0]["body"] == R[1]["body"]'
finish

# A report counts only when the answer shows the Event stored: a create is answered 201 with
# the Event sent, a series PATCH 200 with it. A proxy's page, a body cut short, another object,
# or a 200 to a create is a failure, not retried: what answered may not be the apiserver.
EV=$(printf 'orders-api-1.%x' "$T0")
# stored NAME FAULTS TEXT: one create answered by the fault, refused with TEXT in the error.
stored() {
    begin "$1" "$2"
    drive "${POD[@]}" "$UID_ENV"
    expect 'len(calls) == 1 and calls[0][:2] == ("POST", POST_V1) and o["errno"] == "EPROTO"'
    expect "'HTTP %d' % calls[0][2] in o['error'] and \"$3\" in o['error']"
    expect '"is something else answering at https://127.0.0.1:" in o["hint"]'
    finish
}
stored create_201_json_cut_short '[{"match": "POST", "do": "text", "status": 201,
  "text": "{\"kind\":\"Event\",\"metadata\":{", "content_type": "application/json"}]' "not JSON"
stored create_201_text '[{"match": "POST", "do": "text", "status": 201, "text": "created"}]' \
    "not JSON: created"
stored create_200_html '[{"match": "POST", "do": "text", "status": 200,
  "text": "<html><body>Welcome</body></html>", "content_type": "text/html"}]' "<html><body>Welcome"
stored create_200_with_the_event "[{\"match\": \"POST\", \"do\": \"status\", \"status\": 200,
  \"body\": {\"kind\": \"Event\", \"apiVersion\": \"events.k8s.io/v1\",
             \"metadata\": {\"name\": \"$EV\", \"namespace\": \"shop\"}}}]" "HTTP 200"
stored create_201_status '[{"match": "POST", "do": "status", "status": 201,
  "body": {"kind": "Status", "apiVersion": "v1", "code": 201}}]' "kind is not Event"
stored create_201_another_event '[{"match": "POST", "do": "status", "status": 201,
  "body": {"kind": "Event", "metadata": {"name": "orders-api-1.1"}}}]' "about another Event"

begin series_patch_200_html '[{"match": "PATCH", "do": "text", "status": 200,
  "text": "<html>OK</html>", "content_type": "text/html"}]'
drive "${POD[@]}" "$UID_ENV" -- --repeat 2 --key k
expect 'calls == [("POST", POST_V1, 201), ("PATCH", POST_V1 + "/" + o["runs"][0]["event_name"], 200)]'
expect 'o["errno"] == "EPROTO" and "not JSON: <html>OK</html>" in o["error"] and o["patched"] is False'
finish

begin series_patch_201 "[{\"match\": \"PATCH\", \"do\": \"status\", \"status\": 201,
  \"body\": {\"kind\": \"Event\", \"metadata\": {\"name\": \"$EV\"}}}]"
drive "${POD[@]}" "$UID_ENV" -- --repeat 2 --key k
expect 'calls == [("POST", POST_V1, 201), ("PATCH", POST_V1 + "/" + o["runs"][0]["event_name"], 201)]'
expect 'o["errno"] == "EPROTO" and "HTTP 201" in o["error"] and o["patched"] is False'
finish

begin invalid_422_causes '[{"match": "POST", "do": "status", "status": 422}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 422)] and o["errno"] == "EINVAL"'
expect '"is invalid" in o["error"] and "[reason: Required value]" in o["error"]'
finish

begin rate_limited_429_retry_after '[{"match": "POST", "do": "429", "retry_after": 1}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 429), ("POST", POST_V1, 201)] and o["rc"] == 0'
expect 'o["log"][0]["slept_ms"] == 1000'
finish

begin rate_limited_429_exhausted '[{"match": "POST", "do": "429", "retry_after": 1, "times": 9}]'
drive "${POD[@]}" "$UID_ENV" -- --attempts 2
expect 'calls == [("POST", POST_V1, 429)] * 2 and o["errno"] == "EAGAIN"'
expect '"Too many requests" in o["error"]'
finish

begin server_errors_retried '[{"match": "POST", "do": "status", "status": 503, "times": 2}]'
drive "${POD[@]}" "$UID_ENV"
expect 'calls == [("POST", POST_V1, 503)] * 2 + [("POST", POST_V1, 201)] and o["rc"] == 0'
expect 'all(100 <= l["slept_ms"] <= 400 for l in o["log"][:1]) and o["log"][2]["slept_ms"] == 0'
finish

begin server_errors_exhausted '[{"match": "POST", "do": "status", "status": 500, "times": 9}]'
drive "${POD[@]}" "$UID_ENV" -- --attempts 3
expect 'calls == [("POST", POST_V1, 500)] * 3 and o["errno"] == "EAGAIN" and o["attempts"] == 3'
finish

begin hang_past_timeout '[{"match": "POST", "do": "hang", "seconds": 4, "times": 9}]'
start=$(date +%s%N)
drive "${POD[@]}" "$UID_ENV" -- --timeout-ms 600 --attempts 2 --budget-ms 3000
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect 'o["errno"] == "ETIMEDOUT" and o["attempts"] == 2 and [l["curl"] for l in o["log"]] == [28, 28]'
expect "$elapsed_ms < 3000"
finish

begin wrong_ca_fails_verification
drive "${POD[@]}" "$UID_ENV" -- --ca-file "$work/certs/other-ca.crt"
expect 'o["errno"] == "EACCES" and o["attempts"] == 1 and R == [] and o["log"][0]["curl"] == 60'
expect '"certificate" in o["hint"]'
finish

begin utf8_note_cut_to_1024
note=$(python3 -c 'print("é" * 700, end="")')
drive "${POD[@]}" "$UID_ENV" -- --note "$note"
expect 'calls == [("POST", POST_V1, 201)]'
expect 'len(E[0]["note"].encode()) == 1024 and E[0]["note"] == "é" * 512'
finish

begin in_cluster_env_and_sa_dir
mkdir -p "$work/sa" && cp "$work/token" "$work/sa/token" && cp "$ca" "$work/sa/ca.crt"
printf 'shop\n' >"$work/sa/namespace"
# The server checks the token of the file it was given; this copy is the same token.
drive KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="${url##*:}" \
    POD_NAME=orders-api-1 POD_UID=2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11 \
    --bare --sa-dir "$work/sa" --time-ns "$T0"
expect 'calls == [("POST", POST_V1, 201)] and o["rc"] == 0'
expect '"fieldPath" not in R[0]["body"]["regarding"]'
finish

begin ipv6_service_host_in_brackets
# A second server on ::1 with the same certificates and token; the URL must come out as
# https://[::1]:port from KUBERNETES_SERVICE_HOST=::1.
python3 "$here/apiserver.py" --bind ::1 --ca-dir "$work/certs" --token-file "$work/token" \
    --port-file "$work/port6" 2>"$work/server6.log" &
srv6_pid=$!
for _ in $(seq 100); do [ -s "$work/port6" ] && break; sleep 0.1; done
if [ -s "$work/port6" ]; then
    drive KUBERNETES_SERVICE_HOST=::1 KUBERNETES_SERVICE_PORT="$(cat "$work/port6")" \
        "${POD[@]}" "$UID_ENV" --bare --sa-dir "$work/sa" --time-ns "$T0"
    expect 'o["rc"] == 0 and R == []' # nothing reached the IPv4 server
    curl -sS -g --cacert "$ca" "https://[::1]:$(cat "$work/port6")/_test/requests" >"$work/requests.json" || ok=0
    expect 'calls == [("POST", POST_V1, 201)]'
else
    echo "  no IPv6 loopback: $(cat "$work/server6.log")" >&2
    ok=0
fi
kill "$srv6_pid" 2>/dev/null
wait "$srv6_pid" 2>/dev/null
finish

# TLS scenarios, each against a server of its own serving one certificate (gen-certs.sh) or one
# TLS version, which appends every API request it gets to $work/extra.requests: the same
# guarantees tests/deploy/static_tls.sh checks on the static build (libcurl + OpenSSL built from
# Debian's sources), here on the glibc build (Debian's libcurl4-openssl). extra_server BIND CERT
# [TLS-VERSION] sets extra_url.
extra_pid=
extra_server() {
    local bind=$1 cert=$2 ver=${3:-} host=$1
    rm -f "$work/extra.port"
    : >"$work/extra.requests"
    python3 "$here/apiserver.py" --bind "$bind" --cert "$cert" ${ver:+--tls-version "$ver"} \
        --ca-dir "$work/certs" --token-file "$work/token" --request-log "$work/extra.requests" \
        --port-file "$work/extra.port" 2>"$work/extra.log" &
    extra_pid=$!
    for _ in $(seq 100); do [ -s "$work/extra.port" ] && break; sleep 0.1; done
    [ -s "$work/extra.port" ] || { echo "  server did not start: $(cat "$work/extra.log")" >&2; ok=0; }
    case $bind in *:*) host="[$bind]" ;; esac
    extra_url=https://$host:$(cat "$work/extra.port" 2>/dev/null)
}
extra_stop() {
    kill "$extra_pid" 2>/dev/null
    wait "$extra_pid" 2>/dev/null
}
# drive_extra: one report to extra_url, one attempt; nothing may reach the main server.
drive_extra() {
    drive "${POD[@]}" "$UID_ENV" --bare --api-url "$extra_url" --token-file "$work/token" \
        --ca-file "$ca" --namespace shop --time-ns "$T0" --attempts 1
    expect 'R == []'
}
extra_reached() { [ "$(grep -c '^POST ' "$work/extra.requests")" = 1 ] || ok=0; }
extra_untouched() { [ ! -s "$work/extra.requests" ] || ok=0; }

for fam in ip6:::1 ip4:127.0.0.1; do
    begin "tls_${fam%%:*}_literal_by_ip_san"
    extra_server "${fam#*:}" "server-${fam%%:*}"
    drive_extra
    expect 'o["rc"] == 0'
    extra_reached
    extra_stop
    finish

    begin "tls_${fam%%:*}_san_names_other_addresses"
    extra_server "${fam#*:}" server-other
    drive_extra
    expect 'o["errno"] == "EACCES" and o["log"][0]["curl"] == 60'
    extra_untouched
    extra_stop
    finish
done

begin tls_dns_only_san_reached_by_ip
extra_server 127.0.0.1 server-dns
drive_extra
expect 'o["errno"] == "EACCES" and o["log"][0]["curl"] == 60'
extra_untouched
extra_stop
finish

begin tls11_server_refused
extra_server 127.0.0.1 server 1.1
drive_extra
expect 'o["rc"] != 0 and o["log"][0]["curl"] == 35'
extra_untouched
extra_stop
finish

begin tls13_only_server_accepted
extra_server 127.0.0.1 server 1.3
drive_extra
expect 'o["rc"] == 0'
extra_reached
extra_stop
finish

begin not_in_cluster
drive "${POD[@]}" --bare --sa-dir "$work/sa"
expect 'o["errno"] == "ENOENT" and "KUBERNETES_SERVICE_HOST" in o["error"] and R == []'
[ "$(cat "$work/exit")" = 2 ] || ok=0
finish

# Event series: --key reports --repeat times through one cache, --step-ns apart (default 1 s).
PATCH_V1='"/apis/events.k8s.io/v1/namespaces/shop/events/" + o["runs"][0]["event_name"]'
T1=2026-09-21T14:13:21.123456Z T2=2026-09-21T14:13:22.123456Z

begin series_three_reports_one_key
drive "${POD[@]}" -- --repeat 3 --key 'ProfilerAttached|clrprobe|0'
expect "calls == [('GET', GET_POD, 200), ('POST', POST_V1, 201), ('PATCH', $PATCH_V1, 200),
  ('PATCH', $PATCH_V1, 200)] and o['rc'] == 0"
expect '[(r["patched"], r["series_count"]) for r in o["runs"]] == [(False, 1), (True, 2), (True, 3)]'
expect 'len(set(r["event_name"] for r in o["runs"])) == 1 and o["attempts"] == 1'
expect "R[2]['content_type'] == 'application/merge-patch+json' and R[2]['accept'] == 'application/json'"
expect "R[2]['body'] == {'series': {'count': 2, 'lastObservedTime': '$T1'}}"
expect "R[3]['body'] == {'series': {'count': 3, 'lastObservedTime': '$T2'}}"
expect "len(E) == 1 and E[0]['series'] == {'count': 3, 'lastObservedTime': '$T2'}"
expect 'E[0]["note"] == "attached" and E[0]["eventTime"] == "2026-09-21T14:13:20.123456Z"'
finish

begin series_two_keys
drive "${POD[@]}" "$UID_ENV" -- --repeat 4 --key a --key b
expect 'calls == [("POST", POST_V1, 201)] * 2 + [("PATCH", POST_V1 + "/" + n, 200)
  for n in (o["runs"][0]["event_name"], o["runs"][1]["event_name"])]'
expect '[r["series_count"] for r in o["runs"]] == [1, 1, 2, 2] and o["rc"] == 0'
expect 'len(E) == 2 and [e["series"]["count"] for e in E] == [2, 2]'
finish

begin series_window_from_head
# 359.999 s after the head: same series; 719.998 s after it: outside the window, a new head.
drive "${POD[@]}" "$UID_ENV" -- --repeat 3 --key k --step-ns 359999000000
expect '[c[0] for c in calls] == ["POST", "PATCH", "POST"] and all(c[2] in (200, 201) for c in calls)'
expect '[(r["patched"], r["series_count"]) for r in o["runs"]] == [(False, 1), (True, 2), (False, 1)]'
expect 'o["runs"][2]["event_name"] == "orders-api-1.%x" % (1790000000123456789 + 2 * 359999000000)'
expect 'len(E) == 2 and "series" in E[0] and "series" not in E[1]'
finish

begin series_after_window_posts
drive "${POD[@]}" "$UID_ENV" -- --repeat 2 --key k --step-ns 360000000000
expect 'calls == [("POST", POST_V1, 201)] * 2 and [r["series_count"] for r in o["runs"]] == [1, 1]'
expect 'len(E) == 2 and not any("series" in e for e in E)'
finish

begin series_clock_back_posts
# A report timed before the head (the clock stepped back) starts a new Event rather than a
# series whose lastObservedTime precedes its eventTime.
drive "${POD[@]}" "$UID_ENV" -- --repeat 2 --key k --step-ns -1000
expect 'calls == [("POST", POST_V1, 201)] * 2 and [r["series_count"] for r in o["runs"]] == [1, 1]'
expect 'o["event_name"] == "orders-api-1.%x" % (1790000000123456789 - 1000)'
finish

begin series_other_pod_same_key
# One key, reports about two pods in turn: an Event about one pod never counts the other's.
drive "${POD[@]}" "$UID_ENV" -- --repeat 3 --key k --alt-pod orders-api-2
expect 'calls == [("POST", POST_V1, 201), ("GET", GET_POD[:-1] + "2", 200), ("POST", POST_V1, 201),
  ("POST", POST_V1, 201)] and [r["series_count"] for r in o["runs"]] == [1, 1, 1]'
expect 'sorted(e["regarding"]["name"] for e in E) == ["orders-api-1", "orders-api-1", "orders-api-2"]'
finish

begin series_patch_404_recreates '[{"match": "PATCH", "do": "expire", "times": 1}]'
drive "${POD[@]}" "$UID_ENV" -- --repeat 3 --key k
expect "calls == [('POST', POST_V1, 201), ('PATCH', $PATCH_V1, 404), ('POST', POST_V1, 201),
  ('PATCH', POST_V1 + '/' + o['runs'][1]['event_name'], 200)] and o['rc'] == 0"
expect '[(r["patched"], r["series_count"], r["attempts"]) for r in o["runs"]] == [(False, 1, 1), (False, 1, 2), (True, 2, 1)]'
expect 'R[1]["response"]["reason"] == "NotFound" and o["runs"][1]["event_name"] != o["runs"][0]["event_name"]'
expect "(len(E) == 1 and E[0]['metadata']['name'] == o['runs'][1]['event_name'] and
  E[0]['series'] == {'count': 2, 'lastObservedTime': '$T2'})"
finish

begin series_core_v1_fallback '[]' '[]' '["events.k8s.io/v1"]'
drive "${POD[@]}" "$UID_ENV" -- --repeat 3 --key k
expect 'calls == [("POST", POST_V1, 404), ("POST", POST_CORE, 201)] + [("PATCH", POST_CORE + "/" + o["event_name"], 200)] * 2'
expect '[(r["used_core_v1"], r["series_count"]) for r in o["runs"]] == [(True, 1), (True, 2), (True, 3)]'
expect "R[3]['body'] == {'series': {'count': 3, 'lastObservedTime': '$T2'}} and R[3]['response']['apiVersion'] == 'v1'"
expect 'len(E) == 1 and E[0]["postedAs"] == "v1" and E[0]["series"]["count"] == 3'
finish

begin series_patch_500_retried '[{"match": "PATCH", "do": "status", "status": 500, "times": 1}]'
drive "${POD[@]}" "$UID_ENV" -- --repeat 2 --key k
expect "calls == [('POST', POST_V1, 201), ('PATCH', $PATCH_V1, 500), ('PATCH', $PATCH_V1, 200)]"
expect 'o["rc"] == 0 and o["patched"] is True and o["attempts"] == 2 and o["log"][0]["slept_ms"] > 0'
expect 'R[1]["body"] == R[2]["body"] and E[0]["series"]["count"] == 2'
finish

begin series_patch_403_final '[{"match": "PATCH", "do": "status", "status": 403}]'
drive "${POD[@]}" "$UID_ENV" -- --repeat 3 --key k
expect "calls == [('POST', POST_V1, 201), ('PATCH', $PATCH_V1, 403)] and o['errno'] == 'EACCES'"
expect 'len(o["runs"]) == 2 and "patch" in o["hint"] and o["patched"] is False'
expect 'len(E) == 1 and "series" not in E[0]'
finish

begin series_cache_evicts_oldest
# K8S_SERIES_MAX (64) heads are remembered: the 65th key evicts k0, whose repeat then starts a
# new Event, while the newest key (k64) still continues its series.
keys=()
for i in $(seq 0 64); do keys+=(--key "k$i"); done
drive "${POD[@]}" "$UID_ENV" -- --repeat 67 "${keys[@]}" --key k0 --key k64
expect '[c[0] for c in calls] == ["POST"] * 66 + ["PATCH"] and o["rc"] == 0'
expect '[r["series_count"] for r in o["runs"][64:]] == [1, 1, 2] and len(E) == 66'
expect 'calls[-1][1] == POST_V1 + "/" + o["runs"][64]["event_name"]'
finish

begin series_bad_key
drive "${POD[@]}" "$UID_ENV" -- --key "$(printf 'k%.0s' $(seq 513))"
expect 'o["errno"] == "EINVAL" and R == []'
finish

begin patch_server_validation
# The PATCH side of the stand-in must refuse what the apiserver refuses.
auth="Authorization: Bearer $(tr -d '\n' <"$work/token")"
drive "${POD[@]}" "$UID_ENV"
ev=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["event_name"])' "$work/out.json")
patch() {
    local got
    got=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$ca" -H "$auth" -X PATCH \
        -H "Content-Type: $2" --data-binary "$4" "$url$3")
    [ "$got" = "$1" ] || { echo "  patch_server_validation: want $1 got $got for $3 $4" >&2; ok=0; }
}
MP=application/merge-patch+json V1=/apis/events.k8s.io/v1/namespaces/shop/events
ser() { printf '{"series":{"count":%s,"lastObservedTime":"%s"}}' "$1" "$2"; }
patch 415 application/json "$V1/$ev" "$(ser 2 "$T1")"
patch 404 $MP "$V1/nope.1" "$(ser 2 "$T1")"
patch 422 $MP "$V1/$ev" "$(ser 1 "$T1")"
patch 422 $MP "$V1/$ev" '{"series":{"count":2}}'
patch 400 $MP "$V1/$ev" "$(ser 2 2026-09-21T14:13:21Z)"
patch 422 $MP "$V1/$ev" '{"note":"changed"}'
patch 400 $MP "$V1/$ev" '{"foo":1}'
patch 200 $MP "$V1/$ev" "$(ser 2 "$T1")"
patch 200 $MP "/api/v1/namespaces/shop/events/$ev" "$(ser 3 "$T2")"
ctl GET /_test/requests >"$work/requests.json" && ctl GET /_test/events >"$work/events.json" || ok=0
expect 'R[2]["response"]["details"]["name"] == "nope.1" and R[2]["response"]["reason"] == "NotFound"'
expect '[c["field"] for c in R[3]["response"]["details"]["causes"]] == ["series.count"]'
expect '[c["field"] for c in R[6]["response"]["details"]["causes"]] == ["note"]'
expect "len(E) == 1 and E[0]['series'] == {'count': 3, 'lastObservedTime': '$T2'} and E[0]['note'] == 'attached'"
ctl POST /_test/reset-events >/dev/null || ok=0
patch 404 $MP "$V1/$ev" "$(ser 4 "$T2")"
finish

begin server_validation
# The server itself must reject what the apiserver rejects; otherwise the scenarios above prove
# little. Each line: expected status, API group path, body.
auth="Authorization: Bearer $(tr -d '\n' <"$work/token")"
good='{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"p.1"},"eventTime":"2026-01-01T00:00:00.000001Z","reportingController":"a.b/c","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"apiVersion":"v1","kind":"Pod","name":"p","namespace":"shop"}}'
post() {
    local got
    got=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$ca" -H "$auth" \
        -H 'Content-Type: application/json' --data-binary "$3" "$url$2")
    [ "$got" = "$1" ] || { echo "  server_validation: want $1 got $got for $3" >&2; ok=0; }
}
mut() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); exec(sys.argv[2]); print(json.dumps(d))' "$good" "$1"; }
V1=/apis/events.k8s.io/v1/namespaces/shop/events CORE=/api/v1/namespaces/shop/events
post 201 $V1 "$good"
post 409 $V1 "$good"
post 400 $V1 "$(mut 'd["eventTime"] = "2026-01-01T00:00:00Z"')"
post 400 $V1 "$(mut 'd["eventTime"] = "2026-01-01T00:00:00.123Z"')"
post 422 $V1 "$(mut 'del d["eventTime"]; d["metadata"]["name"] = "p.2"')"
post 422 $V1 "$(mut 'del d["reportingController"]; d["metadata"]["name"] = "p.3"')"
post 422 $V1 "$(mut 'd["reportingController"] = "a/b/c"; d["metadata"]["name"] = "p.4"')"
post 422 $V1 "$(mut 'd["type"] = "Info"; d["metadata"]["name"] = "p.5"')"
post 422 $V1 "$(mut 'd["deprecatedCount"] = 1; d["metadata"]["name"] = "p.6"')"
post 422 $V1 "$(mut 'd["reason"] = "R" * 129; d["metadata"]["name"] = "p.7"')"
post 422 $V1 "$(mut 'd["note"] = "n" * 1025; d["metadata"]["name"] = "p.8"')"
post 422 $V1 "$(mut 'd["regarding"]["namespace"] = "other"; d["metadata"]["name"] = "p.9"')"
post 422 $V1 "$(mut 'd["metadata"]["name"] = "Bad_Name"')"
post 400 $V1 "$(mut 'd["metadata"]["namespace"] = "other"')"
post 400 $V1 "$(mut 'd["foo"] = 1; d["metadata"]["name"] = "p.10"')"
post 400 $V1 'not json'
post 201 $CORE '{"apiVersion":"v1","kind":"Event","metadata":{"name":"p.11"},"involvedObject":{"kind":"Pod","name":"p","namespace":"shop"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"},"count":1}'
post 422 $CORE '{"apiVersion":"v1","kind":"Event","metadata":{"name":"p.12"},"involvedObject":{"kind":"Pod","name":"p","namespace":"other"},"reason":"R"}'
post 422 $CORE '{"apiVersion":"v1","kind":"Event","metadata":{"name":"p.13"},"involvedObject":{"kind":"Pod","name":"p","namespace":"shop"},"reason":"R","eventTime":"2026-01-01T00:00:00.000001Z"}'
post 400 $CORE "$good"
auth="Authorization: Bearer wrong"
post 401 $V1 "$(mut 'd["metadata"]["name"] = "p.14"')"
ctl GET /_test/requests >"$work/requests.json" && ctl GET /_test/events >"$work/events.json" || ok=0
expect 'sorted(e["metadata"]["name"] for e in E) == ["p.1", "p.11"]'
expect '[c["field"] for c in R[4]["response"]["details"]["causes"]] == ["eventTime"]'
expect 'R[5]["response"]["details"]["causes"][0] == {"reason": "FieldValueRequired",
  "message": "Required value", "field": "reportingController"}'
expect 'R[9]["response"]["message"].startswith("Event.events.k8s.io \"p.7\" is invalid: reason:")'
expect '[c["field"] for c in R[18]["response"]["details"]["causes"]] == ["reportingComponent",
  "reportingInstance", "action"] and "group" not in R[18]["response"]["details"]'
expect 'R[20]["response"]["reason"] == "Unauthorized"'
finish

begin cli_exit_code_is_the_process_code '[{"match": "POST", "do": "status", "status": 403, "times": 9}]'
# The CLI itself (not the driver): the exit_code in its JSON and in the termination log is the
# code the process ends with (issue 15: with --events=required they said 0 while it exited 10).
# A process that is not .NET stands in for the target, so the attach fails (4) and the report
# is refused; the e2e suites cover the 0 -> 10 case with a real runtime.
cli=$root/${BUILD:-build}/clrattach probe=$root/${BUILD:-build}/libclrprobe.so
if [ -x "$cli" ] && [ -f "$probe" ]; then
    # Its own tmpfs /tmp (as root): a stale socket in the machine's /tmp may name its pid
    # (tests/e2e/lib.sh, start_not_dotnet).
    if [ "$(id -u)" = 0 ]; then
        unshare --mount --propagation private sh -c \
            'mount -t tmpfs -o mode=1777 tmpfs /tmp && exec sleep 60' >/dev/null 2>&1 &
    else
        sleep 60 &
    fi
    notnet=$!
    for _ in $(seq 100); do
        [ "$(cat /proc/$notnet/comm 2>/dev/null)" = sleep ] && break
        sleep 0.05
    done
    # LeakSanitizer (SAN=1) cannot scan under the seccomp filter: tests/e2e/lib.sh says why.
    env -i PATH="$PATH" ASAN_OPTIONS=detect_leaks=0 CLRATTACH_POD_NAME=orders-api-1 "$cli" attach --pid "$notnet" \
        --profiler "$probe" --clsid '{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}' -o json \
        --events=required --api-url "$url" --token-file "$work/token" --ca-file "$ca" \
        --namespace shop --pod-uid 2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11 \
        --termination-log "$work/tlog" >"$work/cli.json" 2>"$work/cli.err"
    rc=$?
    kill "$notnet" 2>/dev/null
    wait "$notnet" 2>/dev/null
    python3 - "$work/cli.json" "$work/tlog" "$rc" <<'PY' || { ok=0; sed 's/^/  cli: /' "$work/cli.err" >&2; }
import json, sys
out = json.loads(open(sys.argv[1]).readline())
tlog = json.loads(open(sys.argv[2]).read())
rc = int(sys.argv[3])
assert rc == 4 and out["exit_code"] == rc and tlog["exit_code"] == rc, (rc, out, tlog)
assert out["outcome"] == tlog["outcome"] == "not_dotnet", out
PY
    grep -q 'error: could not report the Event' "$work/cli.err" || ok=0
else
    echo "  $cli or $probe not built (make all)" >&2
    ok=0
fi
finish

echo "k8s: $passed passed, $failed failed"
[ "$failed" = 0 ]
