#!/usr/bin/env bash
# Which profiler build: a bundle directory laid out by runtime identifier is resolved against the
# target's RID (from the runtime, or --rid, old spellings normalised); a single .so built for the
# wrong libc is refused before anything is sent. Only glibc can load here, so the musl choice is
# proven by what was delivered and by the runtime's refusal to load it.
. "$(dirname "$0")/lib.sh"
require_env
MUSL_PROBE="$ROOT/$BUILD/musl/libclrprobe.so"
[ -e "$MUSL_PROBE" ] || { echo "FAIL bundle-prerequisites: $MUSL_PROBE missing (make profiler-musl)"; exit 1; }

B=$WORK/bundle
mkdir -p "$B/$HOST_RID" "$B/linux-musl-$RID_ARCH" "$WORK/muslonly/linux-musl-$RID_ARCH"
cp "$PROBE" "$B/$HOST_RID/libclrprobe.so"
cp "$MUSL_PROBE" "$B/linux-musl-$RID_ARCH/libclrprobe.so"
cp "$MUSL_PROBE" "$WORK/muslonly/linux-musl-$RID_ARCH/libclrprobe.so"

if start_target bundle-glibc --pidns --uid 1000; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" --client-data out=/tmp/b.json -o json
    if [ $RC -eq 0 ] && [ "$(json_get "$OUT" variant)" = "$HOST_RID" ] &&
        [ "$(json_get "$OUT" rid_source)" = runtime ] && [ "$(json_get "$OUT" target_rid)" = "$HOST_RID" ] &&
        probe_report "$P" /tmp/b.json >/dev/null; then
        ok "bundle-picks-glibc-build"
    else
        fail "bundle-picks-glibc-build" "exit $RC: $(cat "$OUT") $(cat "$ERR")"
    fi
fi

# --rid that contradicts the runtime's own answer is refused; with --force-rid it forces the
# musl build (an old RID spelling, normalised): delivered, then refused by the glibc runtime's
# loader, which is what a wrong choice would look like.
if start_target bundle-forced-musl --pidns; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" --rid alpine.3.17-$RID_ARCH -o json
    if [ $RC -eq 2 ] && grep -q "contradicts the runtime's own answer: it runs $HOST_RID" "$ERR" &&
        grep -q -- "--force-rid" "$ERR" && [ "$(json_get "$OUT" outcome)" = usage_error ] &&
        ! ls "/proc/$P/root/tmp" | grep -q '^libclrprobe-'; then
        ok "bundle-rid-contradiction-refused"
    else
        fail "bundle-rid-contradiction-refused" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" --rid alpine.3.17-$RID_ARCH --force-rid \
        -o json
    sha_musl=$(sha256sum "$MUSL_PROBE" | cut -c1-64)
    if [ $RC -eq 7 ] && [ "$(json_get "$OUT" variant)" = "linux-musl-$RID_ARCH" ] &&
        [ "$(json_get "$OUT" target_rid)" = "linux-musl-$RID_ARCH" ] && [ "$(json_get "$OUT" rid_source)" = --rid ] &&
        [ "$(json_get "$OUT" sha256)" = "$sha_musl" ] && [ "$(json_get "$OUT" hresult)" = 0x8007007E ]; then
        ok "bundle-rid-override-normalised"
    else
        fail "bundle-rid-override-normalised" "exit $RC: $(cat "$OUT") $(cat "$ERR")"
    fi
    # With --env the env loader goes with the build, chosen for the target's libc: musl's here,
    # byte for byte the one clrattach carries (the glibc runtime then refuses it, as above).
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" --rid linux-musl-$RID_ARCH --force-rid \
        --force --env A=1 --keep -o json
    L=$(json_get "$OUT" env_loader)
    if [ $RC -eq 7 ] && [ -n "$L" ] && cmp -s "/proc/$P/root$L" "$ROOT/$BUILD/musl/libclrenvload.so" &&
        [ "$(json_get "$OUT" delivered_path)" = "${L%/*}/libclrprobe.so" ]; then
        ok "bundle-musl-env-loader-chosen"
    else
        fail "bundle-musl-env-loader-chosen" "exit $RC: $(cat "$OUT") $(cat "$ERR")"
    fi
fi

if start_target wrong-libc --pidns; then
    P=$TARGET_PID
    # A single musl .so for a glibc target: refused before anything is written or sent.
    clr attach --pid "$P" --profiler "$MUSL_PROBE" --clsid "$PROBE_CLSID"
    if [ $RC -eq 2 ] && grep -q "built for $RID_ARCH/musl but the target runs $RID_ARCH/glibc" "$ERR" &&
        ! ls "/proc/$P/root/tmp" | grep -q clrprobe; then
        ok "single-so-wrong-libc-refused"
    else
        fail "single-so-wrong-libc-refused" "exit $RC: $(cat "$ERR") $(ls "/proc/$P/root/tmp")"
    fi
    # A bundle without a build for the target's RID.
    clr attach --pid "$P" --profiler "$WORK/muslonly" --clsid "$PROBE_CLSID"
    if [ $RC -eq 2 ] && grep -q "no build for $HOST_RID (it has: linux-musl-$RID_ARCH)" "$ERR"; then
        ok "bundle-without-matching-build"
    else
        fail "bundle-without-matching-build" "exit $RC: $(cat "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$B" --clsid "$PROBE_CLSID" --rid windows-x64
    [ $RC -eq 2 ] && grep -q "not a Linux runtime identifier" "$ERR" && ok "bad-rid-refused" ||
        fail "bad-rid-refused" "exit $RC: $(cat "$ERR")"
fi

finish e2e-bundle
