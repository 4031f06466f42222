#!/usr/bin/env bash
# Runs every end-to-end test script (tests/e2e/test_*.sh) against the real runtime.
set -u
cd "$(dirname "$0")/../.."
rc=0
for t in tests/e2e/test_*.sh; do
    echo "== $t"
    bash "$t" || rc=1
done
exit $rc
