#!/usr/bin/env bash
# The socket is the target's (issue 25, items 1 and 12; docs/security.md "The socket is the
# target's"). In a TMPDIR shared by two uids, as the documented deployment's emptyDir (tmpfs,
# mode 0777, no sticky bit), an impostor binds the diagnostic socket name of a victim (its NSpid
# and start time read from /proc) and answers like a runtime. attach must refuse it before a
# byte of the request (the operator's client data) is sent, and ps must never show the victim as
# a ready runtime: an impostor of another uid (the socket's owner), and one of the victim's own
# uid (the listener behind the connection, SO_PEERCRED). Then the other side of the rule: a
# TMPDIR reached through a link inside the target's root is followed there, as the runtime
# follows it, and the target is attached and listed.
. "$(dirname "$0")/lib.sh"
require_env

TIMEOUT_S=2
SECRET=operator-secret-4711

chmod 0711 "$WORK"
# Outside the checkout and outside /tmp: every process here gets its own tmpfs over /tmp, and
# the checkout may lie under /tmp (CI clones anywhere); /run is the same in every namespace.
SHARED=$(mktemp -d /run/clrattach-e2e-shared.XXXXXX)
# The uids of this test reach it through its parent (mktemp's 0700): searchable, not readable.
chmod 0711 "$SHARED"
mkdir "$SHARED/dir"
SHARED="$SHARED/dir"
mount -t tmpfs -o mode=0777 tmpfs "$SHARED"
# Detached (lazily: the impostors' sockets hold it until they are killed) and removed; a TERM
# from `timeout` ends the script through the same trap.
trap 'umount -l "$SHARED" 2>/dev/null; rm -rf "${SHARED%/dir}"; cleanup_targets' EXIT
trap 'exit 143' TERM INT
[ "$(stat -c %a "$SHARED")" = 777 ] || fail "shared-setup" "mode $(stat -c %a "$SHARED")"

# start_victim UID: a process that is not .NET (a sleep), as UID, its TMPDIR the shared
# directory, in its own mount namespace with a private /tmp. Sets VICTIM (its pid, also its
# NSpid: our pid namespace) and SOCK_NAME, the name its runtime would bind.
start_victim() {
    unshare --mount --propagation private sh -c "mount -t tmpfs -o mode=1777 tmpfs /tmp && \
exec env -i PATH=/usr/bin:/bin TMPDIR=$SHARED setpriv --reuid=$1 --regid=$1 --clear-groups \
sleep 300" >/dev/null 2>&1 &
    VICTIM=$!
    disown "$VICTIM"
    TARGET_PIDS+=("$VICTIM")
    local i
    for i in $(seq 100); do
        [ "$(cat "/proc/$VICTIM/comm" 2>/dev/null)" = sleep ] && break
        sleep 0.05
    done
    local nspid start
    nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$VICTIM/status")
    start=$(sed 's/.*) //' "/proc/$VICTIM/stat" | awk '{print $20}')
    SOCK_NAME="dotnet-diagnostic-$nspid-$start-socket"
}

# requests LOG: how many requests the fake runtime logged (each one it read whole, the
# AttachProfiler carrying the operator's client data among them).
requests() { grep -ac '^request ' "$1"; }

# ps_row PID: runs `ps -o json` (RC as clr sets it) and sets ROW to the row of PID as
# "state|detail", empty when it is not listed.
ps_row() {
    clr ps -o json
    ROW=$(python3 - "$OUT" "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["processes"]:
    if r["pid"] == int(sys.argv[2]):
        print("%s|%s" % (r["state"], r.get("detail", "")))
PY
    )
}

# attach_victim PID: the attach an operator would run, with client data of theirs. VERBOSE=1
# shows what a person would read.
attach_victim() {
    clr attach --pid "$1" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --client-data "$SECRET"
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" >&2
    return 0
}

