#!/usr/bin/env bash
# The suites do not depend on where the checkout is, nor on how long its path is: a copy of it
# at a path of 120 characters under /tmp (a common first place to clone, and the one place every
# test namespace mounts its own tmpfs over) runs
#   (a) the e2e case most exposed to the place, test_hostile_watch.sh's pid reuse (its driver
#       mounts a tmpfs over /tmp and writes its outputs under the checkout, reached through the
#       bind mount at /srv);
#   (b) the suite that binds sockets, test_listen.sh: every socket a test binds is in a short
#       directory of its own, never at the checkout's depth (a Unix socket's path may have at
#       most 107 bytes);
#   (c) the container suite's private engine (tests/containers/lib.sh): it starts, its sockets
#       and containerd's away from the checkout, and one container runs in it.
# CLRATTACH_SKIP_SUITES naming containers skips (c).
# The copy is the working tree as it is (tracked and untracked files, not the ignored ones) with
# this build's binaries, test app and test profiler, so it tests these sources, not the last
# commit.
. "$(dirname "$0")/lib.sh"
require_env
require_vendorinert checkout-anywhere
command -v git >/dev/null || { echo "FAIL checkout-anywhere-prerequisites: git missing"; exit 1; }

BASE=$(mktemp -d /tmp/clrattach-anywhere.XXXXXX)
# As a clone's parent would be: the tests' other uids read the build through it.
chmod 0755 "$BASE"
# lib.sh's EXIT trap cleans $WORK; the copy goes with it (and whatever (c) left mounted in it).
trap 'remove_run_dir "$BASE"; cleanup_targets' EXIT
trap 'exit 143' TERM INT
COPY=$BASE/$(printf 'a-checkout-at-a-long-path-%0*d' $((120 - ${#BASE} - 27)) 0)
mkdir "$COPY"
[ ${#COPY} -eq 120 ] || { fail checkout-anywhere-path "${#COPY} characters: $COPY"; finish e2e-checkout-anywhere; exit; }
git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
    (cd "$ROOT" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$COPY" -xf -
mkdir -p "$COPY/$BUILD"
cp -a "$CLRATTACH" "$PROBE" "$VI" "$COPY/$BUILD/"
cp -a "$(dirname "$TARGET_DLL")" "$COPY/$BUILD/target"
if [ ! -f "$COPY/tests/e2e/test_hostile_watch.sh" ]; then
    fail "checkout-anywhere-copied" "no test_hostile_watch.sh in $COPY"
    finish e2e-checkout-anywhere
    exit
fi

# (a)
HOSTILE_WATCH_CASES=pid-reuse BUILD=$BUILD timeout 300 bash "$COPY/tests/e2e/test_hostile_watch.sh" \
    >"$WORK/anywhere.out" 2>&1
rc=$?
# Both checks of case (a) ran there and passed, and nothing failed.
if [ $rc -eq 0 ] && grep -q "^ok watch-pid-reuse-not-attached" "$WORK/anywhere.out" &&
    grep -q "^ok watch-pid-reuse-nothing-attached" "$WORK/anywhere.out" &&
    ! grep -q "^FAIL" "$WORK/anywhere.out"; then
    ok "checkout-long-path-pid-reuse (${#COPY} characters)"
else
    fail "checkout-long-path-pid-reuse" "exit $rc from $COPY: $(tail -c 1500 "$WORK/anywhere.out")"
fi

# (b)
BUILD=$BUILD timeout 600 bash "$COPY/tests/e2e/test_listen.sh" >"$WORK/listen.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "^ok listen-startup-env-loaded" "$WORK/listen.out" &&
    grep -q "^ok listen-watch-restart-served-again" "$WORK/listen.out" && ! grep -q "^FAIL" "$WORK/listen.out"; then
    ok "checkout-long-path-listen ($(grep -c '^ok ' "$WORK/listen.out") checks)"
else
    fail "checkout-long-path-listen" "exit $rc from $COPY: $(grep -A3 '^FAIL' "$WORK/listen.out" | head -c 1500)"
fi

# (c) The engine, from the copy: its state under the copy's build/containers, its sockets not.
# The container: a static program alone in an image imported from a tarball (no registry).
if suite_skipped containers >"$WORK/skip.msg"; then
    cat "$WORK/skip.msg"
else
    mkdir -p "$WORK/img"
    printf '%s\n' '#include <stdio.h>' 'int main(void) { puts("ran in the engine"); return 0; }' \
        >"$WORK/hello.c"
    if ! gcc -static -O2 -o "$WORK/img/hello" "$WORK/hello.c" 2>"$WORK/gcc.err"; then
        fail "checkout-long-path-engine" "gcc -static: $(cat "$WORK/gcc.err")"
    else
        timeout 300 bash -c '
            . "$1/tests/containers/lib.sh"
            trap stop_dockerd EXIT
            start_dockerd || exit 1
            echo "engine $DOCKER_HOST exec-root $ENGINE_RUN/exec"
            tar -C "$2" -c hello | dk import -c "ENTRYPOINT [\"/hello\"]" - clrattach-test/anywhere \
                >/dev/null || exit 1
            dk run --rm --network none clrattach-test/anywhere
            r=$?
            dk rmi clrattach-test/anywhere >/dev/null 2>&1
            exit $r' _ "$COPY" "$WORK/img" >"$WORK/engine.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && grep -qx "ran in the engine" "$WORK/engine.out" &&
            ! grep -q "engine unix://$BASE" "$WORK/engine.out"; then
            ok "checkout-long-path-engine ($(grep '^engine ' "$WORK/engine.out"))"
        else
            fail "checkout-long-path-engine" "exit $rc from $COPY: $(tail -c 1500 "$WORK/engine.out")
$(tail -5 "$COPY/build/containers/dockerd.log" 2>/dev/null)"
        fi
    fi
fi
finish e2e-checkout-anywhere
