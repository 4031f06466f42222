#!/usr/bin/env bash
# The whole suite, as CI runs it: unit tests, then every suite under tests/ that has a runner.
# Prints one closing line "tests: N passed, M failed" counting every individual check.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0

run() {
    "$@" 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
}

run tests/run-unit.sh "$@"
for suite in tests/e2e/run.sh tests/k8s/run.sh tests/deploy/run.sh; do
    [ -x "$suite" ] && run "$suite"
done

passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^FAIL' "$log")
echo "tests: $passed passed, $failed failed"
[ $rc -eq 0 ] && [ "$failed" -eq 0 ]
