# shellcheck shell=bash
# Sourced by bench/run.sh (its helpers and variables: start_stamped_watcher, detect_one, ITER,
# B, TARGET_PIDS). Event-driven discovery under a hostile flood: a process in its own mount and
# PID namespaces (a private tmpfs on /tmp, as a container's), whose socket directory the watcher
# holds and watches, creates `dotnet-diagnostic-<pid>-<key>-socket` sockets in bursts of 1,000
# (bound Unix sockets, removed after each burst, names never used twice) while a good target
# starts in another container. Each round measures one good target without the flood, one
# with it, and one during the issue's flood of 1,000 creations (paced over 250 ms, started just
# before the good target, so that they cover its start), interleaved, against the same watcher:
# detection latency as detect_one measures it. Reported in the same run: the ratios, and the
# good targets all attached (the loop kept serving) while the hostile process made N creations.
# The continuous flood is the harsher: the flooding process holds a CPU the whole time.

# The hostile process: waits for a signal. SIGUSR1: creates bursts of 1,000 sockets until
# SIGUSR2, and writes how many it made in that round to /tmp/flood.count (read by the bench
# through /proc/PID/root). SIGHUP: creates 1,000, four a millisecond, removes them, and writes
# /tmp/burst.count.
FLOOD_PY='
import os, signal, socket, time
state = {"on": False, "made": 0, "burst": 0}
def go(*_):
    state["made"] = 0
    state["on"] = True
def stop(*_):
    state["on"] = False
    with open("/tmp/flood.count.new", "w") as f:
        f.write("%d\n" % state["made"])
    os.rename("/tmp/flood.count.new", "/tmp/flood.count")
def paced(*_):
    state["paced"] = True
state["paced"] = False
signal.signal(signal.SIGUSR1, go)
signal.signal(signal.SIGUSR2, stop)
signal.signal(signal.SIGHUP, paced)
open("/tmp/flood.ready", "w").close()
while True:
    if state["paced"]:
        state["paced"] = False
        state["burst"] += 1
        socks = []
        for i in range(1000):
            name = "/tmp/dotnet-diagnostic-%d-%d%03d-socket" % (i + 1, state["burst"], i)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(name)
            socks.append((s, name))
            if i % 4 == 3:
                time.sleep(0.001)
        for s, name in socks:
            s.close()
            os.unlink(name)
        with open("/tmp/burst.count.new", "w") as f:
            f.write("%d\n" % len(socks))
        os.rename("/tmp/burst.count.new", "/tmp/burst.count")
        continue
    if not state["on"]:
        signal.pause()
        continue
    state["burst"] += 1
    socks = []
    for i in range(1000):
        if not state["on"]:
            break
        # Namespace pids 1..1000: one names this process itself (pid 1 here), the rest nobody.
        name = "/tmp/dotnet-diagnostic-%d-%d%03d-socket" % (i + 1, state["burst"], i)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(name)
        socks.append((s, name))
        state["made"] += 1
    for s, name in socks:
        s.close()
        os.unlink(name)
'

# Starts the hostile process; sets FLOOD_PID (its pid here) once it waits for the signal. From /
# and by its absolute path: a checkout under /tmp (the working directory) is hidden by the tmpfs,
# and a python found on PATH may be a shim that needs it.
start_flooder() {
    unshare --mount --propagation private --pid --fork --mount-proc sh -c \
        "mount -t tmpfs -o mode=1777 tmpfs /tmp && cd / && exec /usr/bin/python3 -c '$FLOOD_PY'" \
        >"$1/flooder.log" 2>&1 &
    local upid=$! i
    disown "$upid"
    TARGET_PIDS+=("$upid")
    FLOOD_PID=""
    for i in $(seq 100); do
        [ -z "$FLOOD_PID" ] && FLOOD_PID=$(tr -d ' ' <"/proc/$upid/task/$upid/children" 2>/dev/null)
        [ -n "$FLOOD_PID" ] && [ -e "/proc/$FLOOD_PID/root/tmp/flood.ready" ] && break
        sleep 0.05
    done
    [ -n "$FLOOD_PID" ] && [ -e "/proc/$FLOOD_PID/root/tmp/flood.ready" ] || return 1
    TARGET_PIDS+=("$FLOOD_PID")
}

flood_bench() {
    local fd="$B/flood" i made=0 n
    rm -rf "$fd"
    mkdir -p "$fd"
    start_stamped_watcher 993 "$fd" || return 1
    local w=$WATCHER
    start_flooder "$fd" || { echo "bench: the flooding process did not start" >&2; return 1; }
    # The watcher finds it (pid tick, scan) and holds and watches its /tmp before the first flood.
    sleep 1
    for i in $(seq 1 "$ITER"); do
        # Three result lines a round, all "attached" with one profiler: one series of the
        # results' rate limit (docs/events.md: 25 lines, then one per 5 minutes). A new watcher
        # every 8 rounds, so that every good target's line is printed; it holds and watches the
        # hostile directory (a second) before the next round.
        if [ "$i" -gt 1 ] && [ $(((i - 1) % 8)) -eq 0 ]; then
            kill -TERM "$w"
            timeout 10 tail --pid="$w" -f /dev/null
            rm -f "$fd/ready"
            start_stamped_watcher 993 "$fd" || return 1
            w=$WATCHER
            sleep 1
        fi
        detect_one "bench-quiet-$i" 993 "$fd" "$fd/latency-quiet.dat" || return 1
        rm -f "/proc/$FLOOD_PID/root/tmp/flood.count"
        kill -USR1 "$FLOOD_PID" || return 1
        # The flood under way before the good target starts.
        sleep 0.02
        detect_one "bench-flood-$i" 993 "$fd" "$fd/latency-flood.dat" || return 1
        kill -USR2 "$FLOOD_PID" || return 1
        for _ in $(seq 100); do [ -s "/proc/$FLOOD_PID/root/tmp/flood.count" ] && break; sleep 0.05; done
        n=$(cat "/proc/$FLOOD_PID/root/tmp/flood.count" 2>/dev/null) || return 1
        made=$((made + n))
        echo "$n" >>"$fd/creations.dat"
        # The issue's flood: 1,000 creations paced over the good target's start.
        rm -f "/proc/$FLOOD_PID/root/tmp/burst.count"
        kill -HUP "$FLOOD_PID" || return 1
        sleep 0.02
        detect_one "bench-burst-$i" 993 "$fd" "$fd/latency-burst.dat" || return 1
        for _ in $(seq 100); do [ -s "/proc/$FLOOD_PID/root/tmp/burst.count" ] && break; sleep 0.05; done
        [ "$(cat "/proc/$FLOOD_PID/root/tmp/burst.count" 2>/dev/null)" = 1000 ] ||
            { echo "bench: the paced flood did not make its 1,000 sockets" >&2; return 1; }
    done
    kill -TERM "$w"
    kill -KILL "$FLOOD_PID" 2>/dev/null
    wait 2>/dev/null
    echo "flood: $made sockets created by the hostile process over $ITER rounds" >&2
    return 0
}
