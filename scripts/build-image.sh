#!/usr/bin/env bash
# Builds the clrattach image for linux/amd64 AND linux/arm64 from the one Dockerfile with
# Debian's buildah, and writes them as one OCI image index:
#   build/image/clrattach-<VERSION>.oci.tar     (oci-archive: an index with both manifests)
# Push it with `skopeo copy --all oci-archive:build/image/clrattach-<VERSION>.oci.tar
# docker://registry.example.com/clrattach:<VERSION>`; a node pulls the manifest of its own
# platform. The builder stage runs natively on this (amd64) host for both platforms and
# cross-compiles (Dockerfile), so qemu is not needed to build, only to run the arm64 variant.
#
# No registry is contacted: the Dockerfile's FROM debian:bookworm is made here with debootstrap
# (--variant=minbase, cached under build/image) and kept in buildah's own storage under
# build/image/storage, never the host's /var/lib/containers. The builder stage reaches the
# Debian mirror (apt-get, apt-get source) through the host network. RUN steps use buildah's
# chroot isolation: no OCI runtime, so no cgroup setup (crun refuses a hybrid cgroup host).
# Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=apt-sources.sh
. "$ROOT/scripts/apt-sources.sh"
OUT=${IMAGE_OUT:-$ROOT/build/image}
VERSION=$(cat "$ROOT/VERSION")
# The commit as `clrattach version` names it (the OCI revision label and the SBOM say the same).
REVISION=$(git -C "$ROOT" describe --always --dirty --abbrev=40 --exclude='*' 2>/dev/null || echo unknown)
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
ARCHIVE=$OUT/clrattach-$VERSION.oci.tar
NAME=localhost/clrattach:$VERSION
mkdir -p "$OUT"

say() { echo "build-image: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (buildah's storage and RUN steps)"
command -v buildah >/dev/null || die "buildah missing: scripts/install-deps.sh"
command -v debootstrap >/dev/null || die "debootstrap missing: scripts/install-deps.sh"
bh() {
    buildah --root "$OUT/storage/root" --runroot "$OUT/storage/run" --storage-driver overlay "$@"
}

# The base image, from the mirror apt already uses.
mirror=$(apt_debian_mirror)
[ -n "$mirror" ] || die "apt names no Debian mirror for debootstrap: configure \
/etc/apt/sources.list.d/ and run apt-get update"
base_tar=$OUT/debian-bookworm-minbase.tar
if [ ! -s "$base_tar" ]; then
    say "debootstrap bookworm (minbase) from $mirror"
    rm -rf "$OUT/rootfs.tmp"
    timeout 900 debootstrap --variant=minbase bookworm "$OUT/rootfs.tmp" "$mirror" \
        >"$OUT/debootstrap.log" 2>&1 || die "debootstrap failed: $(tail -3 "$OUT/debootstrap.log")"
    rm -rf "$OUT/rootfs.tmp"/var/cache/apt/archives/*.deb "$OUT/rootfs.tmp"/var/lib/apt/lists/*
    tar -C "$OUT/rootfs.tmp" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
    rm -rf "$OUT/rootfs.tmp"
fi
if ! bh inspect --type image docker.io/library/debian:bookworm >/dev/null 2>&1; then
    say "importing debian:bookworm into buildah's storage"
    ctr=$(bh from --pull=never scratch)
    bh add "$ctr" "$base_tar" / >/dev/null
    bh config --cmd /bin/bash "$ctr"
    bh commit -q "$ctr" docker.io/library/debian:bookworm >/dev/null
    bh rm "$ctr" >/dev/null
fi

# The OpenTelemetry agent (/otel-agent): managed, one build for every platform, made here with the
# .NET SDK the builder stage does not have (.dockerignore lets build/otel-agent into the context).
say "make otel-agent"
make -C "$ROOT" --no-print-directory otel-agent >"$OUT/otel-agent.log" 2>&1 ||
    die "make otel-agent failed: $(tail -5 "$OUT/otel-agent.log")"

# One manifest list, one image per platform.
start=$(date +%s)
bh manifest rm "$NAME" >/dev/null 2>&1 || true
say "building $PLATFORMS"
if ! timeout 3600 buildah --root "$OUT/storage/root" --runroot "$OUT/storage/run" \
    --storage-driver overlay build --pull=never --network host --layers --isolation chroot \
    --platform "$PLATFORMS" --manifest "$NAME" \
    --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
    -f "$ROOT/Dockerfile" "$ROOT" >"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log" >&2
    die "buildah build failed (full log: $OUT/build.log)"
fi
rm -f "$ARCHIVE.tmp"
bh manifest push --all --format oci "$NAME" "oci-archive:$ARCHIVE.tmp:clrattach:$VERSION" \
    >>"$OUT/build.log" 2>&1 || die "manifest push failed (see $OUT/build.log)"
mv "$ARCHIVE.tmp" "$ARCHIVE"
say "$ARCHIVE: $(stat -c %s "$ARCHIVE") bytes, $PLATFORMS ($(($(date +%s) - start)) s)"
