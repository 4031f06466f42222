#!/usr/bin/env bash
# Nothing a target controls reaches a terminal or a log raw, and a TMPDIR clrattach refuses is
# the target's fault, found before anything is written (issue 11). A fake runtime
# (tests/tools/fake_runtime.py) in its own mount and PID namespace names itself, takes an argv
# and answers ProcessInfo with C1 controls (the raw byte 0x9B and U+009B, a CSI to terminals
# that take 8-bit controls), a bidi override (U+202E) and a zero-width space (U+200B); or sets a
# TMPDIR holding them, invalid UTF-8, or a '..' component. stdout, stderr and JSON of `attach`,
# `ps` and `watch` are scanned BYTE-WISE (tests/e2e/lib.sh's has_ctl-style [[:cntrl:]] in the C
# locale sees none of these). Every clrattach run is under `timeout`.
. "$(dirname "$0")/lib.sh"
require_env

TIMEOUT_S=2 # per exchange with the runtime
MAX_MS=6000
CLR_LIMIT=30 # seconds for one clrattach run before it counts as a hang


# snapshot PID: every entry under the target's /tmp, /var/tmp and /dev/shm (its view).
snapshot() {
    (cd "/proc/$1/root" && find tmp var/tmp dev/shm -printf '%p %y %s %U %T@\n' 2>&1 | sort)
}

# run_clr ARGS...: clrattach under timeout; stdout to $OUT, stderr to $ERR, exit code in $RC,
# wall time in $MS. A run is never allowed to hang the suite.
N=0
run_clr() {
    N=$((N + 1))
    OUT="$WORK/out.$N" ERR="$WORK/err.$N"
    local t0 t1
    t0=$(date +%s%N)
    timeout -k 5 $CLR_LIMIT "$CLRATTACH" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    [ -n "${VERBOSE:-}" ] && sed "s/^/    [exit $RC] /" "$ERR" "$OUT" | cat -v >&2
    return 0
}
attach() {
    local pid=$1
    shift
    run_clr attach --pid "$pid" --profiler "$PROBE" --clsid "$PROBE_CLSID" --timeout $TIMEOUT_S \
        --events off "$@"
}

# The byte-wise scan: a control byte other than newline, DEL, any byte that is not well-formed
# UTF-8 (a raw 0x80..0xFF C1 byte, overlong, surrogate, truncated), a C1 code point (C2 80..C2
# 9F), a bidi control (U+061C, U+200E/F, U+202A..E, U+2066..9), an invisible character (U+200B..D,
# U+2060..4, U+206A..F, U+FEFF) or a line/paragraph separator. Prints what and where.
cat >"$WORK/scan.py" <<'PY'
import sys
BIDI = {0x061C, 0x200E, 0x200F} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
INVISIBLE = set(range(0x200B, 0x200E)) | set(range(0x2060, 0x2065)) | set(range(0x206A, 0x2070)) | {0xFEFF}
bad = 0
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    for i, b in enumerate(data):
        if (b < 0x20 and b != 0x0A) or b == 0x7F:
            print("%s: control byte 0x%02x at %d: %r" % (path, b, i, data[max(0, i - 20):i + 20]))
            bad += 1
            break
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as x:
        print("%s: not UTF-8 at %d: %r" % (path, x.start, data[max(0, x.start - 20):x.start + 20]))
        bad += 1
        continue
    for i, ch in enumerate(text):
        cp = ord(ch)
        what = ("C1" if 0x80 <= cp <= 0x9F else "bidi" if cp in BIDI else
                "invisible" if cp in INVISIBLE else "separator" if cp in (0x2028, 0x2029) else None)
        if what:
            print("%s: %s U+%04X at char %d: %r" % (path, what, cp, i, text[max(0, i - 20):i + 20]))
            bad += 1
            break
sys.exit(1 if bad else 0)
PY
# clean NAME FILE...: ok when every file is clean, else FAIL with the scanner's finding.
clean() {
    local name=$1 why
    shift
    if why=$(python3 "$WORK/scan.py" "$@"); then
        return 0
    fi
    fail "$name" "raw target bytes in the output: $why"
    return 1
}

