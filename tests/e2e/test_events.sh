#!/usr/bin/env bash
# Every attach reported as an Event on the pod, over TLS with a bearer token, to the project's
# test API server (tests/k8s/apiserver.py), with clrattach under its seccomp filter (kill). The
# result is never lost: stdout, exit code and termination log stay right whatever the API does.
. "$(dirname "$0")/lib.sh"
require_env

start_apiserver events || exit 1

# kattach ARGS...: attach with the reporting flags and a downward-API-like environment.
kattach() {
    OUT="$WORK/out.k" ERR="$WORK/err.k"
    env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" CLRATTACH_POD_NAME=orders-7d9c8b6f5-x2x7k \
        CLRATTACH_POD_NAMESPACE=shop CLRATTACH_CONTAINER_NAME=app \
        "$CLRATTACH" attach --api-url "$URL" --token-file "$WORK/token" --ca-file "$CA" \
        --termination-log "$WORK/tlog" -o json "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

# events_check PYTHON-ASSERTIONS: runs assertions over the stored events (list `ev`).
events_check() {
    # What the server stored, in events.k8s.io/v1 form whichever API was used.
    ctl GET /_test/events >"$WORK/events.json" || return 1
    python3 - "$WORK/events.json" "$1" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
exec(sys.argv[2])
PY
}

if start_target events-app --pidns --uid 1000; then
    P=$TARGET_PID
    ctl POST /_test/reset >/dev/null
    kattach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 0 ] && events_check '
assert len(ev) == 1, ev
e = ev[0]
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal", e
r = e["regarding"]
assert r["kind"] == "Pod" and r["name"] == "orders-7d9c8b6f5-x2x7k" and r["uid"], r
assert r["fieldPath"] == "spec.containers{app}", r
assert "pid 1" in e["note"] and "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}" in e["note"], e
assert e["reportingController"] == "clrattach.dev/clrattach"
'; then
        ok "event-attached"
    else
        fail "event-attached" "exit $RC: $(cat "$ERR") $(cat "$WORK/events.json" 2>/dev/null)"
    fi
    grep -q "reported Event" "$ERR" && ok "event-logged" || fail "event-logged" "$(cat "$ERR")"
    [ "$(json_get "$WORK/tlog" outcome)" = attached ] && ok "termination-log" || fail "termination-log" "$(cat "$WORK/tlog")"

    # Already active: its own reason, Normal.
    ctl POST /_test/reset >/dev/null
    kattach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 3 ] && events_check '
assert len(ev) == 1 and ev[0]["reason"] == "ProfilerAlreadyActive" and ev[0]["type"] == "Normal", ev
assert "0x8013136A" in ev[0]["note"], ev
n = ev[0]["note"]
assert ".." not in n.replace("...", "") and n.endswith(".") and ". Next step: " in n, n
'; then ok "event-already-active"; else fail "event-already-active" "exit $RC $(cat "$ERR")"; fi

    # The API refuses (403): the attach outcome is unchanged, a warning says why.
    ctl POST /_test/reset >/dev/null
    ctl POST /_test/faults '[{"match": "POST", "do": "status", "status": 403}]' >/dev/null
    kattach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 3 ] && grep -q "warning: could not report" "$ERR" && grep -qi "forbidden\|rbac\|cannot create" "$ERR" &&
        [ "$(json_get "$OUT" outcome)" = already_active ] && [ "$(json_get "$WORK/tlog" outcome)" = already_active ]; then
        ok "event-403-does-not-change-outcome"
    else
        fail "event-403-does-not-change-outcome" "exit $RC: $(cat "$ERR")"
    fi
fi

# A failed attach is a Warning; --events=required turns a lost report into exit 10 only when
# the attach itself succeeded.
if start_target events-app2 --pidns; then
    P=$TARGET_PID
    ctl POST /_test/reset >/dev/null
    ctl POST /_test/faults '[{"match": "POST", "do": "status", "status": 500, "times": 99}]' >/dev/null
    kattach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --events=required
    if [ $RC -eq 10 ] && [ "$(json_get "$OUT" outcome)" = attached ] && grep -q "error: could not report" "$ERR"; then
        ok "events-required-exit-10"
    else
        fail "events-required-exit-10" "exit $RC: $(cat "$ERR")"
    fi
    # stdout and the termination log carry the code the process ends with (issue 15: they
    # said 0 while the process exited 10).
    if [ $RC -eq 10 ] && [ "$(json_get "$OUT" exit_code)" = 10 ] &&
        [ "$(json_get "$WORK/tlog" exit_code)" = 10 ] && [ "$(json_get "$WORK/tlog" outcome)" = attached ]; then
        ok "events-required-exit-code-in-json-and-termination-log"
    else
        fail "events-required-exit-code-in-json-and-termination-log" "exit $RC: $(cat "$OUT") tlog: $(cat "$WORK/tlog")"
    fi
fi
start_not_dotnet 300
ctl POST /_test/reset >/dev/null
kattach --pid "$NOTNET" --profiler "$PROBE" --clsid "$PROBE_CLSID"
if [ $RC -eq 4 ] && events_check '
assert len(ev) == 1 and ev[0]["reason"] == "ProfilerAttachFailed" and ev[0]["type"] == "Warning", ev
assert "not_dotnet" in ev[0]["note"] and "Next step" in ev[0]["note"], ev
'; then ok "event-failed-warning"; else fail "event-failed-warning" "exit $RC $(cat "$ERR")"; fi

