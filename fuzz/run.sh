#!/usr/bin/env bash
# Runs each named libFuzzer target for FUZZ_SECONDS, starting from its seed corpus. New inputs go
# to a scratch corpus under $FUZZ_DIR (the committed seeds stay small and reviewed); a crash is
# kept as $FUZZ_DIR/crashes/<name>/crash-* and fails the run. Usage: fuzz/run.sh NAME...
set -u
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
here=$(cd "$(dirname "$0")" && pwd)
fail=0
for t in "$@"; do
    bin="$FUZZ_DIR/fuzz_$t"
    work="$FUZZ_DIR/corpus/$t"
    crashes="$FUZZ_DIR/crashes/$t"
    mkdir -p "$work" "$crashes"
    seeds=()
    [ -d "$here/corpus/$t" ] && seeds+=("$here/corpus/$t")
    # Saved regressions are inputs too: the fuzzer starts from them and must get past them.
    [ -d "$here/regressions/$t" ] && seeds+=("$here/regressions/$t")
    log="$FUZZ_DIR/$t.log"
    # -rss_limit_mb: the parsers have caps far below this; a rise means a cap was missed.
    if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=1024 \
        -artifact_prefix="$crashes/" -print_final_stats=1 "$work" "${seeds[@]}" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
        echo "ok fuzz/$t: ${execs:-?} runs in ${FUZZ_SECONDS}s, $cov"
    else
        echo "FAIL fuzz/$t (log: $log)"
        grep -E 'ERROR|SUMMARY|property failed|Test unit written' "$log" | head -8 | sed 's/^/    /'
        fail=1
    fi
done
[ $fail -eq 0 ]