# ps_field FILE PID KEY: a field (dotted for nested) of pid PID in the `ps -o json` document.
ps_field() {
    python3 -c 'import json,sys
for d in json.load(open(sys.argv[1], encoding="utf-8", errors="replace"))["processes"]:
    if d.get("pid") == int(sys.argv[2]):
        v = d
        for k in sys.argv[3].split("."): v = v.get(k) if isinstance(v, dict) else None
        print("" if v is None else v)
        break' "$1" "$2" "$3"
}

# The hostile strings. comm: raw 0x9B, U+202E, U+009B, U+200B and a letter (10 bytes of the
# kernel's 15). argv: the same classes around a marker --match-cmdline can find.
C1RAW=$'\x9b'
C1UTF8=$'\xc2\x9b'
RLO=$'\xe2\x80\xae'
ZWSP=$'\xe2\x80\x8b'
COMM_HEX=9be280aec29be2808b41
COMM_SHOWN='\x9b\u{202e}\u{009b}\u{200b}A'
ARG="ev${C1RAW}il${C1UTF8}${RLO}gpj.exe${ZWSP}-clrrender-marker"
PI_EXTRA='\u009b\u202e\u200b\x1b[2J'

if start_fake hostile good --comm $COMM_HEX --arg "$ARG" --pi-extra "$PI_EXTRA"; then
    P=$TARGET_PID
    grep -q "$RLO" "/proc/$P/comm" || fail "hostile-setup" "the fake's comm was not set"

    attach "$P"
    if [ $RC -ne 0 ]; then
        fail "attach-text" "exit $RC, want 0: $(cat -v "$ERR")"
    elif clean "attach-text" "$OUT" "$ERR"; then
        grep -qF '\u{202e}' "$OUT" && ok "attach-text (runtime strings escaped visibly)" ||
            fail "attach-text" "the runtime's strings are not shown escaped: $(cat -v "$OUT")"
    fi

    attach "$P" -o json
    if [ $RC -ne 0 ]; then
        fail "attach-json" "exit $RC, want 0: $(cat -v "$ERR")"
    elif clean "attach-json" "$OUT" "$ERR"; then
        cl=$(json_get "$OUT" command_line) ver=$(json_get "$OUT" runtime.version)
        case "$cl|$ver" in
        *'\x9b'*'\u{009b}\u{202e}'*'\u{200b}'*'|'*'\u{009b}\u{202e}\u{200b}\x1b[2J'*)
            ok "attach-json (command line and runtime strings escaped visibly)" ;;
        *) fail "attach-json" "not escaped as documented: command_line '$cl' runtime '$ver'" ;;
        esac
    fi

    # The Event a dry run prints carries the target's strings in its note.
    attach "$P" -o json --dry-run-events --events auto --pod app-0 --namespace default
    [ $RC -eq 0 ] && clean "attach-event-note" "$OUT" "$ERR" && ok "attach-event-note" ||
        { [ $RC -ne 0 ] && fail "attach-event-note" "exit $RC: $(cat -v "$ERR")"; }

    run_clr ps
    if [ $RC -ne 0 ]; then
        fail "ps-text" "exit $RC: $(cat -v "$ERR")"
    elif clean "ps-text" "$OUT" "$ERR"; then
        grep -a "^$P " "$OUT" | grep -qF '\u{202e}' && ok "ps-text" ||
            fail "ps-text" "pid $P not listed escaped: $(cat -v "$OUT")"
    fi

    run_clr ps -o json
    if [ $RC -ne 0 ]; then
        fail "ps-json" "exit $RC: $(cat -v "$ERR")"
    elif clean "ps-json" "$OUT" "$ERR"; then
        comm=$(ps_field "$OUT" "$P" comm) ver=$(ps_field "$OUT" "$P" runtime.version)
        if [ "$comm" != "$COMM_SHOWN" ]; then
            fail "ps-json" "comm '$comm', want '$COMM_SHOWN'"
        elif [[ "$ver" != *'\u{202e}'* ]]; then
            fail "ps-json" "runtime version '$ver' not escaped visibly"
        else
            ok "ps-json (comm $comm)"
        fi
    fi

    # watch prints each result line with the command line; it runs until SIGTERM.
    N=$((N + 1))
    OUT="$WORK/out.$N" ERR="$WORK/err.$N"
    timeout --preserve-status -k 5 -s TERM 4 "$CLRATTACH" watch --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --match-cmdline clrrender-marker --interval 100 --events off --timeout $TIMEOUT_S \
        >"$OUT" 2>"$ERR"
    RC=$?
    if [ $RC -ne 0 ]; then
        fail "watch-text" "exit $RC, want 0 after SIGTERM: $(cat -v "$ERR")"
    elif clean "watch-text" "$OUT" "$ERR"; then
        grep -a "pid $P " "$ERR" | grep -q 'attached' && ok "watch-text" ||
            fail "watch-text" "no attach to $P reported: $(cat -v "$ERR")"
    fi
