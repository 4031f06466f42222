#!/usr/bin/env bash
# Installs the Debian packages that clrattach's build, tests, fuzzing and benchmarks need.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

pkgs=(
    build-essential pkg-config make git
    libcurl4-openssl-dev libjansson-dev libseccomp-dev libcmocka-dev
    clang llvm libclang-rt-dev musl-tools
    openssl curl python3 python3-yaml ca-certificates time
    gperf cmake dpkg-dev
    util-linux iproute2 procps psmisc file binutils
    valgrind strace cppcheck clang-format
    docker.io crun debootstrap
    # tests/apiserver: kube-apiserver built from Debian's `kubernetes` source package with its
    # Go (rsync is that package's build dependency), and etcd to store what it serves
    golang-1.19-go etcd-server rsync
)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#pkgs[@]} packages present"
else
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "install-deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v dotnet >/dev/null 2>&1; then
    echo "install-deps: the .NET SDK (dotnet) is missing: the end-to-end tests need a real" \
         "CoreCLR runtime; install the SDK (8.0 or newer) and run again" >&2
    exit 1
fi
