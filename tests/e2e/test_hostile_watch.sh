#!/usr/bin/env bash
# A hostile target cannot steer or hold `clrattach watch` hostage (issue 11). Built for real:
#  (a) pid reuse between selection and attach: a process the selectors take exits the moment the
#      watcher's discovery lists its TMPDIR, and a process they do not take gets its pid
#      (ns_last_pid, in a PID namespace of the test's own), round after round. strace holds every
#      pidfd_open of the watcher for a moment (fault injection from outside, on the shipped
#      binary), so the hand-over always lands between selection and attach. The non-matching
#      process logs every command it receives: it must receive none, and no profiler.
#  (b) silent runtimes (fake_runtime.py silent: accept, never answer) next to a real .NET target:
#      the real one is attached in well under one --timeout, and SIGTERM ends the watcher within
#      a second (asserted < 2 s) with each attach in flight reported once as `interrupted`;
#  (c) no child process of the watcher is left, running or zombie, after the stop, and a child
#      that dies of a signal is reported as internal_error naming it;
#  (d) the ready file comes with the first scan beside a runtime that never answers, and an
#      attach stuck past its own deadlines is killed at the watcher's deadline.
# Seccomp on (kill) throughout.
. "$(dirname "$0")/lib.sh"
require_env
command -v strace >/dev/null || { echo "FAIL hostile-watch-prerequisites: strace missing (make deps)"; exit 1; }

FAKE="$ROOT/tests/tools/fake_runtime.py"

# ---- (a) pid reuse under watch -----------------------------------------------------------
ROUNDS=3
DELAY_US=1500000
cat >"$WORK/reuse.py" <<'PY'
# Runs as pid 1 of a fresh PID namespace (its own /proc, its own tmpfs /tmp): the watcher under
# strace, then ROUNDS times: a matching fake M (uid 1000) that exits when listed, and at once a
# non-matching fake N (uid 0) on M's pid. Prints one JSON line per round.
import json, os, subprocess, sys, time
clr, probe, clsid, fake, work, rounds, delay = sys.argv[1:8]
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp"], check=True)
ready = work + "/reuse.ready"
w = subprocess.Popen(["strace", "-qq", "-o", work + "/reuse.strace", "-e", "trace=pidfd_open",
                      "-e", "inject=pidfd_open:delay_enter=" + delay, clr, "watch",
                      "--profiler", probe, "--clsid", clsid, "--match-comm", "fakeclr",
                      "--uid", "1000", "--interval", "100", "--timeout", "5", "--events", "off",
                      "-o", "json", "--ready-file", ready],
                     stdout=open(work + "/reuse.out", "w"), stderr=open(work + "/reuse.err", "w"))
for _ in range(300):
    if os.path.exists(ready):
        break
    time.sleep(0.1)
env = {"PATH": "/usr/bin:/bin"}
for k in range(int(rounds)):
    mdir, ndir = "/tmp/m%d" % k, "/tmp/n%d" % k
    for d in (mdir, ndir):
        os.mkdir(d)
        os.chmod(d, 0o1777)
    m = subprocess.Popen(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "python3",
                          fake, "exit-when-listed", "--name", "fakeclr"],
                         env=dict(env, TMPDIR=mdir), stdout=open("%s/m%d.log" % (work, k), "w"),
                         stderr=subprocess.STDOUT)
    x = m.pid  # setpriv execs the fake: the same process
    try:
        m.wait(timeout=30)
    except subprocess.TimeoutExpired:
        m.kill()
        print(json.dumps({"round": k, "error": "the watcher never listed the matching fake"}))
        continue
    # Its pid is free: the next process of this namespace takes it.
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(x - 1))
    nlog = "%s/n%d.log" % (work, k)
    n = subprocess.Popen(["python3", fake, "good", "--name", "fakeclr"],
                         env=dict(env, TMPDIR=ndir), stdout=subprocess.PIPE,
                         stderr=open(nlog, "w"), text=True)
    n.stdout.readline()  # "ready": its socket is up
    # Longer than a watcher needs to pin the pid again (one held pidfd_open) and attach.
    time.sleep(2 * int(delay) / 1e6 + 2)
    # Requests from this namespace, where the watcher is the only client: a process outside it
    # (another suite's `clrattach ps` asking every runtime on the machine) shows as peer 0.
    requests = [l.strip() for l in open(nlog)
                if l.startswith("request") and not l.rstrip().endswith(" peer 0")]
    files = [f for f in os.listdir(ndir) if not f.startswith("dotnet-diagnostic-")]
    print(json.dumps({"round": k, "pid": x, "reused": n.pid == x, "requests": requests,
                      "files": files}), flush=True)
    n.kill()
    n.wait()
