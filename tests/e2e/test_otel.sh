#!/usr/bin/env bash
# `clrattach otel` (docs/otel.md) against real .NET 10 apps started with nothing (lib.sh's
# start_target: no OTEL_* in their environment), each in its own PID and mount namespaces as
# another uid, exporting to the OTLP/HTTP receiver of the test tools on 127.0.0.1. One command
# each; proven:
#   (a) an ASP.NET Core app: started, the JSON says what (instrumentations, exporter, endpoint,
#       service name); server and client spans with the service name given, the pod's attributes
#       (CLRATTACH_POD_*), HTTP attributes and parent/child links, runtime metrics, within 10 s;
#       a second otel refused (already_active, 3), no span twice; --stop: stopped, telemetry
#       stops; otel again: it comes again; the text result;
#   (b) an app with an OpenTelemetry SDK of its own: refused (otel_sdk_present, 14) before
#       anything is delivered; --force: started beside it;
#   (c) no endpoint, one that is not http(s), a bad protocol: usage errors (2), nothing sent;
#       --stop where it never ran: otel_failed (7); a setting the agent refuses (an OTLP protocol
#       it does not know, through --env): the agent's refusal is the failure (7), never a success;
#   (d) the service name defaulting to the entry assembly's;
#   (e) real .NET 8 and .NET 9 runtimes and a .NET 6 (the fake runtime): runtime_too_old (15),
#       nothing delivered or sent;
#   (f) watch --otel: a watcher serves an app started after it, once, as its entry assembly;
# and every app runs on.
. "$(dirname "$0")/lib.sh"
require_env

. "$(dirname "$0")/otel_lib.sh"
otel_setup || { finish test_otel.sh; exit; }
FAST=(--env OTEL_METRIC_EXPORT_INTERVAL=1000)

# otel PID ARGS...: the command, JSON out; its time in APPLIED_AT.
otel() {
    local p=$1
    shift
    APPLIED_AT=$(now)
    clr otel --pid "$p" --agent "$AGENT" -o json --timeout 30 "$@"
}
j() { json_get "$OUT" "$1"; }
agent_mapped() { grep -q ClrattachOtelAgent.dll "/proc/$1/maps"; }

# (a) ASP.NET Core, one command.
if TARGET_DLL=$WEB start_target web --pidns --uid 1000; then
    P=$TARGET_PID
    CLRATTACH_POD_NAME=shop-7d9f CLRATTACH_POD_NAMESPACE=payments CLRATTACH_CONTAINER_NAME=web \
        otel "$P" --endpoint "$ENDPOINT" --service-name shop-web \
        --resource-attributes deployment.environment=e2e "${FAST[@]}"
    t0=$APPLIED_AT
    if [ $RC -eq 0 ] && [ "$(j outcome)" = otel_started ] && [ "$(j command)" = otel ] &&
        [ "$(j otel.state)" = started ] && [ "$(j otel.service_name)" = shop-web ] &&
        [ "$(j otel.endpoint)" = "$ENDPOINT" ] && [ "$(j otel.protocol)" = http/protobuf ] &&
        [ "$(j otel.exporter)" = otlp ] && j otel.instrumentations | grep -q aspnetcore &&
        j otel.instrumentations | grep -q http_client; then
        ok "web: one command: started, $(j otel.instrumentations) to $(j otel.endpoint) in $(j duration_ms) ms"
    else
        fail "web otel" "exit $RC: $(cat "$OUT" "$ERR" 2>&1)"
    fi
    check web-chain shop-web "$t0" 10 && ok "web: spans within 10 s: $CHECK_OUT" || fail "web spans" "$CHECK_OUT"
    check resource shop-web "$t0" 10 k8s.pod.name=shop-7d9f && check resource shop-web "$t0" 10 k8s.namespace.name=payments &&
        check resource shop-web "$t0" 10 k8s.container.name=web && check resource shop-web "$t0" 10 deployment.environment=e2e &&
        ok "web: the pod's attributes and --resource-attributes on the resource" || fail "web resource" "$CHECK_OUT"
    check metrics shop-web "$t0" 10 && ok "web: metrics within 10 s: $CHECK_OUT" || fail "web metrics" "$CHECK_OUT"

    # Twice: refused before anything is sent.
    otel "$P" --endpoint "$ENDPOINT" --service-name shop-web
    again=$(now)
    [ $RC -eq 3 ] && [ "$(j outcome)" = already_active ] && j error | grep -q 'already runs' &&
        j next_step | grep -q -- '--stop' &&
        ok "twice: refused (3): $(j error)" || fail "twice" "exit $RC: $(cat "$OUT" 2>&1)"
    check single-work shop-web "$again" 4 && ok "twice: $CHECK_OUT" || fail "doubled" "$CHECK_OUT"

    # --stop, then quiet.
    otel "$P" --stop
    if [ $RC -eq 0 ] && [ "$(j outcome)" = otel_stopped ] && [ "$(j otel.state)" = stopped ] &&
        [ "$(j otel.flushed)" = True ]; then
        ok "--stop: stopped, flushed"
    else
        fail "stop" "exit $RC: $(cat "$OUT" "$ERR" 2>&1)"
    fi
    sleep 1
    check quiet shop-web "$(now)" 4 && ok "--stop: $CHECK_OUT" || fail "stop quiet" "$CHECK_OUT"

    # Started again, in text.
    APPLIED_AT=$(now)
    t2=$APPLIED_AT
    clr otel --pid "$P" --agent "$AGENT" --endpoint "$ENDPOINT" --service-name shop-web "${FAST[@]}"
    [ $RC -eq 0 ] && grep -q '^OpenTelemetry started: pid' "$OUT" && grep -q "exporter: otlp http/protobuf to $ENDPOINT" "$OUT" &&
        grep -q 'service:  shop-web' "$OUT" && ok "started again (text): $(tr '\n' ' ' <"$OUT" | cut -c1-160)" ||
        fail "restart" "exit $RC: $(cat "$OUT" "$ERR" 2>&1)"
    check web-chain shop-web "$t2" 10 && ok "started again: $CHECK_OUT" || fail "restart spans" "$CHECK_OUT"
    alive "$P" && ok "web: the app runs on" || fail "web alive" "$(tail -20 "$TARGET_LOG")"
