#!/usr/bin/env bash
# Nothing left behind (issue 25, item 10): SIGTERM, SIGINT or SIGHUP to `attach` while it
# delivers a profiler directory of about 100 MB removes what it wrote (the temporary tree, or the
# tree it had just published) before it exits as interrupted (11), and the runtime is never asked
# to load it. Before delivery there is nothing to remove: the signal ends the process at once.
. "$(dirname "$0")/lib.sh"
require_env

BIG=$WORK/bigprof
big_profiler "$BIG"

# ours_in DIR: what a delivery of ours leaves in DIR (a temporary, or the published tree).
ours_in() {
    ls -a "$1" 2>/dev/null | grep -E '^\.clrattach-|^libclrprobe-'
}

# interrupted_case SIG: starts the attach behind a fifo while tests/tools/stop_on_create.py
# watches the target's TMPDIR; the attach (and any child of it) is stopped the moment its
# temporary tree appears, so SIG is sent mid-delivery by construction; then it is continued and
# what is left is checked.
interrupted_case() {
    local sig=$1 name="interrupt-during-delivery-$1" tmp="/proc/$P/root/tmp" apid rc i s seen=0
    local go="$WORK/go.$1"
    OUT="$WORK/out.$sig.txt"
    ERR="$WORK/err.$sig.txt"
    mkfifo "$go"
    # shellcheck disable=SC2016 # expanded by the inner shell
    bash -c 'read -r _ <"$0"; exec "$@"' "$go" "$CLRATTACH" attach --pid "$P" \
        --profiler "$BIG" --clsid "$PROBE_CLSID" -o json >"$OUT" 2>"$ERR" &
    apid=$!
    python3 "$ROOT/tests/tools/stop_on_create.py" --dir "$tmp" --prefix .clrattach- \
        --pid "$apid" --self --timeout 60 >"$WORK/stop.$sig" 2>&1 &
    s=$!
    for i in $(seq 100); do
        grep -q '^watching' "$WORK/stop.$sig" && break
        sleep 0.1
    done
    echo go >"$go"
    timeout 70 tail --pid="$s" -f /dev/null
    grep -q '^stopped' "$WORK/stop.$sig" && seen=1
    kill -"$sig" "$apid" 2>/dev/null
    pkill -CONT -P "$apid" 2>/dev/null
    kill -CONT "$apid" 2>/dev/null
    timeout 60 tail --pid="$apid" -f /dev/null
    wait "$apid"
    rc=$?
    left=$(ours_in "$tmp")
    if [ $seen = 0 ]; then
        fail "$name" "the delivery was never seen in progress (exit $rc): $(cat "$ERR")"
    elif [ $rc -ne 11 ]; then
        fail "$name" "exit $rc, want 11; left: $left; $(cat "$ERR")"
    elif [ -n "$left" ]; then
        fail "$name" "left in the target's TMPDIR: $left"
    elif [ "$(json_get "$OUT" outcome)" != interrupted ] || ! grep -q "stopped by SIG$sig" "$ERR"; then
        fail "$name" "$(cat "$OUT" "$ERR")"
    elif is_mapped "$P" libclrprobe; then
        fail "$name" "the runtime loaded the profiler"
    else
        ok "$name (nothing left, exit 11)"
    fi
}

if start_target interrupt --pidns --uid 1000; then
    P=$TARGET_PID
    for sig in TERM INT HUP; do
        interrupted_case $sig
    done
    # The same attach, not stopped, still works: nothing of the stopped ones stands in its way.
    clr attach --pid "$P" --profiler "$BIG" --clsid "$PROBE_CLSID" --settle 0
    if [ $RC -eq 0 ] && is_mapped "$P" libclrprobe; then
        ok "interrupt-then-attach"
    else
        fail "interrupt-then-attach" "exit $RC: $(cat "$ERR")"
    fi
fi

# Before delivery (a runtime that never answers ProcessInfo): nothing to remove, the signal ends
# the attach at once as it always did.
if start_fake interrupt-silent silent; then
    P=$TARGET_PID
    "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout 30 \
        >"$WORK/out.silent" 2>"$WORK/err.silent" &
    apid=$!
    for i in $(seq 100); do
        grep -q '^connection' "$TARGET_LOG" && break
        sleep 0.05
    done
    t0=$(date +%s%N)
    kill -TERM "$apid"
    wait "$apid"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -eq 143 ] && [ $ms -lt 1000 ] && [ -z "$(ours_in "/proc/$P/root/tmp")" ]; then
        ok "interrupt-before-delivery (ended by the signal in $ms ms)"
    else
        fail "interrupt-before-delivery" "exit $rc after $ms ms: $(cat "$WORK/err.silent")"
    fi
fi

finish test_interrupt
