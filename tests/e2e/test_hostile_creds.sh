#!/usr/bin/env bash
# clrattach acts as the target's user for every access to the target, with exactly the target's
# own filesystem capabilities and groups (issue 11, docs/security.md). Each trap is built for
# real: a uid-1000 target in its own user and mount namespace bind-mounts a root-only socket of
# the host over its diagnostic socket name; a uid-0 target without capabilities points us at a
# directory it cannot write; a target with a supplementary group needs that group; a target
# that is not dumpable, attached as its own uid, gets the right words.
. "$(dirname "$0")/lib.sh"
require_env

FAKE="$ROOT/tests/tools/fake_runtime.py"
TIMEOUT_S=2
# Every clrattach run below is bounded: a hang is a failure, not a stuck suite.
RUN_LIMIT_S=20

# The host's root-only socket: mode 0600, owned by root. It records every connection and the
# bytes sent on it, so "nobody connected" can be proved.
ROOT_SOCK=/run/clrattach-test-rootonly-$$.sock
ROOT_LOG="$WORK/rootonly.log"
python3 "$ROOT/tests/tools/recording_server.py" "$ROOT_SOCK" "$ROOT_LOG" >"$WORK/rootonly.out" 2>&1 &
ROOT_SRV=$!
disown "$ROOT_SRV"
TARGET_PIDS+=("$ROOT_SRV")
for _ in $(seq 100); do grep -q ready "$WORK/rootonly.out" 2>/dev/null && break; sleep 0.05; done

# bclr [args...]: clr under a time limit.
bclr() { clr timeout -k 2 "$RUN_LIMIT_S" "$CLRATTACH" "$@"; }
clr() {
    OUT="$WORK/out.$$.txt"
    ERR="$WORK/err.$$.txt"
    "$@" >"$OUT" 2>"$ERR"
    RC=$?
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" >&2
    return 0
}

# wait_ready LOG UPID [children]: waits for "ready" in LOG; with "children", TARGET_PID is the
# child of UPID (the process inside a new PID namespace), else UPID itself.
wait_ready() {
    local log=$1 upid=$2 kids=${3:-}
    TARGET_PID=""
    for _ in $(seq 200); do
        if [ -z "$TARGET_PID" ]; then
            if [ -n "$kids" ]; then
                TARGET_PID=$({ tr -d " " <"/proc/$upid/task/$upid/children"; } 2>/dev/null)
                [ -n "$TARGET_PID" ] && TARGET_PIDS+=("$TARGET_PID")
            else
                TARGET_PID=$upid
            fi
        fi
        grep -q '^ready' "$log" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "target did not start:" >&2
    cat "$log" >&2
    return 1
}

# spawn_fake NAME PRE WRAP [SCRIPT_ARGS...]: the fake runtime (good mode unless SCRIPT_ARGS say
# otherwise) in its own mount and PID namespace with a private tmpfs /tmp. PRE runs as root in
# that namespace first; WRAP (a setpriv command, or "") runs the fake; FAKE_ENV adds variables.
spawn_fake() {
    local name=$1 pre=$2 wrap=$3
    shift 3
    local args="'$(ns_path "$FAKE")' good"
    [ $# -gt 0 ] && args="$*"
    TARGET_LOG="$WORK/$name.log"
    local inner="${NS_PROLOGUE}mount -t tmpfs -o mode=1777 tmpfs /tmp && ${pre:+$pre && }exec \
$wrap env -i PATH=/usr/bin:/bin HOME=/tmp ${FAKE_ENV:-} python3 $args"
    unshare --mount --propagation private --pid --fork --mount-proc sh -c "$inner" \
        >"$TARGET_LOG" 2>&1 &
    local upid=$!
    disown "$upid"
    TARGET_PIDS+=("$upid")
    wait_ready "$TARGET_LOG" "$upid" children
}

# Other processes on the machine may scan for .NET processes too: only connections made by
# the clrattach under test count.
SELF_EXE=$(readlink -f "$CLRATTACH")
root_sock_untouched() {
    local name=$1
    sleep 0.3
    if grep -qF "exe=$SELF_EXE" "$ROOT_LOG"; then
        fail "$name" "the root-only socket was reached: $(grep -F "exe=$SELF_EXE" "$ROOT_LOG" | tr '\n' ' ')"
    else
        ok "$name"
    fi
    : >"$ROOT_LOG"
}

# The listener must really answer a root client, or an empty log would prove nothing.
if python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b"x")' \
    "$ROOT_SOCK" && sleep 1.3 && grep -q "bytes 1 exe=.*python" "$ROOT_LOG"; then
    ok "rootonly-listener-records"
