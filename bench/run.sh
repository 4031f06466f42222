#!/usr/bin/env bash
# clrattach benchmarks: attach latency and peak RSS against a real .NET target (clrattach, the
# floor client, the managed DiagnosticsClient), binary size, and `clrattach ps` scaling with the
# process count. A reproducible measurement, not a test: it fails only when a step cannot run.
#
# Usage: bench/run.sh [--iterations N] [--ps-counts "10 1000 5000"]
# Needs root (mount and pid namespaces), dotnet, strace, and `make all target` done (make bench
# does that). Prints a Markdown report on stdout and keeps it in $BUILD/bench/results.md.
set -u
ITER=10
PS_COUNTS="10 1000 5000"
while [ $# -gt 0 ]; do
    case $1 in
    --iterations) ITER=$2; shift ;;
    --ps-counts) PS_COUNTS=$2; shift ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
case $ITER in '' | *[!0-9]* | 0) echo "bench: --iterations takes a positive number" >&2; exit 2 ;; esac

# The e2e helpers start each target as the tests do: its own mount namespace, a private tmpfs
# on /tmp, the checkout bind-mounted at /srv. They also kill every target on exit.
# shellcheck source=../tests/e2e/lib.sh
. "$(dirname "$0")/../tests/e2e/lib.sh"
require_env
for tool in strace python3 gcc; do
    command -v $tool >/dev/null || { echo "bench: $tool missing (make deps)" >&2; exit 1; }
done

B="$ROOT/$BUILD/bench"
mkdir -p "$B"
CC=${CC:-gcc}
$CC -O2 -Wall -Wextra -Werror -o "$B/floor" "$ROOT/bench/floor.c" || exit 1
$CC -O2 -Wall -Wextra -Werror -o "$B/measure" "$ROOT/bench/measure.c" || exit 1

# The managed client needs Microsoft.Diagnostics.NETCore.Client from NuGet; without it the
# comparison is reported as not run rather than replaced by something else.
MANAGED="$B/managed/ManagedAttach.dll"
if ! dotnet build "$ROOT/bench/managed/ManagedAttach.csproj" -c Release -o "$B/managed" \
    --nologo -v q >"$B/managed-build.log" 2>&1; then
    echo "bench: managed client did not build (NuGet?); see $B/managed-build.log" >&2
    MANAGED=""
fi

# The AttachProfiler frame for the floor, in the layout ipc_encode_attach writes (checked
# byte for byte in tests/unit/test_ipc.c): header, u32 timeout, GUID (u32,u16,u16,u8[8] LE),
# u32 UTF-16 unit count with the NUL, the path, u32 client-data length, the bytes.
SO_IN_TARGET=/tmp/clrprobe-bench.so
python3 - "$PROBE_CLSID" "$SO_IN_TARGET" "out=/tmp/floor.json" "$B/attach.frame" <<'PY'
import struct, sys, uuid
clsid, path, data, out = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4]
units = path.encode("utf-16-le") + b"\0\0"
body = (struct.pack("<I", 5000) + uuid.UUID(clsid).bytes_le + struct.pack("<I", len(units) // 2)
        + units + struct.pack("<I", len(data)) + data)
hdr = b"DOTNET_IPC_V1\0" + struct.pack("<HBBH", 20 + len(body), 3, 1, 0)
open(out, "wb").write(hdr + body)
PY

# One timed attach by method $1 against a fresh target. Appends "wall_ms rss_kb" to $B/$1.dat.
one_attach() {
    local how=$1 n=$2 sock m
    start_target "bench-$how-$n" || return 1
    local pid=$TARGET_PID
    if [ "$how" != clrattach ]; then
        # Untimed set-up the other two leave to their caller: the .so in the target's view.
        cp "$PROBE" "/proc/$pid/root$SO_IN_TARGET" || return 1
    fi
    sock=$(ls /proc/$pid/root/tmp/dotnet-diagnostic-$pid-*-socket 2>/dev/null | head -1)
    case $how in
    clrattach)
        m=$("$B/measure" "$CLRATTACH" attach --pid "$pid" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
            --client-data out=/tmp/x.json 3>&1 >>"$B/$how.out" 2>>"$B/$how.err") ;;
    floor)
        m=$("$B/measure" "$B/floor" "$sock" "$B/attach.frame" 3>&1 >>"$B/$how.out" 2>>"$B/$how.err") ;;
    managed)
        m=$(TMPDIR=/proc/$pid/root/tmp/ DOTNET_CLI_TELEMETRY_OPTOUT=1 "$B/measure" dotnet "$MANAGED" \
            "$pid" "$PROBE_CLSID" "$SO_IN_TARGET" out=/tmp/managed.json 3>&1 \
            >>"$B/$how.out" 2>>"$B/$how.err") ;;
    esac
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    set -- $m
    if [ "${3:-1}" != 0 ]; then
        echo "bench: $how attach $n failed (exit ${3:-?}); see $B/$how.err" >&2
        return 1
    fi
    echo "$1 $2" >>"$B/$how.dat"
}

METHODS="clrattach floor"
[ -n "$MANAGED" ] && METHODS="$METHODS managed"
for how in $METHODS; do
    rm -f "$B/$how.dat" "$B/$how.out" "$B/$how.err"
done
# One untimed round first: the first dotnet start pays for cold page cache.
for how in $METHODS; do
    one_attach "$how" warmup >/dev/null 2>&1
    rm -f "$B/$how.dat"
done
failed=0
for n in $(seq 1 "$ITER"); do
    # Interleaved, so slow drift of the machine spreads over every method alike.
    for how in $METHODS; do
        one_attach "$how" "$n" || failed=$((failed + 1))
    done
done

