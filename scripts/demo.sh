#!/usr/bin/env bash
# The demo: a sample .NET app in its own "container" (private mount namespace with its own /tmp,
# its own PID namespace and /proc, running as uid 1000), and clrattach attaching the sample
# profiler to it for real, from outside, under its seccomp filter. Needs root (namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CLRATTACH=$BUILD/clrattach
CLSID=$(sed -n 's/^#define CLRPROBE_CLSID[[:space:]]*"\(.*\)"/\1/p' profiler/clrprobe.h)

if [ "$(id -u)" -ne 0 ]; then
    echo "demo: run as root: it puts the sample app in its own namespaces (unshare)" >&2
    exit 1
fi

log=$(mktemp)
# The checkout is bind-mounted at /srv inside the app's namespace: under /tmp it would vanish
# beneath the app's private tmpfs.
[ -d /srv ] || mkdir -p /srv
# --kill-child: the app (the namespace's pid 1) goes when unshare goes, however unshare ends, so
# the demo never leaves it running behind.
unshare --mount --propagation private --pid --fork --kill-child --mount-proc sh -c \
    "mount --bind '$PWD' /srv && cd / && mount -t tmpfs -o mode=1777 tmpfs /tmp && \
     exec env -i PATH=/usr/bin:/bin HOME=/tmp DOTNET_CLI_TELEMETRY_OPTOUT=1 \
     setpriv --reuid=1000 --regid=1000 --clear-groups \
     dotnet /srv/$BUILD/target/ClrTarget.dll --seconds 60" >"$log" 2>&1 &
upid=$!
pid=""
trap 'kill -KILL $pid $upid 2>/dev/null; wait 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 300); do grep -q '^ready' "$log" && break; sleep 0.1; done
grep -q '^ready' "$log" || { cat "$log" >&2; exit 1; }
pid=$(tr -d ' ' </proc/$upid/task/$upid/children)

echo "== the sample app runs as uid 1000, pid $pid here, pid 1 in its own namespace"
echo "== clrattach ps"
"$CLRATTACH" ps
echo
echo "== clrattach attach --pid $pid --profiler $BUILD/libclrprobe.so --clsid $CLSID"
"$CLRATTACH" attach --pid "$pid" --profiler "$BUILD/libclrprobe.so" --clsid "$CLSID" \
    --client-data "out=/tmp/clrprobe-demo.json"
echo
echo "== the profiler's report, read from inside the app's own /tmp after 2 seconds"
sleep 2
python3 -m json.tool "/proc/$pid/root/tmp/clrprobe-demo.json"