else
    fail "rootonly-listener-records" "the listener at $ROOT_SOCK records nothing: $(cat "$ROOT_LOG" "$WORK/rootonly.out")"
fi
: >"$ROOT_LOG"

# (a) A uid-1000 target, root of its own user and mount namespace, bind-mounts the host's
# root-only socket over its diagnostic socket name. `ps` run as root must not connect as root.
BM_LOG="$WORK/bindmount.log"
setpriv --reuid=1000 --regid=1000 --clear-groups \
    unshare --user --map-root-user --mount --propagation private \
    python3 "$ROOT/tests/tools/bindmount_target.py" "$ROOT_SOCK" >"$BM_LOG" 2>&1 &
BM=$!
disown "$BM"
TARGET_PIDS+=("$BM")
if wait_ready "$BM_LOG" "$BM"; then
    P=$TARGET_PID
    bclr ps -o json
    line=$(python3 -c 'import json,sys
for d in json.load(open(sys.argv[1]))["processes"]:
    if d["pid"] == int(sys.argv[2]): print(json.dumps(d))' "$OUT" "$P" 2>/dev/null)
    state=$(echo "$line" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read() or "{}").get("state",""))')
    detail=$(echo "$line" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read() or "{}").get("detail",""))')
    if [ $RC -ne 0 ]; then
        fail "ps-bindmount-root-socket" "exit $RC: $(cat "$ERR")"
    elif [ -z "$line" ]; then
        fail "ps-bindmount-root-socket" "pid $P not listed: $(cat "$OUT")"
    elif [ "$state" != no_access ] || ! echo "$detail" | grep -qi "permission.*uid 0"; then
        fail "ps-bindmount-root-socket" "state '$state', detail '$detail'"
    else
        ok "ps-bindmount-root-socket ($state: $detail)"
    fi
    root_sock_untouched "ps-bindmount-root-socket-not-connected"
    bclr ps
    if [ $RC -eq 0 ] && grep -qE "^$P .* no_access " "$OUT"; then
        ok "ps-bindmount-text"
    else
        fail "ps-bindmount-text" "exit $RC: $(grep "^$P " "$OUT") $(cat "$ERR")"
    fi
    root_sock_untouched "ps-bindmount-text-not-connected"
    # (c) attach says whose socket it is: root's, not the target's uid.
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    if [ $RC -ne 5 ]; then
        fail "attach-bindmount-socket-owner" "exit $RC, want 5: $(cat "$ERR")"
    elif ! grep -q "belongs to uid 0" "$ERR" || grep -q "belongs to uid 1000" "$ERR"; then
        fail "attach-bindmount-socket-owner" "the message does not name uid 0 as the owner: $(cat "$ERR")"
    else
        ok "attach-bindmount-socket-owner"
    fi
    root_sock_untouched "attach-bindmount-not-connected"
else
    fail "ps-bindmount-root-socket" "the bind-mounting target did not start"
fi

# (b) A uid-0 target without any capability. /tmp/d is owned by 2000, mode 0755: the target cannot
# write there, so clrattach must not either; its 1777 /tmp still takes the profiler, as root.
CAPLESS="setpriv --inh-caps=-all --bounding-set=-all"
if spawn_fake capless "mkdir -m 0755 /tmp/d && chown 2000:2000 /tmp/d" "$CAPLESS"; then
    P=$TARGET_PID
    capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$P/status")
    uid=$(awk '/^Uid:/ {print $3}' "/proc/$P/status")
    if [ "$capeff" != 0000000000000000 ] || [ "$uid" != 0 ]; then
        fail "capless-root-setup" "the target has uid $uid, CapEff $capeff"
    fi
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --target-dir /tmp/d
    left=$(ls -A "/proc/$P/root/tmp/d")
    if [ $RC -ne 6 ]; then
        fail "capless-root-no-dac-override" "exit $RC, want 6 (delivery failed): $(cat "$ERR") $(cat "$OUT")"
    elif ! grep -qiE "permission denied|EACCES" "$ERR"; then
        fail "capless-root-no-dac-override" "the message does not name the permission: $(cat "$ERR")"
    elif [ -n "$left" ]; then
        fail "capless-root-no-dac-override" "files were written into /tmp/d: $left"
    else
        ok "capless-root-no-dac-override"
    fi
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --target-dir /tmp -o json
    d=$(json_get "$OUT" delivered_path)
    if [ $RC -ne 0 ] || [ -z "$d" ]; then
        fail "capless-root-tmp-works" "exit $RC: $(cat "$ERR") $(cat "$OUT")"
    elif [ "$(stat -c %u "/proc/$P/root$d")" != 0 ]; then
        fail "capless-root-tmp-works" "$d owned by uid $(stat -c %u "/proc/$P/root$d"), not 0"
    else
        ok "capless-root-tmp-works ($d)"
    fi
