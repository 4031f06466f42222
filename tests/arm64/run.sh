#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# linux/arm64 on this x86_64 host, under qemu-user (binfmt_misc): the cross-built binaries, the
# cross-built unit tests, both arm64 sample profilers under both arm64 loaders, and attaches to a
# REAL arm64 CoreCLR (tests/target published self-contained for linux-arm64) running in its own
# mount and PID namespaces as another uid:
#   - the x86_64 clrattach (seccomp filter on, kill mode) given a bundle picks linux-arm64 by the
#     runtime's RID;
#   - the arm64 clrattach, dynamic and static, run by qemu-user with --seccomp off: qemu-user
#     implements neither seccomp() nor openat2() (ENOSYS), so on arm64 the filter and the openat2
#     path are proven only on arm64 hardware. What the emulator lacks is asked from inside it
#     (syscall_probe), and every check that needs it is printed "n/a NAME: why", never "ok".
# The probe's report inside the target proves each load.
#   usage: tests/arm64/run.sh ARM64_UNIT_TEST_BINARY...   (make test-arm64 builds and passes them)
# Prints "ok NAME" / "FAIL NAME: reason" and "arm64: N passed, M failed".
. "$(dirname "$0")/../e2e/lib.sh"
T0=$SECONDS
A64=$ROOT/$BUILD/arm64
A64_CLR=$A64/clrattach
A64_PROBE=$A64/libclrprobe.so
A64_MUSL_PROBE=$A64/musl/libclrprobe.so
A64_STATIC=${A64_STATIC:-$ROOT/build/static-arm64/clrattach}
A64_APP=$A64/target/ClrTarget
# Anything run under emulation: a wedged qemu must not hang the suite.
QT=${QT:-120}

if [ "$(id -u)" -ne 0 ]; then
    echo "FAIL arm64-prerequisites: needs root (binfmt_misc, namespaces, other uids)"
    exit 1
fi
for f in "$CLRATTACH" "$PROBE" "$A64_CLR" "$A64_PROBE" "$A64_MUSL_PROBE" "$A64_STATIC" "$A64_APP" \
    "$A64/tests/syscall_probe"; do
    [ -e "$f" ] || { echo "FAIL arm64-prerequisites: $f missing (make test-arm64)"; exit 1; }
done

# binfmt_misc: Debian's qemu-user-static registers qemu-aarch64 with the F flag (the interpreter
# is opened at registration, so it also runs inside other mount namespaces and chroots). In a VM
# or a container binfmt_misc may not be mounted yet, or the entry disabled.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/register" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null
fi
if ! grep -qx enabled "$binfmt/qemu-aarch64" 2>/dev/null; then
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1
fi
if grep -qx enabled "$binfmt/qemu-aarch64" 2>/dev/null &&
    grep -q '^flags:.*F' "$binfmt/qemu-aarch64"; then
    ok "arm64-binfmt ($(sed -n 's/^interpreter //p' "$binfmt/qemu-aarch64"))"
else
    fail arm64-binfmt "qemu-aarch64 not registered with the F flag (qemu-user-static, binfmt-support)"
    finish arm64
    exit 1
fi

# What this emulator lacks, asked from inside it.
lacking=$(timeout "$QT" "$A64/tests/syscall_probe") ||
    { fail arm64-syscall-probe "did not run under qemu-user"; finish arm64; exit 1; }
lacks() { printf '%s\n' "$lacking" | grep -qx "$1"; }
note() { echo "# $*"; }
note "the emulator lacks: $(printf '%s ' ${lacking:-nothing})"

# --- the builds -----------------------------------------------------------------------------
machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
bad=""
for f in "$A64_CLR" "$A64_PROBE" "$A64_MUSL_PROBE" "$A64_STATIC" "$A64/libclrattach.a"; do
    case $f in
    *.a) m=$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p' | sort -u) ;;
    *) m=$(machine "$f") ;;
    esac
    [ "$m" = AArch64 ] || bad="$bad $f:'$m'"
done
[ -z "$bad" ] && ok arm64-builds-are-aarch64 || fail arm64-builds-are-aarch64 "$bad"

if ! readelf -l "$A64_STATIC" | grep -q INTERP && ! readelf -d "$A64_STATIC" 2>/dev/null | grep -q NEEDED; then
    ok "arm64-static-is-static ($(stat -c %s "$A64_STATIC.stripped" 2>/dev/null) bytes stripped)"
else
    fail arm64-static-is-static "$(readelf -d "$A64_STATIC" | grep NEEDED)"
fi
for b in "$A64_STATIC" "$A64_CLR"; do
    v=$(timeout "$QT" "$b" --version 2>&1)
    case $v in
    *"$(cat "$ROOT/VERSION")"*) ok "arm64-version-$(basename "$(dirname "$b")") ($v)" ;;
    *) fail "arm64-version-$(basename "$(dirname "$b")")" "'$v'" ;;
    esac
done

