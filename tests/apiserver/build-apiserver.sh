#!/usr/bin/env bash
# Builds the kube-apiserver that tests/apiserver/run.sh talks to, from Debian's `kubernetes`
# SOURCE package (the full upstream tree with vendor/, Debian's patches applied), with Debian's
# Go 1.19, into build/apiserver/kube-apiserver. A test dependency only: it is never shipped.
#
# Built once per machine: a stamp file names the exact source version and this recipe, so a
# rerun is instant and a new Debian version (or a changed recipe) rebuilds. The source tree lives
# in a temporary directory outside build/ (the top-level Makefile includes every *.d under
# build/, and vendor/ has such files), removed afterwards; Go's build cache is kept outside the
# repository (APISERVER_GOCACHE, default ~/.cache/clrattach-apiserver-go) so that a failed or
# repeated build does not start from nothing. From nothing on 2 cores: 8 minutes on a quiet
# machine (fetch, gen_openapi, go build), 12 when the cores are shared.
#
# Needs: golang-1.19-go, rsync and dpkg-dev (scripts/install-deps.sh), and deb-src entries,
# which it adds the way scripts/build-static.sh does when they are missing (root or sudo).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${APISERVER_OUT:-$ROOT/build/apiserver}
BIN=$OUT/kube-apiserver
STAMP=$OUT/kube-apiserver.stamp
LOG=$OUT/build.log
GO=${GO119:-/usr/lib/go-1.19/bin/go}
GOCACHE_DIR=${APISERVER_GOCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clrattach-apiserver-go}
RECIPE=2

say() { echo "build-apiserver: $*" >&2; }
die() { say "$*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The same deb-src entries as scripts/build-static.sh (same file name, same content), added only
# when apt knows no source package yet.
ensure_deb_src() {
    apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Package: kubernetes' && return 0
    local codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    say "adding deb-src entries for $codename"
    as_root tee /etc/apt/sources.list.d/clrattach-src.sources >/dev/null <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    as_root apt-get update -qq
}

[ -x "$GO" ] || die "$GO missing: apt-get install golang-1.19-go (scripts/install-deps.sh)"
command -v dpkg-source >/dev/null || die "dpkg-source missing: apt-get install dpkg-dev"
ensure_deb_src

newest=$(apt-cache showsrc kubernetes | awk '/^Version:/ { print $2 }' | sort -rV | head -n1)
[ -n "$newest" ] || die "no Debian source for kubernetes"
want="kubernetes $newest recipe $RECIPE go $("$GO" env GOVERSION)"
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    say "$BIN is current ($want)"
    exit 0
fi

mkdir -p "$OUT"
rm -f "$BIN" "$STAMP"
SRC=$(mktemp -d "${TMPDIR:-/tmp}/clrattach-apiserver-src.XXXXXX")
trap 'chmod -R u+w "$SRC" 2>/dev/null; rm -rf "$SRC"' EXIT

start=$(date +%s)
say "fetching kubernetes $newest (apt-get source)"
if ! (cd "$SRC" && apt-get source -qq "kubernetes=$newest") >"$LOG" 2>&1; then
    cat "$LOG" >&2
    die "apt-get source kubernetes=$newest failed"
fi
upstream=${newest#*:}
upstream=${upstream%-*}
tree=$SRC/kubernetes-$upstream
[ -d "$tree/vendor" ] || die "expected a vendored tree at $tree"
# Debian versions a repackaged older release as NEWER+reallyOLDER: the code is OLDER.
real=${upstream##*really}
major=${real%%.*}
minor=${real#*.}
minor=${minor%%.*}
# GOPATH mode (below): vendored packages are known by their path under vendor/.
pkg=k8s.io/kubernetes/vendor/k8s.io/component-base/version
ldflags="-s -w"
for key in "gitVersion=v$real" "gitMajor=$major" "gitMinor=$minor" "gitTreeState=clean" \
    "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
    ldflags="$ldflags -X $pkg.$key"
done

# The upstream tarball lacks one generated file kube-apiserver needs
# (pkg/generated/openapi/zz_generated.openapi.go, from openapi-gen); Debian's build makes it
# through the tree's own `make generated_files`. Only the openapi part is needed here (the
# other generated files are in the tarball): about 40 s.
mkdir -p "$GOCACHE_DIR"
export PATH="$(dirname "$GO"):$PATH"
say "generating the OpenAPI definitions (make gen_openapi)"
if ! (cd "$tree" && env -u GOTOOLCHAIN -u GOFLAGS GO111MODULE=off GOPROXY=off CGO_ENABLED=0 \
        GOCACHE="$GOCACHE_DIR" KUBE_VERBOSE=0 nice -n 10 make gen_openapi) >>"$LOG" 2>&1 ||
    [ ! -f "$tree/pkg/generated/openapi/zz_generated.openapi.go" ]; then
    tail -n 40 "$LOG" >&2
    die "make gen_openapi failed (full log: $LOG)"
fi

say "building kube-apiserver v$real with $("$GO" env GOVERSION) (8 to 12 minutes on 2 cores from an empty Go cache)"
# Kubernetes 1.20 builds in GOPATH mode, as its own hack/lib/init.sh and Debian's rules do
# (GO111MODULE=off; its go.mod does not satisfy a module-mode -mod=vendor build with Go 1.19):
# the tree is linked at $GOPATH/src/k8s.io/kubernetes and everything comes from vendor/
# (staging/ is reached through vendor/k8s.io symlinks), nothing from the network. GOPROXY=off
# and GOTOOLCHAIN unset keep it that way should a newer go be found. CGO is not needed
# (Debian's own build sets CGO_ENABLED=0 too).
mkdir -p "$SRC/gopath/src/k8s.io"
ln -s "$tree" "$SRC/gopath/src/k8s.io/kubernetes"
if ! (cd "$SRC/gopath/src/k8s.io/kubernetes" && env -u GOTOOLCHAIN -u GOFLAGS -u GOROOT \
        GO111MODULE=off GOPROXY=off CGO_ENABLED=0 \
        GOCACHE="$GOCACHE_DIR" GOPATH="$SRC/gopath" \
        nice -n 10 "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT/kube-apiserver.tmp" \
        k8s.io/kubernetes/cmd/kube-apiserver) >>"$LOG" 2>&1; then
    tail -n 40 "$LOG" >&2
    die "go build failed (full log: $LOG)"
fi
mv "$OUT/kube-apiserver.tmp" "$BIN"
echo "$want" >"$STAMP"
say "$BIN built in $(($(date +%s) - start)) s ($("$BIN" --version 2>/dev/null))"
