#!/usr/bin/env bash
# Another uid cannot block the delivery by holding the profiler's content-addressed name (issue
# 25, item 3). The victim, a real runtime running as uid 2000, has its TMPDIR on a tmpfs of mode
# 0777 without the sticky bit (the documented emptyDir shared by two apps); a uid-1000 process has
# put the public profiler there first, under the name clrattach computes for it, 0444 and its own.
# clrattach used to refuse that file ("not trusted for reuse") on every attempt, and `watch` gave
# up on the victim for good. Now the name is left alone and the profiler goes under a fallback
# name of ours: `attach` and `watch` both attach, the probe loads and reports from inside, and the
# squatter's file stays exactly as it was. Every clrattach run is under `timeout`.
. "$(dirname "$0")/lib.sh"
require_env

NAME="libclrprobe-$(sha256sum "$PROBE" | cut -c1-16).so"
SHARED=/tmp/shared
HANG_S=60
# The victims' --seconds values: the watcher selects by them, so runtimes of other suites on the
# machine are never in the picture.
MARK_ATTACH=157
MARK_WATCH=158
# --pre of each victim: the shared tmpfs over its TMPDIR, then the squatter's copy, made as uid
# 1000 itself.
PLANT="mount -t tmpfs -o mode=0777 tmpfs $SHARED && setpriv --reuid=1000 --regid=1000 \
--clear-groups sh -c 'cp $PROBE $SHARED/$NAME && chmod 444 $SHARED/$NAME'"

# squat_state PID: owner, mode, inode and change time of the squatter's file in the victim.
squat_state() {
    stat -c '%u %a %i %Z' "/proc/$1/root$SHARED/$NAME" 2>&1
}

# check_delivery NAME PID PATH REPORT: PATH (as the victim sees it) is a fallback name of ours in
# the shared TMPDIR, owned by the victim's uid, mapped, and the probe reported from inside.
check_delivery() {
    local name=$1 pid=$2 path=$3 report=$4 counters
    if [[ ! $path =~ ^$SHARED/libclrprobe-[0-9a-f]{16}-[0-9a-f]{16}\.so$ ]]; then
        fail "$name" "delivered to '$path', not a fallback name in $SHARED"
    elif [ "$(stat -c %u "/proc/$pid/root$path" 2>&1)" != 2000 ]; then
        fail "$name" "$path is not the victim's: $(stat -c %u "/proc/$pid/root$path" 2>&1)"
    elif ! cmp -s "$PROBE" "/proc/$pid/root$path"; then
        fail "$name" "$path does not hold the profiler's bytes"
    elif ! is_mapped "$pid" "$(basename "$path")"; then
        fail "$name" "$path is not mapped in /proc/$pid/maps"
    elif ! counters=$(probe_report "$pid" "$report"); then
        fail "$name" "no probe report with counted events at $report in the victim"
    else
        ok "$name ($(basename "$path"); $counters)"
        return 0
    fi
    return 1
}

# 1. attach --pid: attached under a fallback name, the squatter's file untouched.
if start_target squat-attach --uid 2000 --tmpdir $SHARED --seconds $MARK_ATTACH --pre "$PLANT"; then
    P=$TARGET_PID
    before=$(squat_state "$P")
    if [ "${before%% *}" != 1000 ]; then
        fail squat-attach-setup "the squatter's file is not uid 1000's: $before"
    fi
    OUT=$WORK/attach.out ERR=$WORK/attach.err
    timeout -s KILL $HANG_S "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --target-dir $SHARED --client-data out=/tmp/probe-squat.json \
        -o json >"$OUT" 2>"$ERR"
    RC=$?
    if [ $RC -ne 0 ] || [ "$(json_get "$OUT" outcome)" != attached ]; then
        fail squat-attach "exit $RC: $(cat "$ERR" "$OUT")"
    else
        check_delivery squat-attach "$P" "$(json_get "$OUT" delivered_path)" /tmp/probe-squat.json
    fi
    after=$(squat_state "$P")
    [ "$before" = "$after" ] && ok "squat-attach-squatter-untouched" ||
        fail squat-attach-squatter-untouched "before '$before', after '$after'"
else
    fail squat-attach "the victim did not start"
fi

# 2. watch: the victim is attached, not given up on.
if start_target squat-watch --uid 2000 --tmpdir $SHARED --seconds $MARK_WATCH --pre "$PLANT"; then
    P=$TARGET_PID
    before=$(squat_state "$P")
    WOUT=$WORK/watch.out WERR=$WORK/watch.err
    timeout -s KILL $HANG_S "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --match-cmdline "ClrTarget.dll --seconds $MARK_WATCH" --uid 2000 --target-dir $SHARED \
        --client-data out=/tmp/probe-squat-watch.json --interval 100 --events off \
        -o json >"$WOUT" 2>"$WERR" &
    W=$!
    TARGET_PIDS+=("$W")
    for _ in $(seq 300); do grep -q '"outcome"' "$WOUT" 2>/dev/null && break; sleep 0.1; done
    line=$(grep -m1 "\"pid\":$P," "$WOUT")
    if [ -z "$line" ]; then
        fail squat-watch "no result for the victim: $(cat "$WOUT" "$WERR" | head -20)"
    elif ! grep -q '"outcome":"attached"' <<<"$line"; then
        fail squat-watch "not attached: $line"
    else
        check_delivery squat-watch "$P" "$(json_get <(echo "$line") delivered_path)" \
            /tmp/probe-squat-watch.json
    fi
    kill -TERM "$W" 2>/dev/null
    wait "$W"
    after=$(squat_state "$P")
    [ "$before" = "$after" ] && ok "squat-watch-squatter-untouched" ||
        fail squat-watch-squatter-untouched "before '$before', after '$after'"
else
    fail squat-watch "the victim did not start"
fi

finish e2e-squat