# --- unit tests under emulation -------------------------------------------------------------
# Run from the repository root (fixtures are relative paths). CLRATTACH_TEST_EMULATOR makes a
# check that needs a syscall the emulator lacks print "n/a: ..." and leave out just that part
# (tests/unit/emulation.h: test_sandbox's filter loading, test_rootfs's openat2 path); the rest
# of every check runs, and any failing check is a FAIL.
export CLRATTACH_TEST_EMULATOR=qemu-user
for t in "$@"; do
    name=unit-arm64/$(basename "$t")
    if [ ! -x "$t" ]; then
        fail "$name" "$t not built"
        continue
    fi
    (cd "$ROOT" && timeout "$QT" "$t") >"$t.log" 2>&1
    rc=$?
    na=$(sed -n 's/^n\/a: //p' "$t.log")
    failed=$(sed -n 's/^\[  FAILED  \] \(test_[A-Za-z0-9_]*\)$/\1/p' "$t.log" | sort -u)
    if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
        parts=""
        [ -n "$na" ] && parts=", $(printf '%s\n' "$na" | wc -l) parts n/a"
        ok "$name ($(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$t.log") passed$parts)"
    else
        fail "$name" "exit $rc: $(printf '%s ' $failed)"
        grep -E 'ERROR|LINE|Failure' "$t.log" | head -10 | sed 's/^/    /'
    fi
    [ -n "$na" ] && printf '%s\n' "$na" | sed "s|^|n/a $name: |"
done
unset CLRATTACH_TEST_EMULATOR

# --- the arm64 profilers under the arm64 loaders --------------------------------------------
# The probes, then the env loaders forwarding to the probe of their own C library.
{
    HOST_CC=aarch64-linux-gnu-gcc HOST_MUSL_CC=aarch64-linux-musl-gcc CHECK_PREFIX=arm64-profiler- \
        timeout 300 "$ROOT/profiler/musl-check.sh" "$A64_PROBE" "$A64_MUSL_PROBE"
    HOST_CC=aarch64-linux-gnu-gcc timeout 300 "$ROOT/profiler/envload-check.sh" \
        "$A64/libclrenvload.so" "$A64_PROBE" arm64-glibc
    HOST_CC=aarch64-linux-musl-gcc timeout 300 "$ROOT/profiler/envload-check.sh" \
        "$A64/musl/libclrenvload.so" "$A64_MUSL_PROBE" arm64-musl
} >"$WORK/musl-check" 2>&1
while read -r line; do
    case $line in
    "ok "*) ok "${line#ok }" ;;
    "FAIL "*) n=${line#FAIL }; fail "${n%%:*}" "${n#*: }" ;;
    esac
done <"$WORK/musl-check"
grep -q '^ok ' "$WORK/musl-check" || fail arm64-profiler-check "$(tail -5 "$WORK/musl-check")"

# --- a real arm64 CoreCLR -------------------------------------------------------------------
# A bundle as the image ships one (/profilers/): every build, chosen by the runtime's RID.
B=$WORK/bundle
mkdir -p "$B/linux-x64" "$B/linux-arm64" "$B/linux-musl-arm64"
cp "$PROBE" "$B/linux-x64/libclrprobe.so"
cp "$A64_PROBE" "$B/linux-arm64/libclrprobe.so"
cp "$A64_MUSL_PROBE" "$B/linux-musl-arm64/libclrprobe.so"
chmod -R a+rX "$WORK"
export TARGET_EXEC=$A64_APP
sha_a64=$(sha256sum "$A64_PROBE" | cut -c1-64)

# attach_check NAME PID REPORT CLRATTACH [ARGS...]: attaches with the sample profiler and checks
# the JSON result and the probe's report inside the target.
attach_check() {
    local name=$1 pid=$2 report=$3 bin=$4
    shift 4
    OUT=$WORK/$name.out ERR=$WORK/$name.err
    timeout "$QT" "$bin" attach --pid "$pid" --clsid "$PROBE_CLSID" --client-data "out=$report" \
        -o json "$@" >"$OUT" 2>"$ERR"
    RC=$?
    local counters
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" outcome)" = attached ] &&
        [ "$(json_get "$OUT" target_rid)" = linux-arm64 ] &&
        [ "$(json_get "$OUT" sha256)" = "$sha_a64" ] &&
        counters=$(probe_report "$pid" "$report") && is_mapped "$pid" libclrprobe-; then
        ok "$name ($counters)"
        return 0
    fi
    fail "$name" "exit $RC: $(head -c 600 "$OUT") $(head -c 600 "$ERR")"
    return 1
}

