#!/usr/bin/env bash
# clrattach's OpenTelemetry agent (profiler/otel-agent, docs/otel.md) applied with the existing
# `clrattach startup-hook --assembly <agent dir>` to real .NET apps that have no OpenTelemetry of
# their own, each started with nothing (lib.sh's start_target) in its own PID and mount
# namespaces as another uid, exporting to an OTLP/HTTP receiver on 127.0.0.1
# (tests/tools/otlp_receiver.py, its decoder unit-tested first). Settings ride in the app's
# environment from its start, or are set later over the diagnostic IPC (tests/tools/diag_setenv.py,
# SetEnvironmentVariable, as `clrattach otel` is to send them). Proven:
#   (a) an ASP.NET Core app: server and HttpClient spans with service.name, the resource
#       attributes given, HTTP attributes and parent/child links, a caller's traceparent taken,
#       runtime, process and HTTP metrics, all within 10 s; applied again: refused, no span twice;
#       the stop action: telemetry stops; started again: it comes again;
#   (b) a console app: HttpClient spans under the entry assembly's name, no ASP.NET Core; grpc
#       chosen over the IPC;
#   (c) an app running its own OpenTelemetry SDK: refused; forced, the agent runs beside it;
#   (d) no endpoint, then one that is not http: refused, in words; set over IPC: started;
#   (e) a collector that takes the connection and never answers: the stop still ends in ~3 s,
#       and the IPC answer comes only once Initialize has returned;
#   (f) an agent directory missing an assembly the SDK needs: failed, named, the app unharmed;
#   (g) an agent whose SDK references a newer System.Diagnostics.DiagnosticSource than the app's
#       runtime has (OpenTelemetry.Api.dll's reference rewritten to 99.0.0.0,
#       tests/tools/asmref_bump.py): refused, naming the runtime it needs, nothing of it loaded;
# and every app runs on. Prints the time from applying the hook to the first span and the RSS
# the agent added.
. "$(dirname "$0")/lib.sh"
require_env

. "$(dirname "$0")/otel_lib.sh"
STATUS=/tmp/otel-status.json

# What the agent is made of, from its lock file: every package with its version and licence.
if awk -F'\t' 'NR > 1 && ($5 == "?" || $5 == "") {bad = 1} END {exit bad}' "$AGENT/packages.tsv" &&
    grep -qP '^OpenTelemetry\t1\.20\.\d+\tdirect\tyes\tApache-2\.0\t' "$AGENT/packages.tsv" &&
    grep -qP '^System\.Diagnostics\.DiagnosticSource\t.*\tno\t' "$AGENT/packages.tsv"; then
    ok "packages.tsv: $(($(wc -l <"$AGENT/packages.tsv") - 1)) packages, each with its licence; DiagnosticSource not shipped"
else
    fail "packages.tsv" "$(cat "$AGENT/packages.tsv" 2>&1)"
fi

# The decoder, on bytes.
if timeout 60 python3 "$TOOLS/test_otlp_receiver.py" >"$WORK/unit.out" 2>&1; then
    ok "otlp_receiver decoder: $(tail -3 "$WORK/unit.out" | grep -m1 '^Ran')"
else
    fail "otlp_receiver decoder" "$(cat "$WORK/unit.out")"
fi

# The receiver, for the whole script; it stops by itself.
otel_setup || { finish test_otel_agent.sh; exit; }
FAST=(--env OTEL_METRIC_EXPORT_INTERVAL=1000 --env "CLRATTACH_OTEL_STATUS=$STATUS")

