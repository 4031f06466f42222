#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The multi-arch image (scripts/build-image.sh, `make image`): an OCI image index holding
# linux/amd64 and linux/arm64, read from the oci-archive as a registry client would
# (tests/arm64/image.py); each platform's /clrattach is a static binary of its own architecture
# whose --version runs (the arm64 one under qemu-user), and /profilers is one bundle with every
# sample profiler build (docs/bundles.md).
# Prints "ok NAME" / "FAIL NAME: reason" and "image: N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ARCHIVE=${IMAGE_ARCHIVE:-$ROOT/build/image/clrattach-$(cat "$ROOT/VERSION").oci.tar}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clrattach-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PASSED=0
FAILED=0
ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
finish() {
    echo "image: $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
}

[ -s "$ARCHIVE" ] || { fail image-archive "$ARCHIVE missing (make image)"; finish; }
while read -r line; do
    case $line in
    "ok "*) ok "${line#ok }" ;;
    "FAIL "*) n=${line#FAIL }; fail "${n%%:*}" "${n#*: }" ;;
    *) fail image-read "$line" ;;
    esac
done < <(timeout 300 python3 "$ROOT/tests/arm64/image.py" "$ARCHIVE" "$WORK" 2>&1)

machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
for arch in amd64 arm64; do
    r=$WORK/$arch
    [ -d "$r" ] || continue
    want=Advanced
    [ $arch = arm64 ] && want=AArch64
    bin=$r/clrattach
    if [[ "$(machine "$bin")" == "$want"* ]] && ! readelf -l "$bin" | grep -q INTERP; then
        ok "image-$arch-static-binary ($(machine "$bin"))"
    else
        fail "image-$arch-static-binary" "$(file "$bin")"
    fi
    # The arm64 one runs under qemu-user (binfmt_misc, tests/arm64/run.sh sets it up).
    v=$(timeout 60 "$bin" --version 2>&1)
    case $v in
    *"$(cat "$ROOT/VERSION")"*) ok "image-$arch-version ($v)" ;;
    *) fail "image-$arch-version" "'$v'" ;;
    esac
    bad=""
    for rid in linux-x64 linux-musl-x64 linux-arm64 linux-musl-arm64; do
        so=$r/profilers/$rid/libclrprobe.so
        case $rid in *arm64) m=AArch64 ;; *) m=Advanced ;; esac
        [[ "$(machine "$so")" == "$m"* ]] || bad="$bad $rid:'$(machine "$so")'"
    done
    [ -z "$bad" ] && ok "image-$arch-profiler-bundle" || fail "image-$arch-profiler-bundle" "$bad"
done
finish
