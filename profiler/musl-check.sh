#!/usr/bin/env bash
# Checks the two builds of the probe against both C libraries' loaders, the failure that
# docs/bundles.md describes: each build loads under its own libc and hands out its class factory,
# and fails to load under the other. Needs gcc and musl-gcc.
#   usage: profiler/musl-check.sh GLIBC_SO MUSL_SO
# For another architecture, HOST_CC and HOST_MUSL_CC name its compilers (aarch64-linux-gnu-gcc,
# aarch64-linux-musl-gcc) and CHECK_PREFIX its check names; the host programs then run under
# binfmt_misc (qemu-user), loaded by that architecture's own dynamic linkers.
set -euo pipefail
glibc_so=$(realpath "$1")
musl_so=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

cat >"$work/host.c" <<'C'
/* dlopen()s a probe and asks for its class factory, as the runtime does. Exit 0 when the CLSID
 * is served and a foreign one refused, 2 when dlopen fails, 1 otherwise. */
#include "check_host.h"
int main(int argc, char **argv)
{
    void *cf = NULL, *none = NULL;
    if (argc != 2)
        return 1;
    gco_fn f = host_load(argv[1]);
    if (!f)
        return 1;
    int32_t hr = f(&probe_clsid, &iid_classfactory, &cf);
    int32_t hr2 = f(&other_clsid, &iid_classfactory, &none);
    printf("ours 0x%08x, other 0x%08x\n", (unsigned)hr, (unsigned)hr2);
    return hr == 0 && cf && (uint32_t)hr2 == 0x80040111u && !none ? 0 : 1;
}
C
here=$(cd "$(dirname "$0")" && pwd)
${HOST_CC:-gcc} -I"$here" -o "$work/host-glibc" "$work/host.c" -ldl
${HOST_MUSL_CC:-musl-gcc} -I"$here" -o "$work/host-musl" "$work/host.c"
p=${CHECK_PREFIX:-}

expect() { # name, expected exit, host, so
    local rc=0 out
    out=$("$3" "$4" 2>&1) || rc=$?
    if [ "$rc" -eq "$2" ]; then
        echo "ok $1: $out"
    else
        echo "FAIL $1: exit $rc, want $2: $out"
        fails=$((fails + 1))
    fi
}
expect "${p}glibc-loads-glibc-build" 0 "$work/host-glibc" "$glibc_so"
expect "${p}musl-loads-musl-build" 0 "$work/host-musl" "$musl_so"
expect "${p}glibc-refuses-musl-build" 2 "$work/host-glibc" "$musl_so"
expect "${p}musl-refuses-glibc-build" 2 "$work/host-musl" "$glibc_so"

exports=$(nm -D --defined-only "$musl_so" | awk '{print $3}')
if [ "$exports" = DllGetClassObject ]; then
    echo "ok ${p}musl-build-exports"
else
    echo "FAIL ${p}musl-build-exports: $exports"
    fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