else
    fail "hostile" "fake runtime did not start"
fi

# A process that is not .NET: its comm is quoted in the "no diagnostic socket" error, and in the
# Event note of a dry run.
python3 -c 'import sys, time
open("/proc/self/comm", "wb").write(bytes.fromhex(sys.argv[1])); time.sleep(120)' \
    "$COMM_HEX" "$ARG" &
NOTNET=$!
disown "$NOTNET"
TARGET_PIDS+=("$NOTNET")
for _ in $(seq 50); do grep -q "$RLO" "/proc/$NOTNET/comm" 2>/dev/null && break; sleep 0.05; done
attach "$NOTNET"
if [ $RC -ne 4 ]; then
    fail "comm-error-text" "exit $RC, want 4 (not .NET): $(cat -v "$ERR")"
elif clean "comm-error-text" "$OUT" "$ERR"; then
    grep -qF "($COMM_SHOWN)" "$ERR" && ok "comm-error-text" ||
        fail "comm-error-text" "comm not shown escaped: $(cat -v "$ERR")"
fi
attach "$NOTNET" -o json --dry-run-events --events auto --pod app-0 --namespace default
[ $RC -eq 4 ] && clean "comm-error-json" "$OUT" "$ERR" && ok "comm-error-json" ||
    { [ $RC -ne 4 ] && fail "comm-error-json" "exit $RC, want 4: $(cat -v "$ERR")"; }

