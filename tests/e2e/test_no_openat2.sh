#!/usr/bin/env bash
# A kernel without openat2 (Linux < 5.6), or a sandbox that hides it: the whole attach-and-report
# path with openat2 answering ENOSYS. build/tests/no_openat2 (tests/tools/no_openat2.c) installs
# a seccomp filter that fails openat2 with ENOSYS and nothing else, then execs clrattach, which
# stacks its own filter (kill) on top. strace proves the fallback ran: openat2 was asked once,
# answered ENOSYS, and never opened anything; delivery created its file with openat.
. "$(dirname "$0")/lib.sh"
require_env

NO_OPENAT2="$ROOT/$BUILD/tests/no_openat2"
VP="$ROOT/$BUILD/vendorprof"
VP_CLSID='{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}'
for f in "$NO_OPENAT2" "$VP/libvendorprof.so"; do
    [ -e "$f" ] || { echo "FAIL no-openat2-prerequisites: $f missing (make $BUILD/tests/no_openat2 vendorprof)"; exit 1; }
done
command -v strace >/dev/null || { echo "FAIL no-openat2-prerequisites: strace missing (make deps)"; exit 1; }

# The harness alone: openat2 gets ENOSYS, everything else goes through.
if timeout -k 5 30 "$NO_OPENAT2" python3 -c '
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(437, -100, b"/", None, 0)
assert r == -1 and ctypes.get_errno() == errno.ENOSYS, (r, ctypes.get_errno())
os.close(os.open("/", os.O_RDONLY))
' 2>"$WORK/harness.err"; then
    ok "harness-openat2-enosys"
else
    fail "harness-openat2-enosys" "$(cat "$WORK/harness.err")"
fi

# noa2 [ENV=V...] -- ARGS...: clrattach ARGS under the harness and strace (openat and openat2
# traced), its default seccomp filter (kill) on; OUT, ERR, RC, TRACE.
N=0
noa2() {
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    N=$((N + 1))
    OUT=$WORK/noa2.$N.out ERR=$WORK/noa2.$N.err TRACE=$WORK/noa2.$N.trace
    timeout -k 5 120 env -i PATH=/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" "${envs[@]}" \
        strace -f -qq -e trace=openat,openat2 -o "$TRACE" "$NO_OPENAT2" "$CLRATTACH" "$@" \
        >"$OUT" 2>"$ERR"
    RC=$?
}

# The fallback ran: openat2 answered ENOSYS (or, after delivery, our own filter's EPERM) and
# never returned an fd; a killed process (SIGSYS from our own filter) fails the check too.
fallback_proven() {
    [ "$RC" -lt 128 ] && grep -q '^[0-9]* *openat2(.*= -1 ENOSYS' "$TRACE" &&
        ! grep -qE '^[0-9]* *openat2\(.*\) = [0-9]+' "$TRACE" && ! grep -q 'SIGSYS' "$TRACE"
}

# 1. ps finds the target (its own namespaces, another uid) and its socket through the walk.
if start_target noa2-app --pidns --uid 1000; then
    P=$TARGET_PID
    noa2 -- ps
    if [ $RC -eq 0 ] && grep -qE "^$P +1 +1000 +ready " "$OUT" && fallback_proven; then
        ok "ps"
    else
        fail "ps" "exit $RC: $(cat "$OUT" "$ERR"; grep openat2 "$TRACE" | head -3)"
    fi

    # 2. The sample probe, loaded and running: its report proves it.
    noa2 -- attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --client-data "out=/tmp/noa2.json" -o json
    LEARNED=$(json_get "$OUT" delivered_path)
    if [ $RC -eq 0 ] && [ -n "$LEARNED" ] && summary=$(probe_report "$P" /tmp/noa2.json) &&
        is_mapped "$P" "$LEARNED" && fallback_proven &&
        grep -qE '^[0-9]* *openat\(.*\.clrattach-.*O_CREAT\|O_EXCL.*= [0-9]+' "$TRACE" &&
        [ "$(stat -c %u "/proc/$P/root$LEARNED")" = 1000 ]; then
        ok "attach-probe ($summary)"
    else
        fail "attach-probe" "exit $RC: $(cat "$OUT" "$ERR"; grep -E 'openat2|O_CREAT' "$TRACE" | head -5)"
    fi
