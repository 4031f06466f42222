#!/usr/bin/env bash
# Replays the seed corpus and the saved crash inputs through the plain (non-libFuzzer) build of
# each harness. Usage: fuzz/replay.sh REPLAY_DIR NAME...  Exit 1 if any input crashes or breaks
# a property. Needs no clang: the binaries come from `make fuzz-replay` with $(CC).
set -u
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
pass=0
failn=0
for t in "$@"; do
    inputs=()
    [ -d "$here/corpus/$t" ] && inputs+=("$here/corpus/$t")
    [ -d "$here/regressions/$t" ] && inputs+=("$here/regressions/$t")
    if [ ${#inputs[@]} -eq 0 ]; then
        echo "FAIL fuzz-replay/$t: no corpus"
        failn=$((failn + 1))
        continue
    fi
    if out=$("$dir/fuzz_$t" "${inputs[@]}" 2>&1); then
        echo "ok fuzz-replay/$t: ${out##*: }"
        pass=$((pass + 1))
    else
        echo "FAIL fuzz-replay/$t"
        printf '%s\n' "$out" | grep '^replay: ' | tail -1 | sed 's/^replay: /    input: /'
        printf '%s\n' "$out" | grep -E 'property failed|ERROR|SUMMARY|runtime error' | head -5 |
            sed 's/^/    /'
        failn=$((failn + 1))
    fi
done
echo "fuzz-replay: $pass passed, $failn failed"
[ $failn -eq 0 ]