if start_target arm64-app --pidns --uid 1000; then
    P=$TARGET_PID
    exe_machine=$(machine "/proc/$P/exe")
    # The kernel runs qemu, which runs the arm64 apphost: the runtime's own RID is what counts.
    if grep -q 'libcoreclr.so' "/proc/$P/maps" && [ "$(stat -c %u "/proc/$P")" = 1000 ]; then
        ok "arm64-target-runs (pid $P, uid 1000, $exe_machine qemu running an arm64 CoreCLR)"
    else
        fail arm64-target-runs "$(cat "$TARGET_LOG")"
    fi
    # qemu computes the start time in the socket's name from its own emulated /proc/self/stat,
    # a few ticks after the kernel's: ps may show such a socket "unkeyed" and says why.
    cat >"$WORK/ps.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = [x for x in d["processes"] if x.get("pid") == int(sys.argv[2])]
assert p and p[0]["runtime"]["rid"] == "linux-arm64" and p[0]["runtime"]["arch"] == "arm64", p
assert p[0]["state"] in ("ready", "unkeyed"), p
print(p[0]["state"], p[0].get("detail", ""))
PY
    clr ps -o json
    if [ $RC -eq 0 ] && state=$(python3 "$WORK/ps.py" "$OUT" "$P" 2>"$WORK/ps.err"); then
        ok "arm64-ps-lists-target ($state)"
    else
        fail arm64-ps-lists-target "exit $RC: $(tail -1 "$WORK/ps.err") $(cat "$ERR")"
    fi
    # The x86_64 build, filter on: the bundle's linux-arm64 build by the runtime's RID.
    if attach_check arm64-attach-from-x64-bundle "$P" /tmp/x64.json "$CLRATTACH" --profiler "$B"; then
        v=$(json_get "$OUT" variant) src=$(json_get "$OUT" rid_source)
        [ "$v" = linux-arm64 ] && [ "$src" = runtime ] && ok arm64-bundle-variant-by-runtime-rid ||
            fail arm64-bundle-variant-by-runtime-rid "variant '$v', rid_source '$src'"
    fi
    # A second profiler is refused by the runtime (one per process): the already_active path,
    # decoded the same way for an arm64 runtime.
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" -o json
    [ "$(json_get "$OUT" outcome)" = already_active ] && ok arm64-second-attach-already-active ||
        fail arm64-second-attach-already-active "exit $RC: $(cat "$OUT" "$ERR")"
fi

# Wrong builds for an arm64 target, refused before anything is sent.
if start_target arm64-wrong --pidns --uid 1000; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 2 ] && grep -q "built for x64/glibc but the target runs arm64/glibc" "$ERR"; then
        ok arm64-x64-build-refused
    else
        fail arm64-x64-build-refused "exit $RC: $(cat "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$A64_MUSL_PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 2 ] && grep -q "built for arm64/musl but the target runs arm64/glibc" "$ERR"; then
        ok arm64-musl-build-refused-for-glibc
    else
        fail arm64-musl-build-refused-for-glibc "exit $RC: $(cat "$ERR")"
    fi
    mkdir -p "$WORK/x64only/linux-x64"
    cp "$PROBE" "$WORK/x64only/linux-x64/"
    chmod -R a+rX "$WORK/x64only"
    clr attach --pid "$P" --profiler "$WORK/x64only" --clsid "$PROBE_CLSID"
    [ $RC -eq 2 ] && grep -q "no build for linux-arm64 (it has: linux-x64)" "$ERR" &&
        ok arm64-bundle-without-arm64-build || fail arm64-bundle-without-arm64-build "exit $RC: $(cat "$ERR")"
fi

# The arm64 binaries themselves, under qemu-user. Their default (the filter in kill mode) is
# what an arm64 node runs; here seccomp() is ENOSYS, which must stop them, not be ignored.
for variant in dynamic static; do
    bin=$A64_CLR
    [ $variant = static ] && bin=$A64_STATIC
    if start_target "arm64-$variant" --pidns --uid 1000; then
        P=$TARGET_PID
        if lacks seccomp; then
            OUT=$WORK/$variant-kill.out ERR=$WORK/$variant-kill.err
            timeout "$QT" "$bin" attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" \
                >"$OUT" 2>"$ERR"
            RC=$?
            if [ $RC -ne 0 ] && grep -qi seccomp "$ERR" && ! grep -q libclrprobe "/proc/$P/maps"; then
                ok "arm64-$variant-refuses-without-filter (exit $RC)"
            else
                fail "arm64-$variant-refuses-without-filter" "exit $RC: $(cat "$ERR")"
            fi
            echo "n/a arm64-$variant-seccomp-kill: seccomp() is ENOSYS under qemu-user (arm64 hardware only)"
            args=(--seccomp off)
        else
            args=()
        fi
        lacks openat2 && echo "n/a arm64-$variant-openat2: openat2() is ENOSYS under qemu-user; the checked walk delivers"
        attach_check "arm64-attach-$variant-arm64-clrattach" "$P" "/tmp/$variant.json" "$bin" \
            --profiler "$B" "${args[@]}" &&
            [ "$(json_get "$OUT" variant)" != linux-arm64 ] &&
            fail "arm64-$variant-variant" "variant $(json_get "$OUT" variant)"
    fi
done

note "wall time $((SECONDS - T0))s"
finish arm64
