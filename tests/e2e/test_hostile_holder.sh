#!/usr/bin/env bash
# already_active's search for the profiler holding the slot costs what the headers cost, whatever
# the app maps (issue 25, item 4). A real runtime with a profiler attached maps 64 libraries of
# 64 MiB each, nearly all hole (a small library, then nothing): the refusal comes within
# --timeout, with a small peak RSS, and names the holder. Where the search stops at its caps
# first, the refusal says the holder was not determined, and why, not a silent "none".
. "$(dirname "$0")/lib.sh"
require_env
[ -x /usr/bin/time ] || { echo "FAIL holder-prerequisites: /usr/bin/time missing"; exit 1; }

TIMEOUT_S=2
MAX_MS=$((TIMEOUT_S * 1000 + 1000))
# A reading of one 64 MiB library whole would alone pass this.
MAX_RSS_KB=$((40 * 1024))
SMALL_SO=$ROOT/tests/fixtures/elf/glibc-x64.so

# holder_target NAME PRE: a target mapping every file that PRE leaves in /tmp/libs, with the
# probe attached; sets P.
holder_target() {
    local name=$1 pre=$2
    P=""
    start_target "$name" --pre "mkdir /tmp/libs && $pre" --env CLRTARGET_MAP_DIR=/tmp/libs || return 1
    clr attach --pid "$TARGET_PID" --profiler "$PROBE" --clsid "$PROBE_CLSID" --settle 0
    if [ $RC -ne 0 ]; then
        fail "$name" "the first attach failed: exit $RC $(cat "$ERR")"
        return 1
    fi
    P=$TARGET_PID
}

# refused_again: the same probe once more, timed and measured (MS, RSS_KB), JSON in $OUT.
refused_again() {
    local t0 t1
    OUT="$WORK/out.$$.txt"
    ERR="$WORK/err.$$.txt"
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$WORK/rss.txt" "$CLRATTACH" attach --pid "$P" --profiler "$PROBE" \
        --clsid "$PROBE_CLSID" --settle 0 --timeout $TIMEOUT_S -o json >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    RSS_KB=$(tail -1 "$WORK/rss.txt")
}

# 1. 64 hollow libraries of 64 MiB: a few pages of each are read.
pad="for i in \$(seq 64); do cp '$SMALL_SO' /tmp/libs/libhollow\$i.so && truncate -s 64M /tmp/libs/libhollow\$i.so; done"
if holder_target holder-hollow "$pad"; then
    mapped=$(grep -c '/tmp/libs/libhollow' "/proc/$P/maps")
    refused_again
    holder=$(json_get "$OUT" holder)
    if [ "$mapped" -lt 64 ]; then
        fail "holder-hollow-libraries" "the target maps $mapped of the 64 libraries"
    elif [ $RC -ne 3 ]; then
        fail "holder-hollow-libraries" "exit $RC, want 3: $(cat "$ERR")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "holder-hollow-libraries" "took $MS ms with --timeout $TIMEOUT_S"
    elif [ "$RSS_KB" -ge $MAX_RSS_KB ]; then
        fail "holder-hollow-libraries" "peak RSS $RSS_KB KiB"
    elif [[ $holder != */libclrprobe-* ]]; then
        fail "holder-hollow-libraries" "holder '$holder': $(cat "$OUT" "$ERR")"
    else
        ok "holder-hollow-libraries (exit 3 in $MS ms, peak RSS $RSS_KB KiB, holder named)"
    fi
fi

# 2. Libraries whose headers lead the parser across a page each time: 64 DT_NEEDED names, each on
# a page of its own. One costs ELFFILE_ROUNDS_MAX reads (252 KiB) and is given up on; 40 of them
# pass the 8 MiB the whole search may read, before our probe is reached. The holder is then not
# determined, and the refusal says why.
python3 - "$WORK/needy.so" <<'PY'
import struct, sys
PAGE, N = 4096, 64
size = PAGE * (N + 2)
img = bytearray(size)
# ELF header (x86-64, ET_DYN), two program headers right after it.
img[0:16] = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
struct.pack_into("<HHIQQQIHHHHHH", img, 16, 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
# PT_LOAD: the whole file at vaddr 0; PT_DYNAMIC: the second page.
struct.pack_into("<IIQQQQQQ", img, 64, 1, 5, 0, 0, 0, size, size, PAGE)
dyn = []
for i in range(N):
    off = PAGE * (2 + i)
    img[off:off + 8] = b"libx.so\0"
    dyn.append((1, off))  # DT_NEEDED, a name on a page of its own
dyn += [(5, 0), (10, size), (0, 0)]  # DT_STRTAB at vaddr 0, DT_STRSZ, DT_NULL
struct.pack_into("<IIQQQQQQ", img, 120, 2, 6, PAGE, PAGE, PAGE, 16 * len(dyn), 16 * len(dyn), 8)
for k, (tag, val) in enumerate(dyn):
    struct.pack_into("<QQ", img, PAGE + 16 * k, tag, val)
open(sys.argv[1], "wb").write(img)
PY
needy="for i in \$(seq 40); do cp '$WORK/needy.so' /tmp/libs/libneedy\$i.so; done"
if holder_target holder-byte-cap "$needy"; then
    refused_again
    if [ $RC -ne 3 ]; then
        fail "holder-byte-cap" "exit $RC, want 3: $(cat "$ERR")"
    elif [ -n "$(json_get "$OUT" holder)" ]; then
        fail "holder-byte-cap" "a holder named past the cap: $(cat "$OUT")"
    elif ! grep -q "not determined: the search stopped after reading 8 MiB" "$ERR"; then
        fail "holder-byte-cap" "no word of the cap: $(cat "$ERR")"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "holder-byte-cap" "took $MS ms with --timeout $TIMEOUT_S"
    else
        ok "holder-byte-cap (not determined, said why, $MS ms)"
    fi
fi

finish test_hostile_holder
