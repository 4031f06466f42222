#!/usr/bin/env bash
# The deploy suite: manifest checks, the kubectl plugin against a fake kubectl, its krew
# manifest, the Dockerfile and the static binary in an empty root (real .NET target, real TLS),
# and what the static binary and its SBOM say it is made of. Never skips: a missing static binary
# is built first (scripts/build-static.sh is cached after the first run).
# Prints ok/FAIL lines and "deploy: N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
export BUILD
cd "$ROOT"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

run() { "$@" 2>&1 | tee -a "$LOG"; }

run python3 tests/deploy/check_manifests.py "$ROOT" "$ROOT/$BUILD/clrattach"
run tests/deploy/test_plugin.sh
# The krew release (make krew) against krew's manifest rules.
if deploy/krew/build.sh "$BUILD/krew" >"$LOG.krew" 2>&1; then
    run python3 tests/deploy/check_krew.py "$ROOT" "$ROOT/$BUILD/krew"
else
    echo "FAIL krew-build: $(tail -3 "$LOG.krew")" | tee -a "$LOG"
fi
rm -f "$LOG.krew"
run tests/deploy/test_listen_component.sh
run tests/deploy/test_otel_component.sh
run python3 tests/deploy/check_dockerfile.py "$ROOT"
if [ ! -x build/static/clrattach ] || [ ! -s build/static/clrattach.spdx.json ]; then
    scripts/build-static.sh >"$LOG.static" 2>&1 || { tail -20 "$LOG.static"; echo "FAIL static-build" | tee -a "$LOG"; }
    rm -f "$LOG.static"
fi
run tests/deploy/test_static.sh
run tests/deploy/test_provenance.sh

passed=$(grep -c '^ok ' "$LOG")
failed=$(grep -c '^FAIL ' "$LOG")
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
