#!/usr/bin/env bash
# `ps` under many runtimes that never answer: 20 fake runtimes accept the ProcessInfo request
# and say nothing, beside one real runtime. ps asks them all at once under one deadline (its
# --timeout), so it returns within about one --timeout, not one per silent runtime; each fake is
# listed `no_answer` (never `ready`), the real one `ready` with its version. Seccomp on (kill).
. "$(dirname "$0")/lib.sh"
require_env

N=20
FAKES=()
for i in $(seq $N); do
    if start_fake "ps-silent-$i" silent; then
        FAKES+=("$TARGET_PID")
    else
        fail "ps-silent-start-$i" "the fake did not start"
    fi
done
REAL=""
start_target ps-silent-real --pidns && REAL=$TARGET_PID

if [ ${#FAKES[@]} -eq $N ] && [ -n "$REAL" ]; then
    # ---- JSON: the states, and the time -----------------------------------------------------
    t0=$(date +%s%N)
    clr ps --timeout 1 -o json
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $RC -eq 0 ] && [ $ms -lt 5000 ] && python3 - "$OUT" "$REAL" "${FAKES[@]}" <<'PY'
import json, sys
rows = {x["pid"]: x for x in json.load(open(sys.argv[1]))["processes"]}
real = rows[int(sys.argv[2])]
assert real["state"] == "ready", real
assert real["runtime"]["version"], real
for pid in sys.argv[3:]:
    r = rows[int(pid)]
    assert r["state"] == "no_answer", r
    assert "runtime" not in r, r
    assert "deadline" in r["detail"], r
PY
    then
        ok "ps-silent-json-one-deadline ($ms ms)"
    else
        fail "ps-silent-json-one-deadline" "rc $RC in $ms ms: $(cat "$OUT") $(cat "$ERR")"
    fi

    # ---- text: the same states in the listing ---------------------------------------------------
    t0=$(date +%s%N)
    clr ps --timeout 1
    ms=$((($(date +%s%N) - t0) / 1000000))
    bad=""
    for p in "${FAKES[@]}"; do
        awk -v p="$p" '$1 == p && $4 == "no_answer" { f = 1 } END { exit !f }' "$OUT" || bad="$bad $p"
    done
    awk -v p="$REAL" '$1 == p && $4 == "ready" && $5 != "-" { f = 1 } END { exit !f }' "$OUT" ||
        bad="$bad real:$REAL"
    if [ $RC -eq 0 ] && [ $ms -lt 5000 ] && [ -z "$bad" ]; then
        ok "ps-silent-text ($ms ms)"
    else
        fail "ps-silent-text" "rc $RC in $ms ms, wrong rows:$bad: $(cat "$OUT") $(cat "$ERR")"
    fi

    # ---- the default deadline (2 s) holds them all about 2 s together, no longer -------------
    t0=$(date +%s%N)
    clr ps -o json
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $RC -eq 0 ] && [ $ms -ge 1900 ] && [ $ms -lt 6000 ] &&
        python3 - "$OUT" "${FAKES[@]}" <<'PY'
import json, sys
rows = {x["pid"]: x for x in json.load(open(sys.argv[1]))["processes"]}
assert all(rows[int(p)]["state"] == "no_answer" for p in sys.argv[2:]), rows
PY
    then
        ok "ps-silent-default-deadline ($ms ms)"
    else
        fail "ps-silent-default-deadline" "rc $RC in $ms ms: $(cut -c1-400 "$OUT") $(cat "$ERR")"
    fi
fi

finish e2e-ps-silent
