#!/usr/bin/env bash
# The suites do not depend on where the checkout is: a copy of it under /tmp (a common first
# place to clone, and the one place every test namespace mounts its own tmpfs over) runs the
# e2e case most exposed to that, test_hostile_watch.sh's pid reuse (its driver mounts a tmpfs
# over /tmp and writes its outputs under the checkout, reached through the bind mount at /srv).
# The copy is the working tree as it is (tracked and untracked files, not the ignored ones) with
# this build's binaries and test app, so it tests these sources, not the last commit.
. "$(dirname "$0")/lib.sh"
require_env
command -v git >/dev/null || { echo "FAIL checkout-anywhere-prerequisites: git missing"; exit 1; }

COPY=$(mktemp -d /tmp/clrattach-anywhere.XXXXXX)
# lib.sh's EXIT trap cleans $WORK; the copy goes with it.
trap 'rm -rf "$COPY"; cleanup_targets' EXIT
git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
    (cd "$ROOT" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$COPY" -xf -
mkdir -p "$COPY/$BUILD"
cp -a "$CLRATTACH" "$PROBE" "$COPY/$BUILD/"
cp -a "$(dirname "$TARGET_DLL")" "$COPY/$BUILD/target"
if [ ! -f "$COPY/tests/e2e/test_hostile_watch.sh" ]; then
    fail "checkout-under-tmp-copied" "no test_hostile_watch.sh in $COPY"
    finish e2e-checkout-anywhere
    exit
fi

HOSTILE_WATCH_CASES=pid-reuse BUILD=$BUILD timeout 300 bash "$COPY/tests/e2e/test_hostile_watch.sh" \
    >"$WORK/anywhere.out" 2>&1
rc=$?
# Both checks of case (a) ran there and passed, and nothing failed.
if [ $rc -eq 0 ] && grep -q "^ok watch-pid-reuse-not-attached" "$WORK/anywhere.out" &&
    grep -q "^ok watch-pid-reuse-nothing-attached" "$WORK/anywhere.out" &&
    ! grep -q "^FAIL" "$WORK/anywhere.out"; then
    ok "checkout-under-tmp-pid-reuse ($COPY)"
else
    fail "checkout-under-tmp-pid-reuse" "exit $rc from $COPY: $(tail -c 1500 "$WORK/anywhere.out")"
fi
finish e2e-checkout-anywhere
