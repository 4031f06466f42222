#!/usr/bin/env bash
# Builds what tests/cluster/run.sh runs besides kube-apiserver and etcd: the kubelet (with its
# built-in dockershim), kube-controller-manager and kube-scheduler from the same Debian
# `kubernetes` source package, Go and Go build cache as tests/apiserver/build-apiserver.sh
# (whose kube_* functions it sources), and the pod sandbox's `pause` from that tree's
# build/pause/linux/pause.c, static. Into build/cluster/bin; a test dependency, never shipped.
#
# `-tags providerless` leaves the cloud providers out (nothing here has a cloud), as upstream's
# own providerless builds do. Built once per machine, like the apiserver: a stamp names the
# source version and this recipe. With the apiserver suite's Go cache warm: about 4 minutes on
# 2 cores (most of the kubelet's packages are already compiled for kube-apiserver).
set -euo pipefail

# shellcheck source=tests/apiserver/build-apiserver.sh
. "$(dirname "${BASH_SOURCE[0]}")/../apiserver/build-apiserver.sh"

OUT=${CLUSTER_OUT:-$KUBE_ROOT/build/cluster/bin}
STAMP=$OUT/stamp
LOG=$OUT/build.log
RECIPE=2
CMDS=(kubelet kube-controller-manager kube-scheduler)

kube_check_tools
command -v gcc >/dev/null || die "gcc missing (scripts/install-deps.sh)"
newest=$(kube_newest)
[ -n "$newest" ] || die "no Debian source for kubernetes"
want="kubernetes $newest recipe $RECIPE go $("$GO" env GOVERSION) ${CMDS[*]} pause"
current=1
for f in "${CMDS[@]}" pause; do [ -x "$OUT/$f" ] || current=0; done
if [ $current = 1 ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    say "$OUT is current ($want)"
    exit 0
fi

mkdir -p "$OUT"
rm -f "$STAMP"
start=$(date +%s)
kube_fetch "$newest" "$LOG"

say "building ${CMDS[*]} v$KUBE_REAL (about 4 minutes with the apiserver's Go cache)"
mkdir -p "$OUT/tmp"
pkgs=()
for c in "${CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
# One go command for the three: the packages they share are compiled once, on both cores.
kube_go "$LOG" build -trimpath -tags providerless -ldflags "$KUBE_LDFLAGS" -o "$OUT/tmp/" \
    "${pkgs[@]}"

# The sandbox's pause: the upstream Makefile's flags (static, the version it prints).
tag=$(sed -n 's/^TAG = //p' "$KUBE_TREE/build/pause/Makefile")
gcc -Os -Wall -Werror -static -DVERSION="v$tag-clrattach-test" -o "$OUT/tmp/pause" \
    "$KUBE_TREE/build/pause/linux/pause.c" >>"$LOG" 2>&1 || die "pause.c did not build ($LOG)"
for f in "${CMDS[@]}" pause; do mv "$OUT/tmp/$f" "$OUT/$f"; done
rmdir "$OUT/tmp"
echo "$tag" >"$OUT/pause.version"
echo "$want" >"$STAMP"
say "built in $(($(date +%s) - start)) s ($("$OUT/kubelet" --version 2>/dev/null))"