else
    fail "ps" "target did not start"
fi

# 3. A profiler directory: the tree is created and the entry library finds its helper and config.
# It holds a link (a versioned name, as vendors ship), read through rootfs.c's beneath walk.
mkdir "$WORK/vp" && cp -r "$VP/." "$WORK/vp/" && ln -s libvendorprof.so "$WORK/vp/libvendorprof.so.1"
if start_target noa2-dir --pidns --uid 1000; then
    P=$TARGET_PID
    noa2 -- attach --pid "$P" --profiler "$WORK/vp" --clsid "$VP_CLSID" --client-data "out=/tmp/vp.json" \
        --settle 300 --entry libvendorprof.so -o json
    DIR=$(json_get "$OUT" delivered_dir)
    REP=""
    for _ in $(seq 50); do
        [ -s "/proc/$P/root/tmp/vp.json" ] && REP=$(cat "/proc/$P/root/tmp/vp.json") && break
        sleep 0.1
    done
    if [ $RC -eq 0 ] && [ -n "$DIR" ] && [ "$(json_get "$OUT" delivered_path)" = "$DIR/libvendorprof.so" ] &&
        [ -f "/proc/$P/root$DIR/lib/libvendorhelper.so" ] &&
        [ -f "/proc/$P/root$DIR/libvendorprof.so.1" ] && [ ! -L "/proc/$P/root$DIR/libvendorprof.so.1" ] &&
        [ "$(stat -c '%a %u' "/proc/$P/root$DIR")" = "555 1000" ] &&
        python3 -c 'import json,sys; r=json.loads(sys.argv[1]); d=sys.argv[2]
assert r["self"] == d + "/libvendorprof.so", r
assert r["config"] == "vendorprof-config-v1" and r["helper"] == "vendorhelper 1.0", r' "$REP" "$DIR" &&
        fallback_proven; then
        ok "attach-directory (delivered as $DIR)"
    else
        fail "attach-directory" "exit $RC $(cat "$OUT" "$ERR") report: $REP"
    fi
else
    fail "attach-directory" "target did not start"
fi

# 4. A link planted under the content-addressed name (to a file of ours, then to one inside the
# target): refused as with openat2, same exit code and message, nothing written through it.
if [ -n "${LEARNED:-}" ]; then
    NAME=$(basename "$LEARNED")
    OURS="$WORK/ours-victim.txt"
    echo "helper's file" >"$OURS"
    chmod 666 "$OURS"
    before=$(stat -c '%s %Y %i' "$OURS"; sha256sum <"$OURS")
    if start_target noa2-planted --uid 1000 --pre "ln -s '$OURS' '/tmp/$NAME' && echo inner >/tmp/inner.txt && chown 1000 /tmp/inner.txt"; then
        P=$TARGET_PID
        for trap in ours inner; do
            [ $trap = inner ] && ln -sfn /tmp/inner.txt "/proc/$P/root/tmp/$NAME"
            # With openat2, for the reference answer.
            clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --target-dir /tmp --timeout 10
            want_rc=$RC want_msg=$(grep -m1 "$NAME" "$ERR")
            noa2 -- attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --target-dir /tmp --timeout 10
            got_msg=$(grep -m1 "$NAME" "$ERR")
            if [ $RC -eq 6 ] && [ "$want_rc" -eq 6 ] && [ "$got_msg" = "$want_msg" ] &&
                grep -qiE "$NAME.*(symbolic link|ELOOP)" "$ERR" && [ -L "/proc/$P/root/tmp/$NAME" ] &&
                fallback_proven && ! is_mapped "$P" "$NAME"; then
                ok "planted-link-$trap-refused (exit 6, same message as with openat2)"
            else
                fail "planted-link-$trap-refused" "exit $RC (openat2: $want_rc): '$got_msg' vs '$want_msg': $(cat "$ERR")"
            fi
        done
        after=$(stat -c '%s %Y %i' "$OURS"; sha256sum <"$OURS")
        [ "$before" = "$after" ] && [ "$(cat "/proc/$P/root/tmp/inner.txt")" = inner ] &&
            ok "planted-link-targets-untouched" || fail "planted-link-targets-untouched" "$OURS or inner.txt changed"
    else
        fail "planted-link" "target did not start"
    fi
else
    fail "planted-link" "no delivered name learned from attach-probe"