w.terminate()
try:
    w.wait(timeout=10)
except subprocess.TimeoutExpired:
    w.kill()
PY
# The driver mounts a tmpfs over /tmp: the checkout (anywhere, /tmp included) is reached through
# its bind mount at /srv (NS_PROLOGUE, made first), and every path is given as seen from there.
timeout 120 unshare --pid --fork --kill-child --mount-proc --mount --propagation private \
    sh -c "${NS_PROLOGUE}exec python3 '$(ns_path "$WORK/reuse.py")' '$(ns_path "$CLRATTACH")' \
'$(ns_path "$PROBE")' '$PROBE_CLSID' '$(ns_path "$FAKE")' '$(ns_path "$WORK")' '$ROUNDS' \
'$DELAY_US'" >"$WORK/reuse.rounds" 2>"$WORK/reuse.driver.err"
verdict=$(python3 - "$WORK/reuse.rounds" "$ROUNDS" <<'PY'
import json, sys
rounds = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [r for r in rounds if r.get("requests") or r.get("files")]
errors = [r["error"] for r in rounds if "error" in r]
reused = sum(1 for r in rounds if r.get("reused"))
if bad:
    print("FAIL the non-matching process on a reused pid got: %s" % bad)
elif errors or len(rounds) != int(sys.argv[2]):
    print("FAIL %d of %s rounds ran: %s" % (len(rounds), sys.argv[2], errors))
elif reused == 0:
    print("FAIL no round reused the pid: nothing was shown")
else:
    print("ok %d rounds, %d with the pid reused, no command and no file to the other process" % (len(rounds), reused))
PY
)
case $verdict in
ok*) ok "watch-pid-reuse-not-attached (${verdict#ok })" ;;
*) fail "watch-pid-reuse-not-attached" "${verdict#FAIL } | watcher: $(tail -c 1500 "$WORK/reuse.out") $(tail -5 "$WORK/reuse.err") $(cat "$WORK/reuse.driver.err")" ;;
esac
# The instance selected is reported about, never the process that took its pid.
if ! grep -q '"outcome":"attached"' "$WORK/reuse.out" 2>/dev/null; then
    ok "watch-pid-reuse-nothing-attached"
else
    fail "watch-pid-reuse-nothing-attached" "$(grep '"attached"' "$WORK/reuse.out" | head -3)"
fi
# HOSTILE_WATCH_CASES=pid-reuse stops here: tests/e2e/test_checkout_anywhere.sh runs case (a)
# alone from a copy of the checkout under /tmp, the place its tmpfs over /tmp would hide.
if [ "${HOSTILE_WATCH_CASES:-all}" = pid-reuse ]; then
    finish e2e-hostile-watch
    exit
fi

# ---- (b) silent runtimes do not hold a real one hostage; (c) a stop leaves nothing ----------
TIMEOUT_S=20
SEL="ClrTarget.dll --seconds 149"