# ps scaling: N plain processes in a fresh pid namespace with its own /proc, and clrattach ps
# run in there under strace -c (syscall count) and on its own (wall time, median of 3).
ps_one() {
    local count=$1
    unshare --pid --fork --mount-proc --mount --propagation private bash -c '
        n=$1; out=$2; clr=$3; measure=$4
        for i in $(seq 1 "$n"); do sleep 600 & done
        # Wait until every sleep exists, so each run sees the same process count.
        while [ "$(ls -d /proc/[0-9]* | wc -l)" -lt "$n" ]; do sleep 0.1; done
        for r in 1 2 3; do "$measure" "$clr" ps 3>>"$out.time" >/dev/null 2>>"$out.err"; done
        strace -f -c -o "$out.strace" "$clr" ps >/dev/null 2>>"$out.err"
        "$clr" ps -o json 2>/dev/null | wc -l >"$out.rows"
        kill $(jobs -p) 2>/dev/null
    ' _ "$count" "$B/ps-$count" "$CLRATTACH" "$B/measure"
}
for c in $PS_COUNTS; do
    rm -f "$B/ps-$c".*
    ps_one "$c"
done

# Binary sizes: stripped copies, so debug info does not count.
size_of() { [ -e "$1" ] && strip -o "$B/stripped" "$1" 2>/dev/null && stat -c %s "$B/stripped"; }
SIZE_DYN=$(size_of "$CLRATTACH")
SIZE_STATIC=$(size_of "$ROOT/build/static/clrattach")
SIZE_PROBE=$(size_of "$PROBE")

python3 - "$B" "$METHODS" "$PS_COUNTS" "$ITER" "${SIZE_DYN:-}" "${SIZE_STATIC:-}" \
    "${SIZE_PROBE:-}" <<'PY' | tee "$B/results.md"
import os, platform, statistics, subprocess, sys, time
b, methods, counts, iters = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
size_dyn, size_static, size_probe = sys.argv[5:8]

def rows(path):
    try:
        return [tuple(float(x) for x in l.split()[:2]) for l in open(path) if l.strip()]
    except OSError:
        return []

def cpu():
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            return l.split(":", 1)[1].strip()
    return platform.processor()

mem = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1]) // 1024
dotnet = subprocess.run(["dotnet", "--version"], capture_output=True, text=True).stdout.strip()
print(f"Run {time.strftime('%Y-%m-%d %H:%M %Z')} on {platform.node()}: {cpu()}, "
      f"{os.cpu_count()} CPUs, {mem} MiB, Linux {platform.release()}, .NET SDK {dotnet}; "
      f"{iters} iterations.\n")

print("| attach by | runs | median ms | min–max ms | p25–p75 ms | median peak RSS KiB | vs floor |")
print("|---|---|---|---|---|---|---|")
med = {m: statistics.median(x[0] for x in rows(f"{b}/{m}.dat"))
       for m in methods if rows(f"{b}/{m}.dat")}
for m in methods:
    r = rows(f"{b}/{m}.dat")
    if not r:
        print(f"| {m} | 0 | – | – | – | – | – |")
        continue
    w = sorted(x[0] for x in r)
    q = statistics.quantiles(w, n=4, method="inclusive") if len(w) > 1 else [w[0]] * 3
    rss = statistics.median(x[1] for x in r)
    ratio = f"{med[m] / med['floor']:.1f}×" if "floor" in med else "–"
    print(f"| {m} | {len(w)} | {med[m]:.1f} | {w[0]:.1f}–{w[-1]:.1f} | {q[0]:.1f}–{q[2]:.1f} "
          f"| {rss:.0f} | {ratio} |")
if "managed" in med and "clrattach" in med:
    print(f"\nmanaged / clrattach median: {med['managed'] / med['clrattach']:.1f}×")

print("\n| `clrattach ps`, processes in the namespace | .NET rows | median wall ms (3 runs) "
      "| µs per process | syscalls | syscalls per process |")
print("|---|---|---|---|---|---|")
fit = []
for c in counts:
    t = sorted(x[0] for x in rows(f"{b}/ps-{c}.time"))
    calls = None
    try:
        for l in open(f"{b}/ps-{c}.strace"):
            f = l.split()
            # "% time, seconds, usecs/call, calls, [errors], total"
            if f and f[-1] == "total":
                calls = int(f[3])
    except OSError:
        pass
    try:
        nrows = open(f"{b}/ps-{c}.rows").read().strip()
    except OSError:
        nrows = "?"
    wall = f"{statistics.median(t):.1f}" if t else "–"
    us = f"{statistics.median(t) * 1000 / int(c):.0f}" if t else "–"
    per = f"{calls / int(c):.1f}" if calls else "–"
    print(f"| {c} | {nrows} | {wall} | {us} | {calls if calls else '–'} | {per} |")
    if calls:
        fit.append((int(c), calls))
# Least squares over the counts: a slope per process and r² near 1 is linear growth.
if len(fit) >= 2:
    xs, ys = [f[0] for f in fit], [f[1] for f in fit]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in fit) / sxx
    icpt = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum((y - icpt - slope * x) ** 2 for x, y in fit) / ss_tot if ss_tot else 1.0
    print(f"\nSyscalls ≈ {icpt:.0f} + {slope:.2f} × processes (least squares, r² = {r2:.4f}).")

print("\n| binary (stripped) | bytes |")
print("|---|---|")
print(f"| build/clrattach | {size_dyn or 'not built'} |")
print(f"| build/static/clrattach | {size_static or 'not built (make static)'} |")
print(f"| build/libclrprobe.so | {size_probe or 'not built'} |")
PY
[ $failed -eq 0 ] || { echo "bench: $failed attach runs failed" >&2; exit 1; }
