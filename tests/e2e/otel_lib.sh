# shellcheck shell=bash
# What the OpenTelemetry e2e scripts share (sourced after lib.sh): the agent and the test apps,
# the OTLP/HTTP receiver on 127.0.0.1 for the whole script (ENDPOINT), and the checks on what it
# received (tests/tools/otlp_check.py). $1: the script's name, for finish.
AGENT="$ROOT/$BUILD/otel-agent"
CONSOLE="$ROOT/$BUILD/otel-apps/console/OtelConsole.dll"
WEB="$ROOT/$BUILD/otel-apps/web/OtelWeb.dll"
TOOLS="$ROOT/tests/tools"
otel_setup() {
    local f
    for f in "$AGENT/ClrattachOtelAgent.dll" "$CONSOLE" "$WEB"; do
        [ -f "$f" ] || { fail otel-built "$f missing: make otel-agent otel-apps"; return 1; }
    done
    RECV="$WORK/recv.jsonl"
    python3 "$TOOLS/otlp_receiver.py" "$RECV" "$WORK/port" --seconds 600 &
    TARGET_PIDS+=($!)
    for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
    PORT=$(cat "$WORK/port" 2>/dev/null)
    [ -n "$PORT" ] || { fail receiver "did not listen"; return 1; }
    ENDPOINT="http://127.0.0.1:$PORT"
}
alive() { kill -0 "$1" 2>/dev/null && ! grep -q 'Unhandled exception' "$TARGET_LOG"; }
now() { date +%s.%N; }
# check CHECK SERVICE SINCE WITHIN [ARGS]: otlp_check.py, its line in $CHECK_OUT.
check() {
    local what=$1 svc=$2 since=$3 within=$4
    shift 4
    CHECK_OUT=$(timeout $((${within%.*} + 20)) python3 "$TOOLS/otlp_check.py" "$RECV" "$what" \
        --service "$svc" --since "$since" --within "$within" "$@" 2>&1)
}