# start_fake NAME MODE ARG: the fake in its own mount and PID namespace (its socket is named for
# its namespace pid), uid 1000, with ARG shaping its command line. Sets TARGET_PID and TARGET_LOG.
start_fake() {
    local name=$1 mode=$2 arg=$3
    TARGET_LOG="$WORK/$name.log"
    local inner="${NS_PROLOGUE}mount -t tmpfs -o mode=1777 tmpfs /tmp && exec env -i \
PATH=/usr/bin:/bin HOME=/tmp setpriv --reuid=1000 --regid=1000 --clear-groups python3 \
'$(ns_path "$FAKE")' $mode '$arg'"
    unshare --mount --propagation private --pid --fork --mount-proc sh -c "$inner" \
        >"$TARGET_LOG" 2>&1 &
    local upid=$!
    disown "$upid"
    TARGET_PIDS+=("$upid")
    TARGET_PID=""
    for _ in $(seq 1 100); do
        if [ -z "$TARGET_PID" ]; then
            TARGET_PID=$(tr -d ' ' <"/proc/$upid/task/$upid/children" 2>/dev/null)
            [ -n "$TARGET_PID" ] && TARGET_PIDS+=("$TARGET_PID")
        fi
        grep -q '^ready' "$TARGET_LOG" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "start_fake: $name ($mode) did not start: $(cat "$TARGET_LOG")" >&2
    return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# outcomes_of PID OUTCOME: result lines for that pid with that outcome.
outcomes_of() { grep "\"pid\":$1," "$WOUT" 2>/dev/null | grep -c "\"outcome\":\"$2\""; }

# A child is killed with SIGSYS below: no core file for it.
ulimit -c 0
WOUT=$WORK/hostage.out
WERR=$WORK/hostage.err
"$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --match-cmdline "$SEL" \
    --uid 1000 --timeout $TIMEOUT_S --interval 100 --ready-file "$WORK/hostage.ready" \
    --client-data out=/tmp/probe-hostage.json --events off -o json >"$WOUT" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
for _ in $(seq 100); do [ -e "$WORK/hostage.ready" ] && break; sleep 0.1; done

SILENT=()
for i in 1 2 3; do
    start_fake "silent-$i" silent "$SEL" && SILENT+=("$TARGET_PID")
done
# children [PID]: the watcher's (or PID's) child processes, one per attach in flight; its
# filesystem helper (named clrattach-fs: lib/target/fsworker.c) is not one.
children() {
    local p parent=${1:-$W}
    for p in /proc/[0-9]*; do
        [ "$(awk '/^PPid:/ {print $2}' "$p/status" 2>/dev/null)" = "$parent" ] &&
            [ "$(cat "$p/comm" 2>/dev/null)" != clrattach-fs ] && echo "${p#/proc/}"
    done
}
# The three silent attaches are in flight at once (a child each, hanging on ProcessInfo).
for _ in $(seq 100); do
    [ "$(children | wc -l)" -ge 3 ] && break
    sleep 0.1
done
n=$(children | wc -l)
[ ${#SILENT[@]} -eq 3 ] && [ "$n" -eq 3 ] && ok "watch-silent-runtimes-in-flight (3 at once)" ||
    fail "watch-silent-runtimes-in-flight" "${#SILENT[@]} fakes, $n attaches in flight: $(tail -3 "$WERR")"

t0=$(now_ms)
if start_target good --pidns --uid 1000 --seconds 149; then
    G=$TARGET_PID
    for _ in $(seq 300); do
        [ "$(outcomes_of "$G" attached)" -ge 1 ] && break
        sleep 0.05
    done
    ms=$(($(now_ms) - t0))
    if [ "$(outcomes_of "$G" attached)" -ge 1 ] && [ $ms -lt $((TIMEOUT_S * 1000 / 4)) ] &&
        probe_report "$G" /tmp/probe-hostage.json >/dev/null; then
        ok "watch-not-held-hostage (started and attached in $ms ms beside 3 silent runtimes, --timeout ${TIMEOUT_S}s)"
    else
        fail "watch-not-held-hostage" "after $ms ms (--timeout ${TIMEOUT_S}s): $(cat "$WOUT") $(tail -5 "$WERR")"
    fi
else
    fail "watch-not-held-hostage" "the .NET target did not start"
fi

# (c) while it runs: its finished children are reaped (no zombie), the silent ones in flight.
kids=$(children)
zombies=$(for c in $kids; do awk '/^State:/ {print $2}' "/proc/$c/status" 2>/dev/null; done | grep -c Z)
[ -n "$kids" ] && [ "$zombies" -eq 0 ] && ok "watch-children-reaped-while-running ($(echo $kids | wc -w) in flight)" ||
    fail "watch-children-reaped-while-running" "children [$kids], $zombies zombie(s)"

# A child that dies of a signal (SIGSYS is what the seccomp filter sends) is reported, once, as
# internal_error naming it: one silent runtime's attach is killed so from outside.
victim=$(echo $kids | awk '{print $1}')
vpid=""
if [ -n "$victim" ]; then
    kill -SYS "$victim"
    for _ in $(seq 100); do grep -q '"outcome":"internal_error"' "$WOUT" && break; sleep 0.02; done
    vpid=$(grep '"outcome":"internal_error"' "$WOUT" | sed -n 's/.*"pid":\([0-9]*\),.*/\1/p' | head -1)
fi
if [ -n "$vpid" ] && [ "$(outcomes_of "$vpid" internal_error)" = 1 ] &&
    grep '"outcome":"internal_error"' "$WOUT" | grep -q "died of signal $(kill -l SYS 2>/dev/null || echo 31)"; then
    ok "watch-child-killed-by-signal-reported (pid $vpid)"
else
    fail "watch-child-killed-by-signal-reported" "child $victim: $(grep -v '"attached"' "$WOUT" | tail -3)"
fi
kids=$(children)
inflight=$(echo $kids | wc -w)

# SIGTERM with the silent attaches still in flight: out within a second (< 2 s with slack).
t0=$(now_ms)
kill -TERM "$W"
for _ in $(seq 200); do kill -0 "$W" 2>/dev/null || break; sleep 0.01; done
stop_ms=$(($(now_ms) - t0))
if ! kill -0 "$W" 2>/dev/null && [ $stop_ms -lt 2000 ] && grep -q "watch: stopped (" "$WERR"; then
    ok "watch-sigterm-within-a-second ($stop_ms ms)"
else
    fail "watch-sigterm-within-a-second" "$stop_ms ms, still running: $(kill -0 "$W" 2>/dev/null && echo yes || echo no); $(tail -3 "$WERR")"
    kill -KILL "$W" 2>/dev/null
fi
# Each attach in flight at the stop is reported once as interrupted, and nothing else is.
once=0 twice=0
for p in "${SILENT[@]}"; do
    case $(outcomes_of "$p" interrupted) in 0) ;; 1) once=$((once + 1)) ;; *) twice=$((twice + 1)) ;; esac
