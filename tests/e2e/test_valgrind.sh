#!/usr/bin/env bash
# The binary under valgrind: no memory error and no definite leak on a real attach, on ps, on an
# Event report over TLS, and over a watch soak with many short-lived processes (state for dead
# processes is dropped: the table ends with only the live ones).
# valgrind itself makes syscalls the seccomp filter forbids, so these runs alone use
# --seccomp=off; every other test runs the binary with the filter on.
. "$(dirname "$0")/lib.sh"
require_env
command -v valgrind >/dev/null || { echo "FAIL valgrind-missing: install valgrind (make deps)"; exit 1; }

# watch attaches in child processes (fork, no exec): they stay under valgrind, and each one's
# errors and leaks at its _exit are printed with its own pid (--child-silent-after-fork=no, the
# default, said here because the soak depends on it); every attach of the soak is in one.
VG=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --track-fds=no --child-silent-after-fork=no)
VG_CLRATTACH=$(vg_clrattach) || { echo "FAIL valgrind-build: the plain build for valgrind did not build"; exit 1; }

if start_target vg-app --pidns --uid 1000; then
    P=$TARGET_PID
    OUT="$WORK/vg.out" ERR="$WORK/vg.err"
    "${VG[@]}" "$VG_CLRATTACH" attach --seccomp=off --pid "$P" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --client-data out=/tmp/vg.json -o json >"$OUT" 2>"$ERR"
    RC=$?
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = attached ] && ! grep -q "==[0-9]*==" "$ERR"; then
        ok "valgrind-attach"
    else
        fail "valgrind-attach" "exit $RC: $(head -40 "$ERR")"
    fi
    "${VG[@]}" "$VG_CLRATTACH" attach --seccomp=off --pid "$P" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --dry-run-events --pod vg-pod >"$OUT" 2>"$ERR"
    RC=$?
    [ $RC -eq 3 ] && ! grep -q "==[0-9]*==" "$ERR" && ok "valgrind-already-active-dry-run" ||
        fail "valgrind-already-active-dry-run" "exit $RC: $(head -40 "$ERR")"
    "${VG[@]}" "$VG_CLRATTACH" ps --seccomp=off -o json >"$OUT" 2>"$ERR"
    RC=$?
    [ $RC -eq 0 ] && grep -q "\"pid\":$P," "$OUT" && ! grep -q "==[0-9]*==" "$ERR" &&
        ok "valgrind-ps" || fail "valgrind-ps" "exit $RC: $(head -40 "$ERR")"
fi

# Event reporting over TLS (libcurl + OpenSSL + jansson) under valgrind.
start_apiserver vg --pod shop/vg-pod
start_not_dotnet 300
OUT="$WORK/vg.out" ERR="$WORK/vg.err"
"${VG[@]}" "$VG_CLRATTACH" attach --seccomp=off --pid "$NOTNET" --profiler "$PROBE" \
    --clsid "$PROBE_CLSID" --api-url "https://127.0.0.1:$(cat "$WORK/port")" \
    --token-file "$WORK/token" --ca-file "$WORK/certs/ca.crt" --pod vg-pod --namespace shop \
    --events=required >"$OUT" 2>"$ERR"
RC=$?
[ $RC -eq 4 ] && grep -q "reported Event" "$ERR" && ! grep -q "==[0-9]*==" "$ERR" &&
    ok "valgrind-event-over-tls" || fail "valgrind-event-over-tls" "exit $RC: $(head -40 "$ERR")"

# Watch soak: many short-lived .NET apps and a churn of non-.NET processes.
WERR="$WORK/vgwatch.err"
"${VG[@]}" "$VG_CLRATTACH" watch --seccomp=off --profiler "$PROBE" --clsid "$PROBE_CLSID" \
    --match-cmdline "ClrTarget.dll --seconds 5" --interval 100 --events off --settle 0 -o json \
    >"$WORK/vgwatch.out" 2>"$WERR" &
W=$!
disown "$W"
TARGET_PIDS+=("$W")
n_apps=6
for i in $(seq $n_apps); do
    start_target "soak-$i" --pidns --seconds 5 >/dev/null 2>&1 &
done
# Non-.NET churn: 300 processes that live a moment each.
for i in $(seq 300); do sleep 0.01 & done
for _ in $(seq 150); do
    [ "$(grep -c '"outcome":"attached"' "$WORK/vgwatch.out")" -ge $n_apps ] && break
    sleep 0.2
done
attached=$(grep -c '"outcome":"attached"' "$WORK/vgwatch.out")
sleep 6 # every soak app has exited by now
live=$(ls /proc | grep -c '^[0-9]')
kill -TERM "$W"
for _ in $(seq 100); do kill -0 "$W" 2>/dev/null || break; sleep 0.2; done
tracked=$(sed -n 's/.*instances tracked: \{0,1\}\([0-9]*\).*/\1/p; s/.*failed, \([0-9]*\) instances tracked.*/\1/p' "$WERR" | tail -1)
# What it knows of idle processes is only the live ones (give or take those started while it
# stops): the 300 that came and went are gone.
known=$(sed -n 's/.*instances tracked, \([0-9]*\) processes known.*/\1/p' "$WERR" | tail -1)
if [ "$attached" -ge $n_apps ] && [ "${tracked:-99}" -eq 0 ] && [ -n "$known" ] &&
    [ "$known" -le $((live + 20)) ] && ! grep -q "==[0-9]*==" "$WERR"; then
    ok "valgrind-watch-soak ($attached attached, $tracked tracked and $known of $live live processes known at the end)"
else
    fail "valgrind-watch-soak" "attached=$attached tracked=$tracked known=$known live=$live $(grep -v '^clrattach: watch: pid' "$WERR" | head -30)"
fi

finish e2e-valgrind
