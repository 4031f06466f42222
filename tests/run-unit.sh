#!/usr/bin/env bash
# Runs each cmocka unit-test binary given; prints a summary line. Exit 1 on any failure.
set -u
pass=0
failn=0
for t in "$@"; do
    if "$t" >"$t.log" 2>&1; then
        echo "ok unit/$(basename "$t")"
        pass=$((pass + 1))
    else
        echo "FAIL unit/$(basename "$t")"
        sed 's/^/    /' "$t.log" | grep -E 'FAILED|ERROR|LINE|Assert' | head -20
        failn=$((failn + 1))
    fi
done
echo "unit: $pass passed, $failn failed"
[ $failn -eq 0 ]
