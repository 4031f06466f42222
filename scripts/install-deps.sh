#!/usr/bin/env bash
# Installs the Debian packages that clrattach's build, tests, fuzzing and benchmarks need.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

pkgs=(
    build-essential pkg-config make git
    libcurl4-openssl-dev libjansson-dev libseccomp-dev libcmocka-dev
    clang llvm libclang-rt-dev musl-tools
    openssl curl python3 python3-yaml ca-certificates time
    cmake dpkg-dev
    util-linux iproute2 procps psmisc file binutils
    valgrind strace cppcheck clang-format
    # tests/e2e/test_perfmap.sh: a real perf record and perf report of a .NET app whose perf map
    # clrattach enabled
    linux-perf
    docker.io crun debootstrap
    # tests/apiserver: kube-apiserver built from Debian's `kubernetes` source package with its
    # Go (rsync is that package's build dependency), and etcd to store what it serves;
    # tests/cluster: the kubelet, controller-manager and scheduler from the same source, its
    # dockershim driving docker.io's engine and runc (called by the suite's runc wrapper); the
    # second node shape's kubelet talks CRI to containerd (its CRI plugin, ctr, the runc v2 shim)
    golang-1.19-go etcd-server rsync runc containerd
    # linux/arm64 (make static ARCH=arm64, make test-arm64): the cross gcc and binutils, the
    # arm64 libraries clrattach and its unit tests link, musl's aarch64 wrapper and libc, qemu
    # to run it all, and the OCI image tools (the multi-arch image index)
    gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu
    libc6-dev:arm64 linux-libc-dev:arm64 libstdc++6:arm64 zlib1g:arm64 musl-dev:arm64
    libcurl4-openssl-dev:arm64 libjansson-dev:arm64 libseccomp-dev:arm64 libcmocka-dev:arm64
    qemu-user-static binfmt-support buildah skopeo
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# The :arm64 packages need the architecture enabled (apt then fetches its package lists too).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: enabling the arm64 architecture"
    $sudo dpkg --add-architecture arm64
    fresh_arch=1
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ] && [ -z "${fresh_arch:-}" ]; then
    echo "install-deps: all ${#pkgs[@]} packages present"
else
    echo "install-deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# qemu-user-static registers its binfmt_misc handlers (with the F flag) when binfmt_misc is
# mounted; in a VM or a container it may not be yet. tests/arm64/run.sh checks again.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    $sudo mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
fi
$sudo update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true

if ! command -v dotnet >/dev/null 2>&1; then
    echo "install-deps: the .NET SDK (dotnet) is missing: the end-to-end tests need a real" \
         "CoreCLR runtime; install the SDK (8.0 or newer) and run again" >&2
    exit 1
fi