# check_impostor NAME WANT_RC ATTACH_PATTERN PS_PATTERN: the verdict on an impostor started with
# start_fake (TARGET_LOG) under the name of victim $V. The attach is refused with WANT_RC and a
# message matching ATTACH_PATTERN and a next step; the impostor read no request (the operator's
# AttachProfiler and client data among them), neither from the attach nor from `ps`, which lists
# the victim as no_access with a detail matching PS_PATTERN.
check_impostor() {
    local name=$1 want=$2 attach_pattern=$3 ps_pattern=$4 log=$TARGET_LOG
    attach_victim "$V"
    if [ $RC -ne "$want" ]; then
        fail "$name-attach-refused" "exit $RC, want $want: $(cat "$ERR" "$OUT")"
    elif ! grep -q "$attach_pattern" "$ERR"; then
        fail "$name-attach-refused" "the message does not match /$attach_pattern/: $(cat "$ERR")"
    elif ! grep -q "next step" "$ERR"; then
        fail "$name-attach-refused" "no next step: $(cat "$ERR")"
    else
        ok "$name-attach-refused"
    fi
    local n
    n=$(requests "$log")
    [ "$n" -eq 0 ] && ok "$name-got-nothing" || fail "$name-got-nothing" "$n requests: $(cat -v "$log")"
    ps_row "$V"
    if [ $RC -ne 0 ]; then
        fail "$name-ps" "exit $RC: $(cat "$ERR")"
    elif [ "${ROW%%|*}" != no_access ] || ! echo "$ROW" | grep -q "$ps_pattern"; then
        fail "$name-ps" "row '$ROW'"
    else
        ok "$name-ps (${ROW%%|*}: ${ROW#*|})"
    fi
    n=$(requests "$log")
    [ "$n" -eq 0 ] && ok "$name-ps-asked-nothing" || fail "$name-ps-asked-nothing" "$(cat -v "$log")"
}

# ---- an impostor of another uid: refused on the socket's owner, never connected ---------------
start_victim 2000
V=$VICTIM
if start_fake impostor-uid good --uid 1000 --arg --socket --arg "$SHARED/$SOCK_NAME" \
    --arg --socket-mode --arg 0666; then
    owner=$(stat -c %u "$SHARED/$SOCK_NAME" 2>/dev/null)
    [ "$owner" = 1000 ] || fail "impostor-uid-setup" "socket owner '$owner'"
    check_impostor impostor-uid 5 "belongs to uid 1000, but pid $V runs as uid 2000" \
        "belongs to uid 1000"
else
    fail "impostor-uid" "the impostor did not start"
fi

# ---- an impostor of the victim's own uid: the right owner, the wrong listener ----------------
# Connected, and refused before the first request.
start_victim 2000
V=$VICTIM
if start_fake impostor-peer good --uid 2000 --arg --socket --arg "$SHARED/$SOCK_NAME"; then
    check_impostor impostor-peer 9 "served by pid $TARGET_PID (uid 2000), not by pid $V (uid 2000)" \
        "served by pid $TARGET_PID "
else
    fail "impostor-peer" "the impostor did not start"
fi

# ---- TMPDIR through a link inside the target's root -----------------------------------------
# TMPDIR=/mnt/var/run/app where /mnt/var/run -> /mnt/run (absolute, as /var/run -> /run in
# Debian images): the runtime binds its socket in /mnt/run/app; clrattach resolves the same link
# in the target's root.
LINKED="mount -t tmpfs tmpfs /mnt && mkdir -p /mnt/run/app /mnt/var && chmod 1777 /mnt/run/app \
&& ln -s /mnt/run /mnt/var/run"
if start_target linked-tmpdir --env TMPDIR=/mnt/var/run/app --pre "$LINKED"; then
    P=$TARGET_PID
    if ! ls "/proc/$P/root/mnt/run/app" | grep -q "^dotnet-diagnostic-$P-"; then
        fail "linked-tmpdir-setup" "no socket in /mnt/run/app: $(ls -la "/proc/$P/root/mnt/run/app")"
    fi
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --client-data "out=/tmp/probe-linked.json" -o json
    if [ $RC -ne 0 ]; then
        fail "linked-tmpdir-attach" "exit $RC: $(cat "$ERR" "$OUT")"
    elif ! counters=$(probe_report "$P" /tmp/probe-linked.json); then
        fail "linked-tmpdir-attach" "no probe report in the target: $(cat "$OUT")"
    else
        ok "linked-tmpdir-attach ($counters)"
    fi
    ps_row "$P"
    if [ $RC -eq 0 ] && [ "${ROW%%|*}" = ready ]; then
        ok "linked-tmpdir-ps"
    else
        fail "linked-tmpdir-ps" "exit $RC, row '$ROW': $(cat "$ERR")"
    fi
else
    fail "linked-tmpdir" "the target did not start"
fi

finish test_hostile_socket