else
    fail "capless-root" "the capless fake runtime did not start"
fi

# A root target WITH its capabilities is served with them: the same directory takes the file.
if spawn_fake fullroot "mkdir -m 0755 /tmp/d && chown 2000:2000 /tmp/d" ""; then
    P=$TARGET_PID
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --target-dir /tmp/d
    [ $RC -eq 0 ] && ok "full-root-keeps-its-dac-override" ||
        fail "full-root-keeps-its-dac-override" "exit $RC: $(cat "$ERR")"
else
    fail "full-root" "the fake runtime did not start"
fi

# The target's supplementary groups count as they do for it: uid 1000 in group 3000 may write
# into /tmp/g (2000:3000, mode 0775); clrattach acting with only the target's gid could not.
if spawn_fake groups "mkdir -m 0775 /tmp/g && chown 2000:3000 /tmp/g" \
    "setpriv --reuid=1000 --regid=1000 --groups=3000"; then
    P=$TARGET_PID
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --target-dir /tmp/g -o json
    d=$(json_get "$OUT" delivered_path)
    if [ $RC -ne 0 ] || [ -z "$d" ]; then
        fail "target-groups-used" "exit $RC: $(cat "$ERR") $(cat "$OUT")"
    elif [ "$(stat -c %u "/proc/$P/root$d")" != 1000 ]; then
        fail "target-groups-used" "$d owned by uid $(stat -c %u "/proc/$P/root$d"), not 1000"
    else
        ok "target-groups-used ($d)"
    fi
else
    fail "target-groups" "the fake runtime did not start"
fi
# ... and only those: without group 3000 the same directory is refused.
if spawn_fake nogroups "mkdir -m 0775 /tmp/g && chown 2000:3000 /tmp/g" \
    "setpriv --reuid=1000 --regid=1000 --clear-groups"; then
    P=$TARGET_PID
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --target-dir /tmp/g
    if [ $RC -eq 6 ] && [ -z "$(ls -A "/proc/$P/root/tmp/g")" ]; then
        ok "no-foreign-groups"
    else
        fail "no-foreign-groups" "exit $RC, /tmp/g holds '$(ls -A "/proc/$P/root/tmp/g")': $(cat "$ERR")"
    fi
else
    fail "no-foreign-groups" "the fake runtime did not start"
fi

# (c) A target that is not dumpable, attached as its own uid: the kernel keeps even its own
# user out of its environ. Say so, not "run as the app's uid" (we do).
UNDUMP="'$(ns_path "$ROOT/tests/tools/undumpable.py")' '$(ns_path "$FAKE")' good"
if spawn_fake undumpable "" "setpriv --reuid=1000 --regid=1000 --clear-groups" "$UNDUMP"; then
    P=$TARGET_PID
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    if [ $RC -ne 0 ]; then
        fail "undumpable-root-attaches" "exit $RC: $(cat "$ERR")"
    else
        ok "undumpable-root-attaches"
    fi
    clr timeout -k 2 "$RUN_LIMIT_S" setpriv --reuid=1000 --regid=1000 --clear-groups \
        "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    if [ $RC -ne 5 ]; then
        fail "undumpable-own-uid-words" "exit $RC, want 5: $(cat "$ERR")"
    elif ! grep -q "not dumpable" "$ERR" || grep -q "run clrattach as the app's uid" "$ERR"; then
        fail "undumpable-own-uid-words" "wrong words: $(cat "$ERR")"
    else
        ok "undumpable-own-uid-words"
    fi
else
    fail "undumpable" "the fake runtime did not start"
fi