fi

# (b) An app with its own SDK (OpenTelemetry 1.9.0, turned on by the app's own setting).
if TARGET_DLL=$CONSOLE start_target own-sdk --pidns --uid 1000 --env OTELAPP_OWN_SDK=1; then
    P=$TARGET_PID
    sleep 1 # its SDK loaded
    otel "$P" --endpoint "$ENDPOINT" --service-name own-sdk "${FAST[@]}"
    if [ $RC -eq 14 ] && [ "$(j outcome)" = otel_sdk_present ] && j error | grep -q 'OpenTelemetry.dll' &&
        j next_step | grep -q -- '--force' && ! agent_mapped "$P" && [ -z "$(j delivered_path)" ]; then
        ok "own SDK: refused (14), nothing delivered: $(j error)"
    else
        fail "own SDK" "exit $RC: $(cat "$OUT" "$ERR" 2>&1)"
    fi
    otel "$P" --endpoint "$ENDPOINT" --service-name own-sdk --force "${FAST[@]}"
    t1=$APPLIED_AT
    [ $RC -eq 0 ] && [ "$(j otel.state)" = started ] && check console-client own-sdk "$t1" 10 &&
        ok "own SDK, --force: started beside it: $CHECK_OUT" || fail "own SDK forced" "exit $RC: $(cat "$OUT" 2>&1) $CHECK_OUT"
    alive "$P" && ok "own SDK: the app runs on" || fail "own-sdk alive" "$(tail -20 "$TARGET_LOG")"
fi

# (c) Refusals, and (d) the default service name.
if TARGET_DLL=$CONSOLE start_target plain --pidns --uid 1000; then
    P=$TARGET_PID
    clr otel --pid "$P" --agent "$AGENT" -o json
    [ $RC -eq 2 ] && [ "$(j outcome)" = usage_error ] && j error | grep -q -- '--endpoint is required' &&
        ok "no endpoint: usage error (2): $(j error)" || fail "no endpoint" "exit $RC: $(cat "$OUT" "$ERR")"
    otel "$P" --endpoint ftp://127.0.0.1/
    [ $RC -eq 2 ] && j error | grep -q 'http:// or https://' &&
        ok "an ftp endpoint: usage error (2)" || fail "ftp endpoint" "exit $RC: $(cat "$OUT" "$ERR")"
    otel "$P" --endpoint "$ENDPOINT" --protocol http/json
    [ $RC -eq 2 ] && ok "a bad protocol: usage error (2)" || fail "bad protocol" "exit $RC: $(cat "$OUT" "$ERR")"
    agent_mapped "$P" && fail "refusals" "the agent was loaded" || ok "usage errors: nothing sent"
    otel "$P" --stop
    [ $RC -eq 7 ] && [ "$(j outcome)" = otel_failed ] && j error | grep -q 'nothing to stop' &&
        ok "--stop where it never ran: otel_failed (7)" || fail "stop never" "exit $RC: $(cat "$OUT" "$ERR")"
    otel "$P" --endpoint "$ENDPOINT" --env OTEL_EXPORTER_OTLP_PROTOCOL=http/json
    [ $RC -eq 7 ] && [ "$(j outcome)" = otel_failed ] && [ "$(j otel.state)" = refused ] && j error | grep -q 'refused to start' &&
        ok "the agent's own refusal is a failure (7): $(j error | cut -c1-140)" || fail "agent refusal" "exit $RC: $(cat "$OUT" "$ERR")"
    otel "$P" --endpoint "$ENDPOINT" "${FAST[@]}"
    t3=$APPLIED_AT
    [ $RC -eq 0 ] && [ "$(j otel.service_name)" = OtelConsole ] && check console-client OtelConsole "$t3" 10 &&
        ok "the service name defaults to the entry assembly's: $CHECK_OUT" || fail "default name" "exit $RC: $(cat "$OUT") $CHECK_OUT"
    alive "$P" && ok "plain: the app runs on" || fail "plain alive" "$(tail -20 "$TARGET_LOG")"