# apply PID: the agent through startup-hook; the status file's state, reason and all.
apply() {
    APPLIED_AT=$(now)
    # --again: the agent is applied to one app many times (its own state decides what it does)
    clr startup-hook --pid "$1" --assembly "$AGENT" --again -o json --timeout 30
    STATUS_FILE="/proc/$1/root${2:-$STATUS}"
}
st() { json_get "$STATUS_FILE" "$1"; }
setenv() { timeout 20 python3 "$TOOLS/diag_setenv.py" "$@"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# (a) ASP.NET Core.
if TARGET_DLL=$WEB start_target web --pidns --uid 1000 --env "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" \
    --env OTEL_SERVICE_NAME=shop-web --env OTEL_RESOURCE_ATTRIBUTES=deployment.environment=e2e,team=otel \
    "${FAST[@]}"; then
    P=$TARGET_PID
    sleep 2 # the app at work and warm: its RSS before the agent
    rss0=$(rss_kb "$P")
    apply "$P"
    t0=$APPLIED_AT
    if [ $RC -eq 0 ] && [ "$(st state)" = started ] && [ "$(st service_name)" = shop-web ] &&
        [ "$(st protocol)" = http/protobuf ] && [ "$(st endpoint)" = "$ENDPOINT" ] &&
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert {"aspnetcore","http_client","runtime","process"} <= set(d["instrumentations"]); assert d["versions"]["opentelemetry"].startswith("1.20.")' "$STATUS_FILE"; then
        ok "web: started; status: $(st instrumentations), $(st protocol) to $(st endpoint)"
    else
        fail "web start" "exit $RC: $(cat "$OUT" "$ERR" "$STATUS_FILE" 2>&1)"
    fi
    # Initialize's status is there when the IPC answer is: written before the answer.
    [ "$(json_get "$OUT" hresult_name)" = S_OK ] && [ -s "$STATUS_FILE" ] &&
        ok "the status is written before ApplyStartupHook is answered (Initialize $(st initialize_ms) ms, command $(json_get "$OUT" duration_ms) ms)" ||
        fail "status timing" "$(cat "$OUT")"
    check web-chain shop-web "$t0" 10 &&
        ok "web: spans within 10 s: $CHECK_OUT" || fail "web spans" "$CHECK_OUT"
    first_span=$(echo "$CHECK_OUT" | sed -n 's/.*first span \([0-9.]*\) s after.*/\1/p')
    check resource shop-web "$t0" 10 deployment.environment=e2e && check resource shop-web "$t0" 10 team=otel &&
        check resource shop-web "$t0" 10 telemetry.distro.name=clrattach-otel-agent &&
        ok "web: resource attributes from OTEL_RESOURCE_ATTRIBUTES and the agent's" || fail "web resource" "$CHECK_OUT"
    check metrics shop-web "$t0" 10 &&
        ok "web: metrics within 10 s: $CHECK_OUT" || fail "web metrics" "$CHECK_OUT"
    # A caller's traceparent: the server span continues its trace (headers read across the ALC).
    wport=$(sed -n 's/^ready .* port \([0-9]*\)$/\1/p' "$TARGET_LOG")
    trace=4bf92f3577b34da6a3ce929d0e0e4736 caller=00f067aa0ba902b7
    tp_at=$(now)
    timeout 10 curl -s -o /dev/null -H "traceparent: 00-$trace-$caller-01" "http://127.0.0.1:$wport/work"
    check parent shop-web "$tp_at" 10 "$trace" "$caller" &&
        ok "web: a caller's traceparent taken: $CHECK_OUT" || fail "web traceparent" "$CHECK_OUT"
    sleep 2
    rss1=$(rss_kb "$P")
    echo "measured: the first span at the receiver ${first_span:-?} s after the command; RSS $rss0 kB before, $rss1 kB after ($(((rss1 - rss0) / 1024)) MB added)"

    # Applied again: refused, and the spans are not doubled.
    apply "$P"
    again=$(now)
    if [ $RC -eq 0 ] && [ "$(st state)" = refused ] && st reason | grep -q 'already runs in this app'; then
        ok "applied twice: refused: $(st reason)"
    else
        fail "twice" "exit $RC: $(cat "$STATUS_FILE" 2>&1)"
    fi
    check single-work shop-web "$again" 4 && ok "applied twice: $CHECK_OUT" || fail "doubled" "$CHECK_OUT"

    # The stop action: flushed and disposed, nothing more comes.
    setenv "$P" CLRATTACH_OTEL_ACTION=stop && apply "$P"
    if [ $RC -eq 0 ] && [ "$(st state)" = stopped ] && [ "$(st flushed)" = True ]; then
        ok "stop: stopped, flushed"
    else
        fail "stop" "exit $RC: $(cat "$STATUS_FILE" 2>&1)"
    fi
    sleep 1 # what was in flight at the stop
    check quiet shop-web "$(now)" 4 && ok "stop: $CHECK_OUT" || fail "stop quiet" "$CHECK_OUT"
    apply "$P"
    [ "$(st state)" = stopped ] && st reason | grep -q 'not running' &&
        ok "stop again: $(st reason)" || fail "stop again" "$(cat "$STATUS_FILE" 2>&1)"

    # Started again after the stop.
    setenv "$P" CLRATTACH_OTEL_ACTION=start && apply "$P"
    t2=$APPLIED_AT
    [ "$(st state)" = started ] && check web-chain shop-web "$t2" 10 &&
        ok "started again after the stop: $CHECK_OUT" || fail "restart" "$(cat "$STATUS_FILE" 2>&1) $CHECK_OUT"
    alive "$P" && ok "web: the app runs on" || fail "web alive" "$(tail -20 "$TARGET_LOG")"
fi

# (b) A console app: its entry assembly's name, HttpClient only.
if TARGET_DLL=$CONSOLE start_target console --pidns --uid 1000 \
    --env "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" "${FAST[@]}"; then
    P=$TARGET_PID
    apply "$P"
    t0=$APPLIED_AT
    if [ $RC -eq 0 ] && [ "$(st state)" = started ] && [ "$(st service_name)" = OtelConsole ] &&
        ! grep -q aspnetcore "$STATUS_FILE"; then
        ok "console: started as OtelConsole, $(st instrumentations)"
    else
        fail "console start" "exit $RC: $(cat "$OUT" "$ERR" "$STATUS_FILE" 2>&1)"
    fi
    check console-client OtelConsole "$t0" 10 && ok "console: $CHECK_OUT" || fail "console spans" "$CHECK_OUT"
    check metrics OtelConsole "$t0" 10 && ok "console: $CHECK_OUT" || fail "console metrics" "$CHECK_OUT"
    # grpc: the endpoint as it is, no signal path (the receiver speaks http/protobuf only, so
    # what is sent is not checked here).
    setenv "$P" CLRATTACH_OTEL_ACTION=stop && apply "$P" &&
        setenv "$P" CLRATTACH_OTEL_ACTION=start OTEL_EXPORTER_OTLP_PROTOCOL=grpc && apply "$P"
    [ "$(st state)" = started ] && [ "$(st protocol)" = grpc ] && [ "$(st traces_endpoint)" = "$ENDPOINT/" ] &&
        ok "console: grpc: started, traces to $(st traces_endpoint)" || fail "grpc" "$(cat "$STATUS_FILE" 2>&1)"
    alive "$P" && ok "console: the app runs on" || fail "console alive" "$(tail -20 "$TARGET_LOG")"
fi

# (c) An app with an OpenTelemetry SDK of its own (1.9.0): refused; forced, both run.
if TARGET_DLL=$CONSOLE start_target own-sdk --pidns --uid 1000 --env OTELAPP_OWN_SDK=1 \
    --env "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" --env OTEL_SERVICE_NAME=own-sdk "${FAST[@]}"; then
    P=$TARGET_PID
    apply "$P"
    t0=$APPLIED_AT
    if [ $RC -eq 0 ] && [ "$(st state)" = refused ] && st reason | grep -q 'OpenTelemetry SDK of its own'; then
        ok "own SDK: refused: $(st reason)"
    else
        fail "own SDK" "exit $RC: $(cat "$STATUS_FILE" 2>&1)"
    fi
    check quiet own-sdk "$t0" 3 && ok "own SDK: $CHECK_OUT" || fail "own SDK quiet" "$CHECK_OUT"
    setenv "$P" CLRATTACH_OTEL_FORCE=1 && apply "$P"
    t1=$APPLIED_AT
    [ "$(st state)" = started ] && check console-client own-sdk "$t1" 10 &&
        ok "own SDK, forced: the agent's 1.20 beside the app's 1.9: $CHECK_OUT" ||
        fail "own SDK forced" "$(cat "$STATUS_FILE" 2>&1) $CHECK_OUT"
    alive "$P" && ok "own SDK: the app runs on" || fail "own-sdk alive" "$(tail -20 "$TARGET_LOG")"
fi

# (d) No endpoint: refused in words; the status beside the agent's directory (no
#     CLRATTACH_OTEL_STATUS).
if TARGET_DLL=$CONSOLE start_target no-endpoint --pidns --uid 1000 --env OTEL_SERVICE_NAME=no-endpoint; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$AGENT" -o json --timeout 30
    dir=$(json_get "$OUT" delivered_dir)
    STATUS_FILE="/proc/$P/root$dir.status.json"
    if [ $RC -eq 0 ] && [ "$(st state)" = refused ] && st reason | grep -q 'set OTEL_EXPORTER_OTLP_ENDPOINT'; then
        ok "no endpoint: refused: $(st reason)"
    else
        fail "no endpoint" "exit $RC: $(cat "$OUT" "$STATUS_FILE" 2>&1)"
    fi
    setenv "$P" OTEL_EXPORTER_OTLP_ENDPOINT=ftp://127.0.0.1/ && apply "$P" "$dir.status.json"
    [ "$(st state)" = refused ] && st reason | grep -q 'not an http' &&
        ok "not an http endpoint: refused: $(st reason)" || fail "ftp endpoint" "$(cat "$STATUS_FILE" 2>&1)"
    setenv "$P" "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" OTEL_BSP_SCHEDULE_DELAY=500 && apply "$P" "$dir.status.json"
    t0=$APPLIED_AT
    [ "$(st state)" = started ] && [ "$(st endpoint)" = "$ENDPOINT" ] && check console-client no-endpoint "$t0" 10 &&
        ok "the endpoint set over the diagnostic IPC: started: $CHECK_OUT" ||
        fail "endpoint over IPC" "$(cat "$STATUS_FILE" 2>&1) $CHECK_OUT"
    alive "$P" && ok "no endpoint: the app runs on" || fail "no-endpoint alive" "$(tail -20 "$TARGET_LOG")"
fi

# (e) A collector that never answers: the stop is bounded, and ApplyStartupHook is answered
#     after Initialize returns (the command lasts as long as Initialize's stop).
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(50); s.settimeout(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.replace(sys.argv[1] + ".tmp", sys.argv[1])
held, end = [], time.time() + 120
while time.time() < end:
    try: held.append(s.accept()[0])
    except OSError: pass
' "$WORK/hole" &
TARGET_PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/hole" ] && break; sleep 0.05; done
if TARGET_DLL=$CONSOLE start_target hole --pidns --uid 1000 \
    --env "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$(cat "$WORK/hole")" "${FAST[@]}"; then
    P=$TARGET_PID
    apply "$P"
    [ "$(st state)" = started ] || fail "hole start" "$(cat "$STATUS_FILE" 2>&1)"
    sleep 2 # exports under way, never answered
    setenv "$P" CLRATTACH_OTEL_ACTION=stop && apply "$P"
    took=$(json_get "$OUT" duration_ms)
    init=$(st initialize_ms)
    if [ $RC -eq 0 ] && [ "$(st state)" = stopped ] && [ "$(st flushed)" = False ] &&
        [ "$init" -ge 2500 ] && [ "$init" -le 4500 ] && [ "$took" -ge "$init" ]; then
        ok "a collector that never answers: stopped in $init ms, not flushed; the IPC answer after $took ms"
    else
        fail "hole stop" "exit $RC, command $took ms: $(cat "$STATUS_FILE" 2>&1)"
    fi
    alive "$P" && ok "hole: the app runs on" || fail "hole alive" "$(tail -20 "$TARGET_LOG")"
fi

# (f) A broken agent directory (OpenTelemetry.dll missing): the failure is caught and named.
mkdir -p "$WORK/broken"
cp "$AGENT"/*.dll "$WORK/broken/" && rm "$WORK/broken/OpenTelemetry.dll"
if TARGET_DLL=$CONSOLE start_target broken --pidns --uid 1000 \
    --env "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" --env OTEL_SERVICE_NAME=broken "${FAST[@]}"; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$WORK/broken" -o json --timeout 30
    STATUS_FILE="/proc/$P/root$STATUS"
    if [ $RC -eq 0 ] && [ "$(st state)" = failed ] && st reason | grep -q "OpenTelemetry, Version="; then
        ok "a missing dependency: failed: $(st reason | cut -c1-120)"
    else
        fail "broken" "exit $RC: $(cat "$OUT" "$ERR" "$STATUS_FILE" 2>&1)"
    fi
    sleep 1
    alive "$P" && ok "broken: the app runs on" || fail "broken alive" "$(tail -20 "$TARGET_LOG")"
fi

# (g) An SDK that needs a newer runtime than the app's.
mkdir -p "$WORK/newer"
cp "$AGENT"/*.dll "$WORK/newer/"
if python3 "$TOOLS/asmref_bump.py" "$WORK/newer/OpenTelemetry.Api.dll" System.Diagnostics.DiagnosticSource 99 &&
    TARGET_DLL=$CONSOLE start_target newer --pidns --uid 1000 \
        --env "OTEL_EXPORTER_OTLP_ENDPOINT=$ENDPOINT" "${FAST[@]}"; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$WORK/newer" -o json --timeout 30
    STATUS_FILE="/proc/$P/root$STATUS"
    if [ $RC -eq 0 ] && [ "$(st state)" = refused ] &&
        st reason | grep -q 'OpenTelemetry.Api needs System.Diagnostics.DiagnosticSource 99.0.0.0 (.NET 99 or newer); this app runs .NET 10' &&
        ! grep -q 'OpenTelemetry' "/proc/$P/maps"; then
        ok "a runtime older than the SDK needs: refused: $(st reason)"
    else
        fail "newer" "exit $RC: $(cat "$OUT" "$ERR" "$STATUS_FILE" 2>&1)"
    fi
    alive "$P" && ok "newer: the app runs on" || fail "newer alive" "$(tail -20 "$TARGET_LOG")"
fi

finish test_otel_agent.sh
