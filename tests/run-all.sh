#!/usr/bin/env bash
# The whole suite, as CI runs it: unit tests, then every suite under tests/ that has a runner.
# Prints one closing line "tests: N passed, M failed" counting every individual check, and the
# suites skipped: CLRATTACH_SKIP_SUITES=containers,cluster (tests/suite.sh) skips those by name;
# a suite that cannot run is otherwise a failure.
set -u
cd "$(dirname "$0")/.."
. tests/suite.sh
export BUILD=${BUILD:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0

# skipped NAME: CLRATTACH_SKIP_SUITES names the suite (its SKIP line printed and logged).
skipped() {
    suite_skipped "$1" >>"$log" || return 1
    tail -1 "$log"
}

# run NAME CMD...: the suite NAME, unless it is skipped.
run() {
    local name=$1
    shift
    skipped "$name" && return
    "$@" 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
}

run unit tests/run-unit.sh "$@"
for suite in lint e2e k8s deploy containers; do
    [ -x "tests/$suite/run.sh" ] && run "$suite" "tests/$suite/run.sh"
done
# linux/arm64 under qemu-user: the cross-built unit tests (ARM64_UNIT_BINS, from make test) and
# a real arm64 CoreCLR.
# shellcheck disable=SC2086 # a list of paths
run arm64 timeout -k 30 1200 tests/arm64/run.sh ${ARM64_UNIT_BINS:-}
# The multi-arch image index that `make image` wrote (make test builds it first).
run image timeout -k 30 600 tests/arm64/test_image.sh
# Against a real kube-apiserver: the first run on a machine builds it (8 to 12 minutes on 2
# cores, then cached in build/apiserver); the checks themselves take about two minutes.
run apiserver timeout -k 30 3600 tests/apiserver/run.sh
# deploy/ in a real single-node cluster; its kubelet, controller-manager and scheduler build with
# the Go cache the apiserver's build just filled (about 4 minutes, then cached in build/cluster).
run cluster timeout -k 30 1800 tests/cluster/run.sh

# Fuzzing: every saved seed and crash replayed through the plain (and, with SAN=1, sanitized)
# build of each harness, then a short libFuzzer run of each target. Hours-long runs are
# `make fuzz FUZZ_SECONDS=...` (docs/fuzzing.md).
if [ -n "${FUZZ_TARGETS:-}" ]; then
    # shellcheck disable=SC2086 # a list of names
    run fuzz fuzz/replay.sh "$REPLAY_DIR" $FUZZ_TARGETS
    # shellcheck disable=SC2086
    run fuzz env FUZZ_SECONDS="${TEST_FUZZ_SECONDS:-3}" fuzz/run.sh $FUZZ_TARGETS
fi

# The benchmark scripts still run, on a tiny iteration count; the figures are not checked
# (docs/benchmarks.md holds the published run).
if [ -n "${BENCH_SMOKE:-}" ] && ! skipped bench; then
    if out=$(bench/run.sh --iterations 2 --ps-counts "10 100" --event-reports 2 \
        --watch-seconds 3 2>&1); then
        echo "ok bench-smoke: bench/run.sh ran on 2 iterations"
    else
        echo "FAIL bench-smoke: bench/run.sh failed"
        printf '%s\n' "$out" | tail -15 | sed 's/^/    /'
        rc=1
    fi
fi

passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^FAIL' "$log")
# Every suite that did not run, by name, whoever skipped it.
skipped=$(sed -n 's/^SKIP \([^:]*\):.*/\1/p' "$log" | sort -u | paste -sd, - | sed 's/,/, /g')
# The failed checks again, by name, just above the closing line: a log cut to its last lines
# still says which checks failed.
if [ "$failed" -gt 0 ]; then
    echo "failed checks:"
    grep '^FAIL' "$log" | head -20 | cut -c1-200 | sed 's/^/  /'
fi
echo "tests: $passed passed, $failed failed${skipped:+; suites skipped: $skipped}"
[ $rc -eq 0 ] && [ "$failed" -eq 0 ]