fi

# The target's TMPDIR is a link inside its own root (to the directory its socket is really in):
# followed inside that root by the walk as by openat2, so ps lists it and the attach goes through.
if start_target noa2-tmplink --uid 1000 --pre "mkdir -m 1777 /tmp/real && ln -s /tmp/real /tmp/link" \
    --env TMPDIR=/tmp/link; then
    P=$TARGET_PID
    noa2 -- ps
    if [ $RC -eq 0 ] && grep -qE "^$P +$P +1000 +ready " "$OUT" && fallback_proven; then
        ok "tmpdir-link-ps"
    else
        fail "tmpdir-link-ps" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    noa2 -- attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout 10
    if [ $RC -eq 0 ] && fallback_proven && is_mapped "$P" clrprobe; then
        ok "tmpdir-link-attach"
    else
        fail "tmpdir-link-attach" "exit $RC: $(cat "$ERR")"
    fi
else
    fail "tmpdir-link" "target did not start"
fi

# 5. Events over TLS to the test API server: token and CA on the command line, then, as an
# ephemeral container would, the app container's service account (a kubelet-like tree of links
# in ITS root, followed by the contained walk).
if start_apiserver noa2; then
    events() { ctl GET /_test/events >"$WORK/events.json" && python3 -c "$1" "$WORK/events.json"; }

    if start_target noa2-events --pidns --uid 1000; then
        P=$TARGET_PID
        ctl POST /_test/reset >/dev/null
        noa2 CLRATTACH_POD_NAME=orders-7d9c8b6f5-x2x7k CLRATTACH_POD_NAMESPACE=shop CLRATTACH_CONTAINER_NAME=app -- \
            attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --api-url "$URL" \
            --token-file "$WORK/token" --ca-file "$CA" --termination-log "$WORK/tlog" -o json
        if [ $RC -eq 0 ] && fallback_proven && grep -q "reported Event" "$ERR" && events '
import json, sys
ev = json.load(open(sys.argv[1]))
assert len(ev) == 1 and ev[0]["reason"] == "ProfilerAttached", ev
assert ev[0]["regarding"]["name"] == "orders-7d9c8b6f5-x2x7k", ev
' && [ "$(json_get "$WORK/tlog" outcome)" = attached ]; then
            ok "event-reported"
        else
            fail "event-reported" "exit $RC: $(cat "$ERR") $(cat "$WORK/events.json" 2>/dev/null)"
        fi
    else
        fail "event-reported" "target did not start"
    fi

    SA=/run/secrets/kubernetes.io/serviceaccount
    if start_target noa2-ephemeral --pidns --uid 1000 \
        --pre "mkdir -p /run/secrets && mount -t tmpfs tmpfs /run/secrets && mkdir -p $SA/..2026_11_23 && cp '$WORK/token' $SA/..2026_11_23/token && cp '$CA' $SA/..2026_11_23/ca.crt && echo shop >$SA/..2026_11_23/namespace && ln -s ..2026_11_23 $SA/..data && ln -s ..data/token $SA/token && ln -s ..data/ca.crt $SA/ca.crt && ln -s ..data/namespace $SA/namespace"; then
        P=$TARGET_PID
        ctl POST /_test/reset >/dev/null
        noa2 HOSTNAME=orders-eph KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$(cat "$WORK/port")" -- \
            attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
        # The walk itself went through the kubelet's links: ..data read, ..2026_11_23 opened.
        if [ $RC -eq 0 ] && fallback_proven &&
            grep -qE '^[0-9]* *openat\([0-9]+, "\.\.2026_11_23", O_RDONLY\|O_NOFOLLOW\|O_CLOEXEC\|O_PATH\) = [0-9]+' "$TRACE" && events '
import json, sys
ev = json.load(open(sys.argv[1]))
assert len(ev) == 1, ev
r = ev[0]["regarding"]
assert r["name"] == "orders-eph" and r["namespace"] == "shop", r
'; then
            ok "event-ephemeral-target-sa"
        else
            fail "event-ephemeral-target-sa" "exit $RC: $(cat "$ERR") $(cat "$WORK/events.json" 2>/dev/null)"
        fi
    else
        fail "event-ephemeral-target-sa" "target did not start"
    fi
else
    fail "events" "cannot make test certificates"
fi

finish e2e-no-openat2