# TMPDIR cases: refused before anything is written (the target's filesystem is unchanged), as
# the target's fault (protocol_error, exit 9 - never usage_error, exit 2), with the rule named;
# `ps` lists the process as refused, with the same reason.
# tmpdir_case NAME TMPDIR PRE PATTERN
tmpdir_case() {
    local name=$1 dir=$2 pre=$3 pattern=$4
    if ! start_fake "$name" good --pre "$pre" --env "TMPDIR=$dir" --arg "$name-marker"; then
        fail "$name" "fake runtime did not start"
        return
    fi
    local p=$TARGET_PID before after
    before=$(snapshot "$p")
    attach "$p"
    after=$(snapshot "$p")
    if [ $RC -ne 9 ]; then
        fail "$name" "exit $RC, want 9 (protocol_error): $(cat -v "$ERR")"
    elif ! grep -qE "$pattern" "$ERR"; then
        fail "$name" "the message does not name the rule /$pattern/: $(cat -v "$ERR")"
    elif ! grep -q "next step: .*TMPDIR" "$ERR"; then
        fail "$name" "no next step about TMPDIR: $(cat -v "$ERR")"
    elif [ "$before" != "$after" ]; then
        fail "$name" "the target's filesystem changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ' | cat -v)"
    elif [ "$MS" -ge $MAX_MS ]; then
        fail "$name" "took $MS ms"
    elif clean "$name" "$OUT" "$ERR"; then
        ok "$name (exit 9, nothing written)"
    fi
    attach "$p" -o json
    local outcome
    outcome=$(json_get "$OUT" outcome 2>/dev/null)
    if [ $RC -ne 9 ] || [ "$outcome" != protocol_error ]; then
        fail "$name-json" "exit $RC, outcome '$outcome': $(cat -v "$OUT" "$ERR")"
    elif clean "$name-json" "$OUT" "$ERR"; then
        ok "$name-json"
    fi
    run_clr ps -o json
    local state detail
    state=$(ps_field "$OUT" "$p" state) detail=$(ps_field "$OUT" "$p" detail)
    if [ $RC -ne 0 ] || [ "$state" != refused ] || ! grep -qE "$pattern" <<<"$detail"; then
        fail "$name-ps" "exit $RC, state '$state', detail '$detail'"
    elif clean "$name-ps" "$OUT" "$ERR"; then
        run_clr ps
        grep -a "^$p " "$OUT" | grep -qE "refused .*$pattern" && clean "$name-ps" "$OUT" "$ERR" &&
            ok "$name-ps (listed as refused)" ||
            { grep -a "^$p " "$OUT" | grep -qE "refused .*$pattern" ||
                fail "$name-ps" "ps text: $(grep -a "^$p " "$OUT" | cat -v)"; }
    fi
    # watch cannot tell whether such a process runs .NET (its socket would be under the refused
    # TMPDIR): it must never deliver there, and what it prints stays clean.
    if [ -n "${WATCH_TOO:-}" ]; then
        N=$((N + 1))
        OUT="$WORK/out.$N" ERR="$WORK/err.$N"
        before=$(snapshot "$p")
        timeout --preserve-status -k 5 -s TERM 2 "$CLRATTACH" watch --profiler "$PROBE" \
            --clsid "$PROBE_CLSID" --match-cmdline "$name-marker" --interval 100 --events off \
            --timeout $TIMEOUT_S >"$OUT" 2>"$ERR"
        RC=$?
        after=$(snapshot "$p")
        if [ $RC -ne 0 ]; then
            fail "$name-watch" "exit $RC: $(cat -v "$ERR")"
        elif [ "$before" != "$after" ]; then
            fail "$name-watch" "the target's filesystem changed under watch"
        elif clean "$name-watch" "$OUT" "$ERR"; then
            ok "$name-watch (nothing delivered)"
        fi
    fi
    kill -KILL "$p" 2>/dev/null
}
tmpdir_case tmpdir-c1-raw "/tmp/c$C1RAW" "mkdir -m 1777 '/tmp/c$C1RAW'" \
    "TMPDIR '/tmp/c\\\\x9b' is not valid UTF-8 at byte 6"
tmpdir_case tmpdir-c1-utf8 "/tmp/c$C1UTF8" "mkdir -m 1777 '/tmp/c$C1UTF8'" \
    "TMPDIR '/tmp/c\\\\u\\{009b\\}' holds a C1 control character U\\+009B"
tmpdir_case tmpdir-bidi "/tmp/b${RLO}xe.so" "mkdir -m 1777 '/tmp/b${RLO}xe.so'" \
    "holds a bidi control U\\+202E at byte 6"
tmpdir_case tmpdir-zero-width "/tmp/z$ZWSP" "mkdir -m 1777 '/tmp/z$ZWSP'" \
    "holds an invisible character U\\+200B at byte 6"
tmpdir_case tmpdir-not-utf8 $'/tmp/n\xff\xfe' $'mkdir -m 1777 \'/tmp/n\xff\xfe\'' \
    "TMPDIR '/tmp/n\\\\xff\\\\xfe' is not valid UTF-8 at byte 6"
WATCH_TOO=1 tmpdir_case tmpdir-dotdot /tmp/a/../b "mkdir -m 1777 /tmp/a /tmp/b" \
    "TMPDIR '/tmp/a/\\.\\./b' has a '\\.\\.' component"

# The operator's own --target-dir is held to the same classes: a usage error (2) before any
# target is read, quoted rendered.
attach 1 --target-dir "/tmp/x${RLO}"
if [ $RC -ne 2 ] || ! grep -qF "'/tmp/x\u{202e}' holds a bidi control" "$ERR"; then
    fail "target-dir-usage" "exit $RC, want 2: $(cat -v "$ERR")"
elif clean "target-dir-usage" "$OUT" "$ERR"; then
    ok "target-dir-usage"
fi

finish e2e-hostile-render
