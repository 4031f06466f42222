#!/usr/bin/env bash
# Builds the krew release of the kubectl plugin into OUTDIR (default build/krew): the archive
# kubectl-clrattach-vVERSION.tar.gz (the plugin alone, reproducible: fixed order, owner, mode and
# time, gzip without a name or time) and clrattach.yaml, deploy/krew/clrattach.yaml.in with the
# version, the archive's URI (KREW_BASE_URL/vVERSION/ARCHIVE) and its sha256 filled in.
# KREW_BASE_URL and KREW_HOMEPAGE name where a release is published; their defaults are
# placeholders to be set when publishing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/krew}
VERSION=$(tr -d ' \n' <"$ROOT/VERSION")
BASE=${KREW_BASE_URL:-https://example.com/clrattach/releases/download}
HOMEPAGE=${KREW_HOMEPAGE:-https://example.com/clrattach}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "build.sh: VERSION '$VERSION' is not semver" >&2; exit 1; }
ARCHIVE=kubectl-clrattach-v$VERSION.tar.gz
mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
install -m 0755 "$ROOT/deploy/kubectl-clrattach" "$STAGE/kubectl-clrattach"
tar -C "$STAGE" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=ustar \
    -cf - kubectl-clrattach | gzip -n -9 >"$OUT/$ARCHIVE.tmp"
mv "$OUT/$ARCHIVE.tmp" "$OUT/$ARCHIVE"
SHA=$(sha256sum "$OUT/$ARCHIVE" | cut -d' ' -f1)
sed -e "s|@VERSION@|$VERSION|g" -e "s|@URI@|$BASE/v$VERSION/$ARCHIVE|g" -e "s|@SHA256@|$SHA|g" \
    -e "s|@HOMEPAGE@|$HOMEPAGE|g" "$ROOT/deploy/krew/clrattach.yaml.in" >"$OUT/clrattach.yaml.tmp"
mv "$OUT/clrattach.yaml.tmp" "$OUT/clrattach.yaml"
echo "$OUT/clrattach.yaml ($ARCHIVE, sha256 $SHA)"
