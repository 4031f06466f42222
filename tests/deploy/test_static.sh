#!/usr/bin/env bash
# The static clrattach in an EMPTY root: a private mount namespace whose root is a tmpfs holding
# only the binary, the profiler, the CA file and the token, with /proc mounted. It must attach to
# a real .NET target in its own PID namespace and report the Event over TLS to the test API
# server, under its default seccomp filter (kill). This is what a FROM-scratch image and a
# `kubectl debug` container with nothing but /clrattach give it: no libc, no /etc, no /dev, no
# CA bundle, no shell.
#
# The glibc build's tools are reused from tests/e2e/lib.sh (target start-up, cleanup, probe
# checks); only the binary under test differs.
. "$(dirname "$0")/../e2e/lib.sh"
require_env

STATIC=${STATIC:-$ROOT/build/static/clrattach}
if [ ! -x "$STATIC" ]; then
    echo "FAIL static-prerequisites: $STATIC missing (run make static)"
    exit 1
fi

# The binary itself: statically linked, no interpreter, no NEEDED libraries.
if file "$STATIC" | grep -q 'statically linked' && ! readelf -l "$STATIC" | grep -q INTERP &&
    ! readelf -d "$STATIC" 2>/dev/null | grep -q NEEDED &&
    LC_ALL=C ldd "$STATIC" 2>&1 | grep -q 'not a dynamic executable'; then
    ok "static-is-static"
else
    fail "static-is-static" "$(file "$STATIC"; ldd "$STATIC" 2>&1)"
fi

K8S="$ROOT/tests/k8s"
start_apiserver static || exit 1

# STATIC_TRACE=1 runs each under strace (outside the root) into $WORK/strace-NAME.txt, with
# KEEP_WORK=1 to keep it: how to find a syscall the filter is missing. STATIC_WRAP=CMD runs it
# under CMD instead (a `timeout` that stops a watcher). STATIC_ENV="VAR=VALUE ..." adds to its
# environment (no spaces in a value).
# in_empty_root NAME ARGS...: runs /clrattach ARGS in the empty root. The shell that sets it up
# stays OUTSIDE the chroot (the root has no shell), so it can copy the termination log out
# before the namespace and its tmpfs disappear. Sets RC, OUT, ERR and LISTING (the root's files).
in_empty_root() {
    local name=$1
    shift
    local r="$WORK/root-$name"
    mkdir -p "$r"
    OUT="$WORK/$name.out" ERR="$WORK/$name.err" LISTING="$WORK/$name.ls"
    # "$@" reaches the inner shell as its positional parameters, unquoted nowhere.
    unshare --mount --propagation private sh -c '
        set -e
        r=$1 static=$2 probe=$3 ca=$4 token=$5 work=$6 url=$7 trace=$8 extra_env=$9
        shift 9
        mount -t tmpfs -o mode=0755 emptyroot "$r"
        cp "$static" "$r/clrattach"
        cp "$probe" "$r/libclrprobe.so"
        cp "$ca" "$r/ca.crt"
        cp "$token" "$r/token"
        mkdir "$r/proc"
        mount -t proc proc "$r/proc"
        (cd "$r" && find . -path ./proc -prune -print -o -print | sort) >"$work/ls"
        set +e
        env -i CLRATTACH_POD_NAME=orders-7d9c8b6f5-x2x7k CLRATTACH_POD_NAMESPACE=shop \
            CLRATTACH_CONTAINER_NAME=app $extra_env \
            $trace /usr/sbin/chroot "$r" /clrattach "$@"
        rc=$?
        [ -f "$r/tlog" ] && cp "$r/tlog" "$work/tlog"
        exit $rc
    ' sh "$r" "$STATIC" "$PROBE" "$CA" "$WORK/token" "$WORK" "$URL" \
        "${STATIC_WRAP:-${STATIC_TRACE:+strace -f -o $WORK/strace-$name.txt}}" "${STATIC_ENV:-}" \
        "$@" >"$OUT" 2>"$ERR"
    RC=$?
    mv "$WORK/ls" "$LISTING" 2>/dev/null
}

# The root really is empty: nothing but the four files (and the /proc mount point).
in_empty_root listing --version
printf '%s\n' . ./ca.crt ./clrattach ./libclrprobe.so ./proc ./token >"$WORK/want.ls"
if [ $RC -eq 0 ] && diff -u "$WORK/want.ls" "$LISTING" >/dev/null; then
    ok "static-root-is-empty"
else
    fail "static-root-is-empty" "exit $RC: $(cat "$ERR") $(diff -u "$WORK/want.ls" "$LISTING" 2>&1)"
fi

