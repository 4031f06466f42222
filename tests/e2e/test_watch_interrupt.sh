#!/usr/bin/env bash
# Nothing left behind by `watch` (issue 25, item 10): SIGTERM to the watcher while its child
# delivers a profiler directory of about 100 MB kills the child, and the watcher then removes that
# run's temporary tree from the target's TMPDIR (as the target's user, within
# WATCH_SWEEP_WAIT_MS) before it exits. The selector names this test's own --seconds value.
. "$(dirname "$0")/lib.sh"
require_env

BIG=$WORK/bigprof
mkdir -p "$BIG"
cp "$PROBE" "$BIG/"
for i in $(seq 10); do head -c 10M /dev/zero >"$BIG/pad$i.bin"; done

temps_in() {
    ls -a "$1" 2>/dev/null | grep -E '^\.clrattach-.*\.tmp'
}

# One try against a fresh target: true when the signal landed mid-delivery (then the verdict is
# given), false when the delivery was never seen in progress.
try_once() {
    local n=$1 tmp w i seen=0 t0 ms rc left
    start_target "winterrupt$n" --pidns --uid 1000 --seconds 117 || return 1
    tmp="/proc/$TARGET_PID/root/tmp"
    "$CLRATTACH" watch --profiler "$BIG" --clsid "$PROBE_CLSID" --interval 100 \
        --match-cmdline "ClrTarget.dll --seconds 117" --uid 1000 --events off -o json \
        >"$WORK/out.$n" 2>"$WORK/err.$n" &
    w=$!
    for i in $(seq 400000); do
        if [ -n "$(compgen -G "$tmp/.clrattach-*.tmp*")" ]; then
            seen=1
            break
        fi
        kill -0 "$w" 2>/dev/null || break
    done
    t0=$(date +%s%N)
    kill -TERM "$w" 2>/dev/null
    timeout 30 tail --pid="$w" -f /dev/null
    wait "$w"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $seen = 0 ]; then
        echo "try $n: delivery never seen in progress (exit $rc)"
        return 1
    fi
    left=$(temps_in "$tmp")
    if [ -n "$left" ]; then
        fail "watch-interrupt-sweeps" "left in the target's TMPDIR after watch exited ($rc): $left; $(cat "$WORK/err.$n")"
    elif [ $ms -gt 4000 ]; then
        fail "watch-interrupt-sweeps" "watch took $ms ms to exit after SIGTERM"
    elif ! grep -q '"outcome":"interrupted"' "$WORK/out.$n"; then
        fail "watch-interrupt-sweeps" "no interrupted result: $(cat "$WORK/out.$n" "$WORK/err.$n")"
    else
        ok "watch-interrupt-sweeps (nothing left, exit $rc after $ms ms)"
    fi
    return 0
}

done_=0
for n in 1 2 3 4; do
    if try_once $n; then
        done_=1
        break
    fi
done
[ $done_ = 1 ] || fail "watch-interrupt-sweeps" "no try landed mid-delivery"

finish test_watch_interrupt
