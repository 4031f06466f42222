#!/usr/bin/env bash
# `ps --match-cgroup STR`: only the processes whose /proc/<pid>/cgroup holds STR (a container's
# ID), each listed as `--pid` lists one, even when it runs as another user: how the kubectl
# plugin finds the app's process in a pod whose containers share one PID namespace
# (shareProcessNamespace), where pid 1 is the pause container. A cgroup of the test's own (the
# pids controller) stands in for the container's.
. "$(dirname "$0")/lib.sh"
require_env

CG_NAME=clrattach-e2e-$$
CG=/sys/fs/cgroup/pids/$CG_NAME
if ! mkdir "$CG" 2>/dev/null; then
    fail ps-cgroup-prerequisites "cannot make $CG (the pids cgroup controller)"
    finish ps-cgroup
    exit
fi
trap 'cleanup_targets; for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done' EXIT

# pids PS_JSON: "pid:uid:state" of each listed process.
pids() {
    python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["processes"]: print("%d:%d:%s" % (p["pid"], p["uid"], p["state"]))' "$1"
}

if start_target incg --pidns --uid 1000; then
    IN=$TARGET_PID
    echo "$IN" >"$CG/cgroup.procs"
    if start_target outside --pidns --uid 1000; then
        OUTSIDE=$TARGET_PID
        # As root: the one process, inspected (ready).
        clr ps --match-cgroup "$CG_NAME" -o json
        got=$(pids "$OUT")
        if [ $RC -eq 0 ] && [ "$got" = "$IN:1000:ready" ]; then
            ok ps-cgroup-only-that-container
        else
            fail ps-cgroup-only-that-container "exit $RC: '$got' (want $IN; not $OUTSIDE) $(cat "$ERR")"
        fi
        # As a user with no rights on it (the plugin's probe): listed even so, with its uid.
        OUT="$WORK/out.cg.txt"
        setpriv --reuid 65532 --regid 65532 --clear-groups "$CLRATTACH" ps --match-cgroup "$CG_NAME" \
            --no-query -o json >"$OUT" 2>"$WORK/err.cg.txt"
        got=$(pids "$OUT")
        if [ "${got%%:*}" = "$IN" ] && [ "$(echo "$got" | cut -d: -f2)" = 1000 ] && [ "$(echo "$got" | wc -l)" = 1 ]; then
            ok ps-cgroup-listed-for-another-user
        else
            fail ps-cgroup-listed-for-another-user "'$got' $(cat "$WORK/err.cg.txt")"
        fi
        # A string no process's cgroup holds: nothing listed, exit 0.
        clr ps --match-cgroup "no-such-container-$$" -o json
        if [ $RC -eq 0 ] && [ -z "$(pids "$OUT")" ]; then ok ps-cgroup-none; else fail ps-cgroup-none "exit $RC $(cat "$OUT")"; fi
    else
        fail ps-cgroup-start "the second target did not start"
    fi
else
    fail ps-cgroup-start "the target did not start"
fi
clr ps --match-cgroup ""
if [ $RC -eq 2 ] && grep -q -- '--match-cgroup' "$ERR"; then ok ps-cgroup-empty-refused; else fail ps-cgroup-empty-refused "exit $RC"; fi
finish ps-cgroup
