#!/usr/bin/env bash
# Runs each cmocka unit-test binary given; prints a summary line. Exit 1 on any failure.
# Each binary runs under `timeout`: a check that blocks (a hostile peer that never answers, a
# FIFO opened by mistake) fails the suite instead of hanging it. UNIT_TIMEOUT overrides the
# limit (seconds per binary). Checks that need root skip when not run as root (tests/unit/root.h);
# their names are listed, so a run as another user says what it left out. Under CI=true any
# skipped check fails the suite.
set -u
limit=${UNIT_TIMEOUT:-600}
pass=0
failn=0
skipn=0
for t in "$@"; do
    if timeout -k 10 "$limit" "$t" >"$t.log" 2>&1; then
        echo "ok unit/$(basename "$t")"
        pass=$((pass + 1))
    else
        rc=$?
        echo "FAIL unit/$(basename "$t")"
        [ $rc -eq 124 ] && echo "    timed out after ${limit}s"
        sed 's/^/    /' "$t.log" | grep -E 'FAILED|ERROR|LINE|Assert' | head -20
        failn=$((failn + 1))
    fi
    skipped=$(grep -E '^\[  SKIPPED \] test' "$t.log" | sed 's/^\[  SKIPPED \] //' | sort -u)
    for s in $skipped; do
        echo "    skipped $(basename "$t"): $s"
        skipn=$((skipn + 1))
    done
done
echo "unit: $pass passed, $failn failed"
[ $skipn -eq 0 ] || echo "unit: $skipn checks skipped (they need root)"
# No check may skip under CI: a skip there is a failure, whatever made it skip.
if [ "${CI:-}" = true ] && [ $skipn -gt 0 ]; then
    echo "unit: FAIL: checks skipped under CI=true"
    exit 1
fi
[ $failn -eq 0 ]
