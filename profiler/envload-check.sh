#!/usr/bin/env bash
# Checks the env loader (libclrenvload.so) under one C library's dynamic linker, without a
# runtime: a host program dlopen()s it as the runtime would and asks for the sample probe's class
# factory through it. The loader must setenv() its settings file's variables once (threads racing
# on the first call; a value changed afterwards stays changed), forward the call unchanged (the
# probe's CLSID served, another one refused with the probe's own 0x80040111), and on a malformed
# settings file, a missing one, or a missing profiler answer an HRESULT with one stderr line.
#   usage: profiler/envload-check.sh LOADER_SO PROBE_SO [NAME]
# The two builds must be for the same C library; HOST_CC is its compiler (gcc, musl-gcc) and NAME
# prefixes the check names (glibc, musl). Prints ok/FAIL lines; exit 1 on any failure.
set -euo pipefail
loader=$(realpath "$1")
probe=$(realpath "$2")
name=${3:-glibc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

cat >"$work/host.c" <<'C'
/* Loads the loader and calls its DllGetClassObject from 4 threads at once, then again. Prints
 * "first 0x.. other 0x.. cf .. A=.. again 0x.. A=.. B=.."; exit 2 if dlopen fails. */
#include <pthread.h>
#include "check_host.h"
static gco_fn f;
static int32_t hrs[4];
static void *call(void *arg)
{
    void *cf = NULL;
    hrs[(intptr_t)arg] = f(&probe_clsid, &iid_classfactory, &cf);
    return NULL;
}
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "(unset)";
}
int main(int argc, char **argv)
{
    pthread_t t[4];
    void *cf = (void *)1;
    if (argc != 2 || !(f = host_load(argv[1])))
        return 1;
    for (intptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, call, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 1; i < 4; i++)
        if (hrs[i] != hrs[0])
            return 1;
    int32_t o = f(&other_clsid, &iid_classfactory, &cf);
    printf("first 0x%08x other 0x%08x cf %s A=%s", (unsigned)hrs[0], (unsigned)o,
           cf ? "set" : "null", env("ENVLOAD_CHECK_A"));
    setenv("ENVLOAD_CHECK_A", "changed", 1);
    int32_t again = f(&probe_clsid, &iid_classfactory, &cf);
    printf(" again 0x%08x A=%s B=%s\n", (unsigned)again, env("ENVLOAD_CHECK_A"),
           env("ENVLOAD_CHECK_B"));
    return 0;
}
C
${HOST_CC:-gcc} -I"$(dirname "$0")" -o "$work/host" "$work/host.c" -ldl -lpthread

# setup DIR CONF: the loader in DIR with CONF as its settings file ("-": none) and the probe in
# DIR/real/.
setup() {
    mkdir -p "$1/real"
    cp "$loader" "$1/libclrenvload.so"
    cp "$probe" "$1/real/libclrprobe.so"
    [ "$2" = - ] || printf '%b' "$2" >"$1/clrenvload.conf"
}

expect() { # check name, directory, expected stdout (glob), expected stderr (glob)
    local out err rc=0
    out=$(env -u ENVLOAD_CHECK_A -u ENVLOAD_CHECK_B "$work/host" "$2/libclrenvload.so" \
        2>"$work/err") || rc=$?
    err=$(cat "$work/err")
    # shellcheck disable=SC2053 # the expectations are globs
    if [ $rc -eq 0 ] && [[ $out == $3 ]] && [[ $err == $4 ]]; then
        echo "ok $name-envload-$1"
    else
        echo "FAIL $name-envload-$1: exit $rc, stdout: $out, stderr: $err"
        fails=$((fails + 1))
    fi
}

setup "$work/ok" 'clrenvload 1\nprofiler=real/libclrprobe.so\nENVLOAD_CHECK_A=one two=3\nENVLOAD_CHECK_B=\n'
expect forwards "$work/ok" \
    'first 0x00000000 other 0x80040111 cf null A=one two=3 again 0x00000000 A=changed B=' ''
setup "$work/abs" "clrenvload 1\nprofiler=$work/ok/real/libclrprobe.so\nENVLOAD_CHECK_A=abs\n"
expect absolute-path "$work/abs" \
    'first 0x00000000 other 0x80040111 cf null A=abs again 0x00000000 A=changed B=(unset)' ''
setup "$work/bad" 'clrenvload 1\nprofiler=real/libclrprobe.so\nENVLOAD_CHECK_A\n'
expect malformed "$work/bad" \
    'first 0x80004005 other 0x80004005 cf null A=(unset) again 0x80004005 A=changed B=(unset)' \
    "clrenvload: $work/bad/clrenvload.conf: line 3: not NAME=VALUE"
setup "$work/none" -
expect no-settings "$work/none" 'first 0x80004005 other 0x80004005 cf null A=(unset)*' \
    "clrenvload: $work/none/clrenvload.conf: No such file or directory"
setup "$work/gone" 'clrenvload 1\nprofiler=real/missing.so\nENVLOAD_CHECK_A=set\n'
expect missing-profiler "$work/gone" 'first 0x8007007e other 0x8007007e cf null A=set*' \
    "clrenvload: cannot load the profiler: *missing.so*"
setup "$work/self" 'clrenvload 1\nprofiler=libclrenvload.so\n'
expect names-itself "$work/self" 'first 0x80004005*' \
    "clrenvload: $work/self/libclrenvload.so: names the loader itself"

# The one export is the build's own check (only_dllgetclassobject in profiler/musl.mk).
[ "$fails" -eq 0 ]