# (d) The same uid, another gid: Kubernetes takes only the uid of an image's numeric USER u:g,
# so the app runs as 1000:0 beside a sidecar of 1000:1000. The kernel's ptrace read check wants
# every id to match: the app's environ stays closed. attach, ps and watch name the gid and the
# runAsGroup to set, not dumpability; with the app's gid the same attach goes through.
AS_1000_1000="setpriv --reuid=1000 --regid=1000 --clear-groups"
GID_TAG="gid-mismatch-$$"
if spawn_fake gidmismatch "" "setpriv --reuid=1000 --regid=0 --clear-groups" \
    "'$(ns_path "$FAKE")' good $GID_TAG"; then
    P=$TARGET_PID
    want="pid $P runs as uid 1000 gid 0; this clrattach runs as gid 1000"
    hint="set runAsGroup: 0 on the sidecar (or run the app with runAsGroup: 1000)"
    clr timeout -k 2 "$RUN_LIMIT_S" $AS_1000_1000 \
        "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    if [ $RC -ne 5 ]; then
        fail "gid-mismatch-attach-words" "exit $RC, want 5: $(cat "$ERR")"
    elif ! grep -qF "$want" "$ERR" || ! grep -qF "$hint" "$ERR" || grep -q "dumpable" "$ERR"; then
        fail "gid-mismatch-attach-words" "wrong words: $(cat "$ERR")"
    else
        ok "gid-mismatch-attach-words"
    fi
    clr timeout -k 2 "$RUN_LIMIT_S" $AS_1000_1000 "$CLRATTACH" ps -o json
    detail=$(python3 -c 'import json,sys
for d in json.load(open(sys.argv[1]))["processes"]:
    if d["pid"] == int(sys.argv[2]): print(d["state"], d["detail"])' "$OUT" "$P" 2>/dev/null)
    if [ $RC -ne 0 ]; then
        fail "gid-mismatch-ps" "exit $RC: $(cat "$ERR")"
    elif [ "$(grep -cF "$want" "$ERR")" != 1 ] || ! grep -qF "$hint" "$ERR"; then
        fail "gid-mismatch-ps" "stderr: $(cat "$ERR")"
    elif [ "$detail" != "no_access $hint" ]; then
        fail "gid-mismatch-ps" "row: '$detail'"
    else
        ok "gid-mismatch-ps"
    fi
    # Watched for 2 s at 50 ms a scan: said once, not at every look. Only this target is
    # selected: other runtimes of uid 1000 on the machine are not ours to attach.
    clr timeout -s TERM -k 2 2 $AS_1000_1000 "$CLRATTACH" watch --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --uid 1000 --match-cmdline "$GID_TAG" --interval 50 --events off
    n=$(grep -cF "$want" "$ERR")
    if [ "$n" != 1 ] || ! grep -qF "$hint" "$ERR"; then
        fail "gid-mismatch-watch-once" "said $n times: $(head -c 2000 "$ERR")"
    else
        ok "gid-mismatch-watch-once"
    fi
    # The app's own gid: nothing in the way.
    clr timeout -k 2 "$RUN_LIMIT_S" setpriv --reuid=1000 --regid=0 --clear-groups \
        "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    [ $RC -eq 0 ] && ok "gid-match-attaches" || fail "gid-match-attaches" "exit $RC: $(cat "$ERR")"
else
    fail "gid-mismatch" "the fake runtime did not start"
fi

# A TMPDIR its own user may write but not list (0333): clrattach lists it as that user, so the
# advice is about the directory, not about running clrattach with more rights.
if FAKE_ENV=TMPDIR=/tmp/w spawn_fake unlistable "mkdir -m 0333 /tmp/w && chown 1000:1000 /tmp/w" \
    "setpriv --reuid=1000 --regid=1000 --clear-groups"; then
    P=$TARGET_PID
    bclr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S
    if [ $RC -ne 5 ]; then
        fail "unlistable-tmpdir-words" "exit $RC, want 5: $(cat "$ERR")"
    elif ! grep -q "may not read it" "$ERR" || grep -q "or as root" "$ERR"; then
        fail "unlistable-tmpdir-words" "wrong words: $(cat "$ERR")"
    else
        ok "unlistable-tmpdir-words"
    fi
else
    fail "unlistable-tmpdir-words" "the fake runtime did not start"
fi

rm -f "$ROOT_SOCK"
finish e2e-hostile-creds