fi

# (e) Runtimes older than the agent's .NET 10: nothing delivered, nothing sent. Real .NET 8 and
#     .NET 9 runtimes (the test app published self-contained: build/oldrt), as another uid in
#     their own namespaces; then the fake runtime for a .NET 6, which no runtime pack here has.
for v in 8 9; do
    if TARGET_EXEC="$ROOT/$BUILD/oldrt/net$v/ClrTarget" start_target "otel-real-net$v" --pidns --uid 1000; then
        clr otel --pid "$TARGET_PID" --agent "$AGENT" --endpoint "$ENDPOINT" -o json
        if [ $RC -eq 15 ] && [ "$(j outcome)" = runtime_too_old ] && j error | grep -q "agent needs .NET 10" &&
            j error | grep -q "$v\.0\." && ! ls "/proc/$TARGET_PID/root/tmp/" | grep -q ClrattachOtelAgent &&
            ! grep -q ClrattachOtelAgent "/proc/$TARGET_PID/maps" && alive "$TARGET_PID"; then
            ok "a real .NET $v runtime: runtime_too_old (15), nothing delivered, the app runs on: $(j error)"
        else
            fail "real .NET $v" "exit $RC: $(cat "$OUT" "$ERR") $(tail -5 "$TARGET_LOG")"
        fi
    else
        fail "real .NET $v" "did not start: $(tail -5 "$TARGET_LOG")"
    fi
done
for v in net6; do
    if start_fake "otel-$v" $v; then
        clr otel --pid "$TARGET_PID" --agent "$AGENT" --endpoint "$ENDPOINT" -o json
        if [ $RC -eq 15 ] && [ "$(j outcome)" = runtime_too_old ] && j error | grep -q 'agent needs .NET 10' &&
            ! grep -q 'request 04/07' "$TARGET_LOG" && ! ls "/proc/$TARGET_PID/root/tmp/" | grep -q ClrattachOtelAgent; then
            ok "a runtime older than .NET 10 ($v): runtime_too_old (15), nothing delivered or sent: $(j error)"
        else
            fail "too old $v" "exit $RC: $(cat "$OUT" "$ERR")"
        fi
    else
        fail "fake $v" "did not start"
    fi
done

# (f) watch --otel, the sidecar's shape: a watcher started first serves an ASP.NET Core app
#     started after it, once per instance, its service name the entry assembly's, the pod's
#     attributes from the watcher's environment.
WLOG="$WORK/watch.jsonl"
CLRATTACH_POD_NAME=shop-watch CLRATTACH_POD_NAMESPACE=payments CLRATTACH_CONTAINER_NAME=web \
    timeout --preserve-status -k 5 -s TERM 90 "$CLRATTACH" watch --otel --endpoint "$ENDPOINT" \
    --agent "$AGENT" --match-cmdline OtelWeb.dll --uid 1001 --events off -o json "${FAST[@]}" \
    >"$WLOG" 2>"$WORK/watch.err" &
WATCHER=$!
TARGET_PIDS+=($WATCHER)
sleep 1
if TARGET_DLL=$WEB start_target watched --pidns --uid 1001; then
    P=$TARGET_PID
    t0=$(now)
    for _ in $(seq 100); do grep -q '"command":"otel"' "$WLOG" && break; sleep 0.1; done
    line=$(grep -m1 '"command":"otel"' "$WLOG")
    echo "$line" >"$WORK/wline.json"
    if [ "$(json_get "$WORK/wline.json" outcome)" = otel_started ] &&
        [ "$(json_get "$WORK/wline.json" otel.service_name)" = OtelWeb ]; then
        ok "watch --otel: started in the app started after the watcher, as OtelWeb"
    else
        fail "watch --otel" "$(cat "$WLOG" "$WORK/watch.err")"
    fi
    check web-chain OtelWeb "$t0" 10 && check resource OtelWeb "$t0" 10 k8s.pod.name=shop-watch &&
        ok "watch --otel: spans with the pod's attributes: $CHECK_OUT" || fail "watch spans" "$CHECK_OUT"
    sleep 2
    [ "$(grep -c '"command":"otel"' "$WLOG")" -eq 1 ] && ok "watch --otel: once per instance" ||
        fail "watch once" "$(cat "$WLOG")"
    alive "$P" && ok "watched: the app runs on" || fail "watched alive" "$(tail -20 "$TARGET_LOG")"
fi
kill -TERM "$WATCHER" 2>/dev/null
wait "$WATCHER" 2>/dev/null

finish test_otel.sh
