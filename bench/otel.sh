#!/usr/bin/env bash
# What `clrattach otel` costs and how fast it shows: against the ASP.NET Core test app
# (tests/otel-apps/web, started with nothing as uid 1000 in its own namespaces) exporting to the
# OTLP/HTTP receiver of the test tools on 127.0.0.1:
#   - the time from the command to the first span at the receiver (--runs fresh apps);
#   - request latency (p50, p99 of GET /work, which makes one HttpClient call) without and with
#     the agent, on the same app, --requests sequential requests each, after a warm-up; the
#     ratio is the cost, the absolute numbers are this machine's;
#   - RSS added, read from /proc after each series.
# A measurement, not a test: it fails only when a step cannot run. Prints a Markdown report and
# keeps it in $BUILD/bench/otel.md.
# Usage: bench/otel.sh [--runs N] [--requests N] [--rounds N]    (make bench-otel)
set -u
RUNS=5
REQUESTS=2000
ROUNDS=3
while [ $# -gt 0 ]; do
    case $1 in
    --runs) RUNS=$2; shift ;;
    --requests) REQUESTS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
# shellcheck source=../tests/e2e/lib.sh
. "$(dirname "$0")/../tests/e2e/lib.sh"
require_env
# shellcheck source=../tests/e2e/otel_lib.sh
. "$ROOT/tests/e2e/otel_lib.sh"
otel_setup || { echo "bench: make otel-agent otel-apps first" >&2; exit 1; }
B="$ROOT/$BUILD/bench"
mkdir -p "$B"

# series PORT N: N sequential GET /work, their latencies in ms, "p50 p99 mean".
series() {
    python3 - "$1" "$2" <<'PY'
import http.client, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def one():
    t = time.perf_counter()
    c.request("GET", "/work")
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    return (time.perf_counter() - t) * 1000
for _ in range(1000):
    one()
xs = sorted(one() for _ in range(n))
print("%.3f %.3f %.3f" % (xs[len(xs) // 2], xs[min(len(xs) - 1, int(len(xs) * 0.99))], sum(xs) / len(xs)))
PY
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
port_of() { sed -n 's/^ready .* port \([0-9]*\)$/\1/p' "$TARGET_LOG"; }

# 1. Command to first span, each on a fresh app.
firsts=()
cmds=()
for i in $(seq "$RUNS"); do
    TARGET_DLL=$WEB start_target "first-$i" --pidns --uid 1000 --seconds 300 || { echo "bench: app did not start" >&2; exit 1; }
    sleep 2
    t0=$(now)
    clr otel --pid "$TARGET_PID" --agent "$AGENT" --endpoint "$ENDPOINT" --service-name "first-$i" -o json
    [ "$RC" = 0 ] || { echo "bench: otel failed: $(cat "$OUT" "$ERR")" >&2; exit 1; }
    cmds+=("$(json_get "$OUT" duration_ms)")
    check web-chain "first-$i" "$t0" 15 || { echo "bench: no span: $CHECK_OUT" >&2; exit 1; }
    firsts+=("$(echo "$CHECK_OUT" | sed -n 's/.*first span \([0-9.]*\) s after.*/\1/p')")
    kill "$TARGET_PID" 2>/dev/null
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
lo() { printf '%s\n' "$@" | sort -n | head -1; }
hi() { printf '%s\n' "$@" | sort -n | tail -1; }

# 2. Latency and RSS on one app (its own /work loop runs every 250 ms): --rounds of a series
#    without the agent, then started, a series with it, then stopped, so that what the machine
#    does meanwhile (it is shared) falls on both sides alike; the medians over the rounds.
TARGET_DLL=$WEB start_target cost --pidns --uid 1000 --seconds 900 || exit 1
P=$TARGET_PID
PORT_APP=$(port_of)
sleep 2
B50=() B99=() A50=() A99=()
rss0="" rss1=""
for r in $(seq "$ROUNDS"); do
    read -r x50 x99 _ < <(series "$PORT_APP" "$REQUESTS")
    B50+=("$x50") B99+=("$x99")
    [ -n "$rss0" ] || { sleep 1; rss0=$(rss_kb "$P"); }
    clr otel --pid "$P" --agent "$AGENT" --endpoint "$ENDPOINT" --service-name cost -o json
    [ "$RC" = 0 ] || { echo "bench: otel failed: $(cat "$OUT")" >&2; exit 1; }
    read -r x50 x99 _ < <(series "$PORT_APP" "$REQUESTS")
    A50+=("$x50") A99+=("$x99")
    [ -n "$rss1" ] || rss1=$(rss_kb "$P")
    clr otel --pid "$P" --agent "$AGENT" --stop -o json
    [ "$RC" = 0 ] || { echo "bench: otel --stop failed: $(cat "$OUT")" >&2; exit 1; }
done
b50=$(med "${B50[@]}") b99=$(med "${B99[@]}") a50=$(med "${A50[@]}") a99=$(med "${A99[@]}")
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

{
    echo "## OpenTelemetry: clrattach otel (bench/otel.sh)"
    echo
    echo "$(nproc) cores, $(dotnet --list-runtimes | grep -m1 'Microsoft.NETCore.App' | cut -d' ' -f1-2), $RUNS fresh apps, $ROUNDS rounds of $REQUESTS requests per series (after 1000 unmeasured), medians over the rounds."
    echo
    echo "| measure | value |"
    echo "|---|---|"
    echo "| command to first span at the receiver (median, min-max) | $(med "${firsts[@]}") s ($(lo "${firsts[@]}")-$(hi "${firsts[@]}") s) |"
    echo "| the command itself (median) | $(med "${cmds[@]}") ms |"
    echo "| GET /work p50: without, with the agent (ratio) | $b50 ms, $a50 ms ($(ratio "$a50" "$b50")) |"
    echo "| GET /work p99: without, with the agent (ratio) | $b99 ms, $a99 ms ($(ratio "$a99" "$b99")) |"
    echo "| per round, without / with the agent | p50 ${B50[*]} / ${A50[*]} ms; p99 ${B99[*]} / ${A99[*]} ms |"
    echo "| RSS: without, with the agent (added) | $((rss0 / 1024)) MB, $((rss1 / 1024)) MB (+$(((rss1 - rss0) / 1024)) MB) |"
} | tee "$B/otel.md"
finish bench/otel.sh >/dev/null
