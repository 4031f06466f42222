#!/usr/bin/env bash
# `ps` and `watch` find runtimes through the socket-directory index (lib/target/procindex.h): one
# listing per (mount namespace, TMPDIR, user), never a look at every process. What the index
# must not lose: processes of ONE mount namespace with different TMPDIRs (each directory listed),
# a process with diagnostics off beside a runtime (disabled row), a shell past its young phase
# that execs dotnet with ANOTHER TMPDIR (found by the periodic re-read of its stat), and a
# runtime whose directory the watcher held open before a tmpfs was mounted over it.
# Seccomp on (kill).
. "$(dirname "$0")/lib.sh"
require_env

# ---- ps: two TMPDIRs in one mount namespace, and a disabled neighbour ------------------------
# The target's TMPDIR is /var/tmp/app; beside it, in the same mount namespace, a sleep whose TMPDIR
# is the default /tmp/ and whose environment turns diagnostics off.
if start_target ps-two-dirs --pidns --tmpdir /var/tmp/app \
    --pre "(DOTNET_EnableDiagnostics=0 setsid sleep 307 >/dev/null 2>&1 &)"; then
    P=$TARGET_PID
    S=""
    for _ in $(seq 50); do
        S=$(pgrep -x -f "sleep 307" | head -1)
        [ -n "$S" ] && break
        sleep 0.1
    done
    TARGET_PIDS+=("$S")
    same_ns=no
    [ -n "$S" ] && [ "$(stat -L -c %i "/proc/$S/ns/mnt")" = "$(stat -L -c %i "/proc/$P/ns/mnt")" ] &&
        same_ns=yes
    clr ps -o json
    if [ $RC -eq 0 ] && [ $same_ns = yes ] && python3 - "$OUT" "$P" "$S" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["processes"]
p = [x for x in rows if x["pid"] == int(sys.argv[2])]
s = [x for x in rows if x["pid"] == int(sys.argv[3])]
assert len(p) == 1 and p[0]["state"] == "ready", p
assert p[0]["tmpdir"] == "/var/tmp/app/", p
assert len(s) == 1 and s[0]["state"] == "disabled", s
PY
    then
        ok "ps-index-two-tmpdirs-one-mntns"
    else
        fail "ps-index-two-tmpdirs-one-mntns" "rc $RC, sleep $S same ns $same_ns: $(cat "$OUT") $(cat "$ERR")"
    fi
fi

# ---- watch -----------------------------------------------------------------------------------
WOUT=$WORK/index-watch.out
WERR=$WORK/index-watch.err
"$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 127" --ready-file "$WORK/index.ready" \
    --client-data out=/tmp/probe-index.json --events off -o json >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
for _ in $(seq 50); do [ -e "$WORK/index.ready" ] && break; sleep 0.1; done
[ -e "$WORK/index.ready" ] || fail "index-watch-ready" "$(cat "$WERR")"

# attached PID: result lines with outcome "attached" for that pid (one JSON object a line).
attached() { grep -c "\"outcome\":\"attached\",.*\"pid\":$1," "$WOUT"; }
wait_attached() { # PID TENTHS
    local i
    for i in $(seq "$2"); do
        [ "$(attached "$1")" -ge 1 ] && return 0
        sleep 0.1
    done
    return 1
}

# A shell that is past its young phase (10 s) and then execs the app with another TMPDIR than
# its own: the index reads its stat again within PROCINDEX_RECHECK_MS (30 s) and probes it anew.
if start_target exec-other-tmpdir --pidns --seconds 127 --tmpdir /var/tmp/late \
    --pre "env -u TMPDIR sleep 12"; then
    X=$TARGET_PID
    if wait_attached "$X" 600 && [ "$(attached "$X")" = 1 ]; then
        ok "index-watch-exec-into-other-tmpdir"
    else
        fail "index-watch-exec-into-other-tmpdir" "$(cat "$WOUT") $(tail -5 "$WERR")"
    fi
fi

# A directory the watcher opened before the container mounted a tmpfs over it: a process with
# that TMPDIR runs for 2 s (its group is opened then), the tmpfs comes, and the runtime's socket
# appears in the new one. The index notices that the name leads elsewhere now and opens it
# again; the runtime joins the group the sleep made.
if start_target mounted-over --pidns --seconds 127 --tmpdir /var/tmp/m \
    --pre "(TMPDIR=/var/tmp/m setsid sleep 311 >/dev/null 2>&1 &) && sleep 2 && mount -t tmpfs -o mode=1777 tmpfs /var/tmp/m"; then
    M=$TARGET_PID
    TARGET_PIDS+=("$(pgrep -x -f "sleep 311" | head -1)")
    if wait_attached "$M" 100; then
        ok "index-watch-dir-mounted-over"
    else
        fail "index-watch-dir-mounted-over" "$(cat "$WOUT") $(tail -5 "$WERR")"
    fi
fi

kill -TERM "$W" # its stop is test_watch.sh's to check

finish e2e-ps-index
