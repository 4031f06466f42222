#!/usr/bin/env bash
# Nothing left behind by `watch` (issue 25, item 10): SIGTERM to the watcher while its child
# delivers a profiler directory of about 100 MB kills the child, and the watcher then removes that
# run's temporary tree from the target's TMPDIR (as the target's user, within
# WATCH_SWEEP_WAIT_MS) before it exits: at most WATCH_REAP_WAIT_MS + WATCH_SWEEP_WAIT_MS (2.5 s)
# past the signal. Each try's selector names its own target's --seconds value.
. "$(dirname "$0")/lib.sh"
require_env

BIG=$WORK/bigprof
big_profiler "$BIG"

temps_in() {
    ls -a "$1" 2>/dev/null | grep -E '^\.clrattach-.*\.tmp'
}

# One try against a fresh target. The watcher is started behind a fifo so that
# tests/tools/stop_on_create.py watches the target's TMPDIR before anything can be written there;
# it stops the watcher's children the moment the delivery creates its temporary, which holds the
# delivery in its middle: then SIGTERM goes to the watcher. Returns false only when the stop
# never came.
try_once() {
    local n=$1 tmp w s i rc t0 ms left go="$WORK/go.$1"
    start_target "winterrupt$n" --pidns --uid 1000 --seconds $((170 + n)) || return 1
    tmp="/proc/$TARGET_PID/root/tmp"
    mkfifo "$go"
    # shellcheck disable=SC2016 # expanded by the inner shell
    bash -c 'read -r _ <"$0"; exec "$@"' "$go" "$CLRATTACH" watch --profiler "$BIG" \
        --clsid "$PROBE_CLSID" --interval 100 \
        --match-cmdline "ClrTarget.dll --seconds $((170 + n))" --uid 1000 --events off -o json \
        >"$WORK/out.$n" 2>"$WORK/err.$n" &
    w=$!
    python3 "$ROOT/tests/tools/stop_on_create.py" --dir "$tmp" --prefix .clrattach- --pid "$w" \
        --timeout 60 >"$WORK/stop.$n" 2>&1 &
    s=$!
    for i in $(seq 100); do
        grep -q '^watching' "$WORK/stop.$n" && break
        sleep 0.1
    done
    echo go >"$go"
    timeout 70 tail --pid="$s" -f /dev/null
    if ! grep -q '^stopped' "$WORK/stop.$n"; then
        kill -TERM "$w" 2>/dev/null
        wait "$w"
        echo "try $n: the delivery was never seen starting: $(cat "$WORK/stop.$n" "$WORK/err.$n")"
        return 1
    fi
    if ls -a "$tmp" | grep -q '^libclrprobe-'; then
        fail "watch-interrupt-sweeps" "the delivery was published although its writer was stopped at its start: $(cat "$WORK/stop.$n")"
        kill -TERM "$w" 2>/dev/null
        wait "$w"
        return 0
    fi
    t0=$(date +%s%N)
    kill -TERM "$w" 2>/dev/null
    timeout 30 tail --pid="$w" -f /dev/null
    wait "$w"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    left=$(temps_in "$tmp")
    if [ -n "$left" ]; then
        fail "watch-interrupt-sweeps" "left in the target's TMPDIR after watch exited ($rc): $left; $(cat "$WORK/err.$n")"
    elif ls -a "$tmp" | grep -q '^libclrprobe-'; then
        fail "watch-interrupt-sweeps" "a delivery cut short was published: $(ls -a "$tmp")"
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
for n in 1 2 3; do
    if try_once $n; then
        done_=1
        break
    fi
done
[ $done_ = 1 ] || fail "watch-interrupt-sweeps" "the delivery was never seen starting in 3 tries"

finish test_watch_interrupt