if start_target static-app --pidns --uid 1000; then
    P=$TARGET_PID

    # ps from the empty root finds the runtime through /proc alone.
    in_empty_root ps ps
    if [ $RC -eq 0 ] && grep -qw "$P" "$OUT"; then
        ok "static-ps"
    else
        fail "static-ps" "exit $RC: $(cat "$OUT" "$ERR")"
    fi

    ctl POST /_test/reset >/dev/null
    rm -f "$WORK/tlog"
    in_empty_root attach attach --pid "$P" --profiler /libclrprobe.so --clsid "$PROBE_CLSID" \
        --client-data out=/tmp/probe-static.json --api-url "$URL" --token-file /token \
        --ca-file /ca.crt --termination-log /tlog -o json ${STATIC_SECCOMP:+--seccomp "$STATIC_SECCOMP"}
    if [ $RC -eq 159 ] || [ $RC -eq $((128 + 31)) ]; then
        fail "static-attach" "killed by SIGSYS under the seccomp filter: see docs/deploy.md (static build) $(cat "$ERR")"
    elif [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = attached ]; then
        ok "static-attach"
    else
        fail "static-attach" "exit $RC: $(cat "$OUT" "$ERR")"
    fi

    # The delivered profiler is mapped in the target and its report shows it running.
    path=$(json_get "$OUT" delivered_path 2>/dev/null)
    if [ -n "$path" ] && is_mapped "$P" "$(basename "$path")" && probe_report "$P" /tmp/probe-static.json >/dev/null; then
        ok "static-profiler-runs"
    else
        fail "static-profiler-runs" "'${path:-no path}' not mapped in $P or no report: $(cat "$ERR")"
    fi

    # The Event went over TLS, verified against the CA file, with the token from the file.
    ctl GET /_test/events >"$WORK/events.json"
    if python3 - "$WORK/events.json" 2>"$WORK/events.err" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
assert len(ev) == 1, ev
e = ev[0]
assert e["reason"] == "ProfilerAttached" and e["type"] == "Normal", e
r = e["regarding"]
assert r["kind"] == "Pod" and r["name"] == "orders-7d9c8b6f5-x2x7k" and r["namespace"] == "shop", r
assert r["fieldPath"] == "spec.containers{app}", r
PY
    then
        ok "static-event-tls"
    else
        fail "static-event-tls" "$(tail -n1 "$WORK/events.err") $(cat "$ERR")"
    fi
    [ "$(json_get "$WORK/tlog" outcome 2>/dev/null)" = attached ] && ok "static-termination-log" ||
        fail "static-termination-log" "$(cat "$WORK/tlog" 2>&1)"

    # A wrong CA is refused: TLS verification is on in the static build's TLS library too.
    "$K8S/gen-certs.sh" "$WORK/certs2" >/dev/null 2>&1
    CA_SAVE=$CA
    CA=$WORK/certs2/other-ca.crt
    ctl() { curl -sS --fail --cacert "$CA_SAVE" -X "$1" "$URL$2" ${3:+--data-binary "$3"}; }
    ctl POST /_test/reset >/dev/null
    in_empty_root wrongca attach --pid "$P" --profiler /libclrprobe.so --clsid "$PROBE_CLSID" \
        --api-url "$URL" --token-file /token --ca-file /ca.crt -o json \
        ${STATIC_SECCOMP:+--seccomp "$STATIC_SECCOMP"}
    ctl GET /_test/requests >"$WORK/requests.json"
    if [ $RC -eq 3 ] && grep -q "could not report" "$ERR" &&
        python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' "$WORK/requests.json"; then
        ok "static-wrong-ca-refused"
    else
        fail "static-wrong-ca-refused" "exit $RC: $(cat "$ERR") $(cat "$WORK/requests.json")"
    fi
    CA=$CA_SAVE

    # The rest of the TLS guarantees, each against a server of its own.
    . "$(dirname "$0")/static_tls.sh"
fi

# watch: musl's fork (the fork syscall itself on x86_64) for the child of each attach, the child
# tightening its own filter, SIGTERM ending it: all under the kill filter. Its own target, so
# that no other suite's app matches.
if start_target static-watch-app --pidns --uid 1000 --seconds 151; then
    P=$TARGET_PID
    STATIC_WRAP="timeout --preserve-status -s TERM 10" in_empty_root watch watch \
        --profiler /libclrprobe.so --clsid "$PROBE_CLSID" --uid 1000 \
        --match-cmdline "ClrTarget.dll --seconds 151" --client-data out=/tmp/probe-static-watch.json \
        --events off -o json ${STATIC_SECCOMP:+--seccomp "$STATIC_SECCOMP"}
    if [ $RC -eq $((128 + 31)) ]; then
        fail "static-watch" "killed by SIGSYS under the seccomp filter: $(cat "$ERR")"
    elif [ $RC -eq 0 ] && grep -q "\"pid\":$P,.*\"outcome\":\"attached\"\|\"outcome\":\"attached\".*\"pid\":$P," "$OUT" &&
        grep -q "watch: stopped (1 attached, 0 failed" "$ERR" &&
        probe_report "$P" /tmp/probe-static-watch.json >/dev/null; then
        ok "static-watch"
    else
        fail "static-watch" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
fi

finish deploy-static
