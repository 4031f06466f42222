#!/usr/bin/env bash
# The paths the operator gives clrattach to write (--termination-log, --ready-file) are written
# as root, often in a directory others can write too: what is planted under them is refused,
# never followed, emptied or waited on (lib/base/opfile.c). A link to a file only root may write
# leaves that file as it was; a FIFO is refused at once, by `attach` and by `watch` (which would
# otherwise never become ready and ignore SIGTERM). And a --target-dir with a '..' component is
# a usage error found before anything is read from the target. Every run is under `timeout`: a
# hang is a failure, not a stuck suite. Each case fails against a build that follows the link,
# blocks on the FIFO or takes the '..'.
. "$(dirname "$0")/lib.sh"
require_env

HANG_S=20   # `timeout` of each run: a refusal takes milliseconds, a hang is killed
MAX_MS=5000 # what "at once" allows on a loaded machine
OP=$WORK/op
mkdir -p "$OP"
# Root's own file, which a link planted under the operator's path points to.
printf 'root-only data\n' >"$OP/secret"
chmod 600 "$OP/secret"
ln -s secret "$OP/link"
mkfifo "$OP/fifo"
SECRET_BEFORE=$(stat -c '%s %Y' "$OP/secret")

# run ARGS...: clrattach under `timeout`; RC its exit code (137: killed), MS the wall time.
run() {
    local t0 t1
    OUT="$WORK/out.txt" ERR="$WORK/err.txt"
    t0=$(date +%s%N)
    timeout -s KILL $HANG_S "$CLRATTACH" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" >&2
    return 0
}

# snapshot PID: every entry under the target's /tmp with type, size and mtime.
snapshot() {
    (cd "/proc/$1/root" && find tmp -printf '%p %y %s %T@\n' 2>&1 | sort)
}

# refused NAME WANT_RC PATTERN: the last run ended with WANT_RC, at once, saying PATTERN.
refused() {
    local name=$1 want=$2 pattern=$3
    if [ $RC -eq 137 ]; then
        fail "$name" "hung: killed after $HANG_S s ($(tr '\n' ' ' <"$ERR"))"
    elif [ $RC -ne "$want" ] || ! grep -q -- "$pattern" "$ERR"; then
        fail "$name" "exit $RC (want $want), no '$pattern': $(tr '\n' ' ' <"$ERR")"
    elif [ $MS -gt $MAX_MS ]; then
        fail "$name" "took $MS ms"
    else
        return 0
    fi
    return 1
}

secret_kept() {
    [ "$(cat "$OP/secret")" = "root-only data" ] && [ "$(stat -c '%s %Y' "$OP/secret")" = "$SECRET_BEFORE" ]
}

ATTACH=(attach --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout 5)

if start_target operator-paths --pidns --uid 1000; then
    P=$TARGET_PID
    before=$(snapshot "$P")

    # A link under --termination-log: without O_NOFOLLOW, root's file would be emptied and
    # overwritten with the result, and the attach would go on.
    run "${ATTACH[@]}" --pid "$P" --termination-log "$OP/link"
    if refused termination-log-link 2 "termination-log '$OP/link' is a symbolic link"; then
        if ! secret_kept; then
            fail termination-log-link "the file the link names changed: $(head -c 200 "$OP/secret")"
        elif [ "$(snapshot "$P")" != "$before" ]; then
            fail termination-log-link "the target was touched"
        else
            ok "termination-log-link (exit 2 in $MS ms, root's file unchanged, target untouched)"
        fi
    fi

    # A FIFO under --termination-log: a blocking open would wait for a reader for ever.
    run "${ATTACH[@]}" --pid "$P" --termination-log "$OP/fifo"
    refused termination-log-fifo 2 "termination-log '$OP/fifo' is a FIFO" &&
        ok "termination-log-fifo (exit 2 in $MS ms)"

    # '..' names one directory and resolves to another: refused with the options, before the
    # target is read, not as delivery_failed once ProcessInfo has been asked.
    run "${ATTACH[@]}" --pid "$P" --target-dir /tmp/a/../ -o json
    if refused target-dir-dotdot 2 "target-dir '/tmp/a/../' has a '..' component"; then
        if [ "$(json_get "$OUT" outcome)" != usage_error ]; then
            fail target-dir-dotdot "outcome: $(cat "$OUT")"
        elif [ "$(snapshot "$P")" != "$before" ]; then
            fail target-dir-dotdot "the target was touched"
        else
            ok "target-dir-dotdot (exit 2 in $MS ms, target untouched)"
        fi
    fi
else
    fail operator-paths "the target did not start"
fi

# watch: the ready file is written once the first scan is done. The selector matches no process
# on the machine, so only the ready file decides how the run ends.
WATCH=(watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --interval 100
    --match-cmdline "operator-paths-$$-matches-nothing")
run "${WATCH[@]}" --ready-file "$OP/fifo"
refused ready-file-fifo 1 "ready-file '$OP/fifo' is a FIFO" &&
    ok "ready-file-fifo (exit 1 in $MS ms)"

run "${WATCH[@]}" --ready-file "$OP/link"
if refused ready-file-link 1 "ready-file '$OP/link' is a symbolic link"; then
    secret_kept && ok "ready-file-link (exit 1 in $MS ms, root's file unchanged)" ||
        fail ready-file-link "the file the link names changed: $(head -c 200 "$OP/secret")"
fi

finish e2e-operator-paths