# Ephemeral container: no token of our own; the app container's service account (a kubelet-like
# symlink farm in ITS root) is used, the pod name comes from HOSTNAME and its uid from a GET.
SA=/run/secrets/kubernetes.io/serviceaccount
# sa_pre TOKEN-LINK: start_target's --pre for that farm, its token link pointing at TOKEN-LINK;
# /run/secrets/root-token holds the server's token too, readable by root only.
sa_pre() {
    echo "mkdir -p /run/secrets && mount -t tmpfs tmpfs /run/secrets && mkdir -p $SA/..2026_11_23 && cp '$WORK/token' $SA/..2026_11_23/token && cp '$WORK/token' /run/secrets/root-token && chmod 0600 /run/secrets/root-token && cp '$CA' $SA/..2026_11_23/ca.crt && echo shop >$SA/..2026_11_23/namespace && ln -s ..2026_11_23 $SA/..data && ln -s $1 $SA/token && ln -s ..data/ca.crt $SA/ca.crt && ln -s ..data/namespace $SA/namespace"
}
# eph_attach NAME: attaches to $TARGET_PID as from an ephemeral container (the cluster's service
# env, no token of its own), into $WORK/out.NAME and err.NAME.
eph_attach() {
    ctl POST /_test/reset >/dev/null
    OUT="$WORK/out.$1" ERR="$WORK/err.$1"
    env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" HOSTNAME=orders-eph KUBERNETES_SERVICE_HOST=127.0.0.1 \
        KUBERNETES_SERVICE_PORT="$(cat "$WORK/port")" "$CLRATTACH" attach --pid "$TARGET_PID" \
        --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json >"$OUT" 2>"$ERR"
    RC=$?
}
if start_target ephemeral-app --pidns --uid 1000 --pre "$(sa_pre ..data/token)"; then
    eph_attach eph
    if [ $RC -eq 0 ] && events_check '
assert len(ev) == 1, ev
r = ev[0]["regarding"]
assert r["name"] == "orders-eph" and r["namespace"] == "shop" and r["uid"], r
'; then ok "event-ephemeral-uses-target-sa"; else fail "event-ephemeral-uses-target-sa" "exit $RC $(cat "$ERR")"; fi
fi

# The same, but the app (uid 1000) links its token to the file only root may read: read as the
# app's user, it is refused, nothing is sent, and the attach itself goes on (Events auto).
if start_target ephemeral-hostile --pidns --uid 1000 --pre "$(sa_pre /run/secrets/root-token)"; then
    eph_attach eph2
    if [ $RC -eq 0 ] && [ "$(ctl GET /_test/requests)" = "[]" ] && events_check 'assert ev == [], ev' &&
        grep -q "service account.*token.*Permission denied" "$ERR"; then
        ok "event-ephemeral-token-read-as-target"
    else
        fail "event-ephemeral-token-read-as-target" "exit $RC $(cat "$ERR") $(ctl GET /_test/requests)"
    fi
fi

# Watch mode: two runtimes attached alike are one Event with a series of 2, not two Events;
# each report goes to the API as it happens (the second as a merge PATCH of the first).
ctl POST /_test/reset >/dev/null
WOUT=$WORK/watch-ev.out WERR=$WORK/watch-ev.err
env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" CLRATTACH_POD_NAME=orders-7d9c8b6f5-x2x7k \
    CLRATTACH_POD_NAMESPACE=shop CLRATTACH_CONTAINER_NAME=app \
    "$CLRATTACH" watch --api-url "$URL" --token-file "$WORK/token" --ca-file "$CA" \
    --profiler "$PROBE" --clsid "$PROBE_CLSID" --match-cmdline "ClrTarget.dll --seconds 119" \
    --ready-file "$WORK/watch-ev.ready" -o json >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
for _ in $(seq 50); do [ -e "$WORK/watch-ev.ready" ] && break; sleep 0.1; done
start_target series-a --pidns --uid 1000 --seconds 119 && SA=$TARGET_PID
start_target series-b --pidns --uid 1000 --seconds 119 && SB=$TARGET_PID
for _ in $(seq 100); do
    [ "$(grep -c '"outcome":"attached"' "$WOUT")" -ge 2 ] && grep -q "updated Event" "$WERR" && break
    sleep 0.1
done
kill -TERM "$W"
if events_check '
assert len(ev) == 1, ev
e = ev[0]
assert e["reason"] == "ProfilerAttached", e
assert e["series"]["count"] == 2 and e["series"]["lastObservedTime"], e
' && grep -q "reported Event shop/" "$WERR" && grep -q "updated Event shop/.*seen 2 times" "$WERR"; then
    ok "event-watch-series"
else
    fail "event-watch-series" "$(cat "$WOUT") $(cat "$WERR") $(cat "$WORK/events.json" 2>/dev/null)"
fi

# --events=required without any cluster configuration: stops before touching the target.
OUT="$WORK/out.r" ERR="$WORK/err.r"
env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" "$CLRATTACH" attach --pid "$NOTNET" --profiler "$PROBE" \
    --clsid "$PROBE_CLSID" --events=required >"$OUT" 2>"$ERR"
RC=$?
[ $RC -eq 2 ] && grep -q "not in a cluster" "$ERR" && ok "events-required-unconfigured" ||
    fail "events-required-unconfigured" "exit $RC $(cat "$ERR")"

finish e2e-events