done
total=$(grep -c '"outcome":"interrupted"' "$WOUT")
if [ "$inflight" -gt 0 ] && [ $once -eq "$inflight" ] && [ $twice -eq 0 ] && [ "$total" -eq "$inflight" ] &&
    grep -q "$inflight in flight interrupted" "$WERR"; then
    ok "watch-in-flight-reported-interrupted ($once, once each)"
else
    fail "watch-in-flight-reported-interrupted" "$once once, $twice more, $total in all, $inflight in flight: $(grep -v '"attached"' "$WOUT" | tail -4) $(tail -2 "$WERR")"
fi
left=""
for c in $kids; do [ -e "/proc/$c" ] && left="$left $c($(awk '/^State:/ {print $2}' "/proc/$c/status" 2>/dev/null))"; done
[ -z "$left" ] && [ -n "$kids" ] && ok "watch-no-child-left-after-stop" ||
    fail "watch-no-child-left-after-stop" "children [$kids], left:$left"

# ---- (d) an attach stuck past its own deadlines is killed at the watcher's ------------------
# A child that never ends (stopped here with SIGSTOP; a hung filesystem would do the same) is
# killed after twice --timeout plus 5 s, reaped, and reported as a timeout: the slot comes back.
W2OUT=$WORK/stuck.out
stuck=""
if start_fake stuck silent "ClrTarget.dll --seconds 157"; then
    # Started next to a runtime that never answers: the ready file still comes with the first
    # scan, which starts that attach but does not wait for it.
    t0=$(now_ms)
    "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" --uid 1000 \
        --match-cmdline "ClrTarget.dll --seconds 157" --timeout 3 --interval 100 --events off \
        --ready-file "$WORK/stuck.ready" -o json >"$W2OUT" 2>"$WORK/stuck.err" &
    W2=$!
    disown "$W2"
    TARGET_PIDS+=("$W2")
    for _ in $(seq 200); do [ -e "$WORK/stuck.ready" ] && break; sleep 0.02; done
    ms=$(($(now_ms) - t0))
    [ -e "$WORK/stuck.ready" ] && [ $ms -lt 2000 ] && ok "watch-ready-file-not-held-up ($ms ms)" ||
        fail "watch-ready-file-not-held-up" "$ms ms: $(tail -3 "$WORK/stuck.err")"
    for _ in $(seq 100); do stuck=$(children "$W2" | head -1); [ -n "$stuck" ] && break; sleep 0.05; done
fi
if [ -n "$stuck" ]; then
    kill -STOP "$stuck"
    t0=$(now_ms)
    for _ in $(seq 320); do grep -q "did not end within" "$W2OUT" && break; sleep 0.05; done
    ms=$(($(now_ms) - t0))
    if grep -q '"outcome":"protocol_error".*did not end within 11000 ms' "$W2OUT" &&
        [ ! -e "/proc/$stuck" ] && [ $ms -lt 12000 ]; then
        ok "watch-stuck-attach-killed-at-deadline (after $ms ms, reaped)"
    else
        fail "watch-stuck-attach-killed-at-deadline" "$ms ms, child $stuck $( [ -e "/proc/$stuck" ] && echo "still there" ): $(cat "$W2OUT") $(tail -3 "$WORK/stuck.err")"
    fi
else
    fail "watch-stuck-attach-killed-at-deadline" "no attach started: $(tail -3 "$WORK/stuck.err")"
fi
[ -n "${W2:-}" ] && kill -TERM "$W2" 2>/dev/null

finish e2e-hostile-watch
