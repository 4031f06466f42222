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
# tests/cluster/build-cluster.sh sources this file for its kube_* functions (the same source,
# Go and build cache for the kubelet, controller-manager and scheduler); run, it builds
# kube-apiserver.
#
# Needs: golang-1.19-go, rsync and dpkg-dev (scripts/install-deps.sh), and deb-src entries,
# which it adds when they are missing (root or sudo): for the Debian repositories apt already
# installs packages from, so the source comes from the same mirror.
set -euo pipefail

KUBE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/apt-sources.sh
. "$KUBE_ROOT/scripts/apt-sources.sh"
GO=${GO119:-/usr/lib/go-1.19/bin/go}
GOCACHE_DIR=${APISERVER_GOCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clrattach-apiserver-go}

say() { echo "$(basename "$0" .sh): $*" >&2; }
die() { say "$*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The deb-src entries, added only when apt knows no source package yet, in the file
# scripts/build-static.sh uses: one stanza per Debian repository, suite and component apt
# already takes packages from (apt's own index targets, whatever the format of its sources).
ensure_deb_src() {
    apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Package: kubernetes' && return 0
    local entries
    entries=$(apt_deb_src_entries)
    [ -n "$entries" ] || die "apt knows no Debian repository (run apt-get update first)"
    say "adding deb-src entries for the Debian repositories apt uses"
    printf '%s\n' "$entries" | as_root tee /etc/apt/sources.list.d/clrattach-src.sources >/dev/null
    as_root apt-get update -qq
}

# kube_newest: the newest source version of `kubernetes` apt knows.
kube_newest() {
    apt-cache showsrc kubernetes | awk '/^Version:/ { print $2 }' | sort -rV | head -n1
}

# kube_fetch VERSION LOG: unpacks that source into a new temporary directory (removed on exit)
# and sets KUBE_TREE (the tree, also linked at $KUBE_GOPATH/src/k8s.io/kubernetes), KUBE_REAL
# (the upstream version the code is) and KUBE_LDFLAGS (what `kubectl version` and the servers
# report).
kube_fetch() {
    local version=$1 log=$2 upstream major minor pkg key
    KUBE_SRC=$(mktemp -d "${TMPDIR:-/tmp}/clrattach-kube-src.XXXXXX")
    trap 'chmod -R u+w "$KUBE_SRC" 2>/dev/null; rm -rf "$KUBE_SRC"' EXIT
    say "fetching kubernetes $version (apt-get source)"
    if ! (cd "$KUBE_SRC" && apt-get source -qq "kubernetes=$version") >"$log" 2>&1; then
        cat "$log" >&2
        die "apt-get source kubernetes=$version failed"
    fi
    upstream=${version#*:}
    upstream=${upstream%-*}
    KUBE_TREE=$KUBE_SRC/kubernetes-$upstream
    [ -d "$KUBE_TREE/vendor" ] || die "expected a vendored tree at $KUBE_TREE"
    # Debian versions a repackaged older release as NEWER+reallyOLDER: the code is OLDER.
    KUBE_REAL=${upstream##*really}
    major=${KUBE_REAL%%.*}
    minor=${KUBE_REAL#*.}
    minor=${minor%%.*}
    # GOPATH mode (below): vendored packages are known by their path under vendor/. Both
    # version packages, as upstream's hack/lib/version.sh sets them: `--version` reads
    # component-base's, the API server's /version client-go's.
    KUBE_LDFLAGS="-s -w"
    for pkg in k8s.io/kubernetes/vendor/k8s.io/component-base/version \
        k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
        for key in "gitVersion=v$KUBE_REAL" "gitMajor=$major" "gitMinor=$minor" \
            "gitTreeState=clean" "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
            KUBE_LDFLAGS="$KUBE_LDFLAGS -X $pkg.$key"
        done
    done
    KUBE_GOPATH=$KUBE_SRC/gopath
    mkdir -p "$KUBE_GOPATH/src/k8s.io" "$GOCACHE_DIR"
    ln -s "$KUBE_TREE" "$KUBE_GOPATH/src/k8s.io/kubernetes"
}

# kube_go LOG ARGS...: runs `go ARGS` in the fetched tree. Kubernetes 1.20 builds in GOPATH
# mode, as its own hack/lib/init.sh and Debian's rules do (GO111MODULE=off; its go.mod does not
# satisfy a module-mode -mod=vendor build with Go 1.19): everything comes from vendor/ (staging/
# is reached through vendor/k8s.io symlinks), nothing from the network. GOPROXY=off and
# GOTOOLCHAIN unset keep it that way should a newer go be found. CGO is not needed (Debian's own
# build sets CGO_ENABLED=0 too).
kube_go() {
    local log=$1
    shift
    if ! (cd "$KUBE_GOPATH/src/k8s.io/kubernetes" && env -u GOTOOLCHAIN -u GOFLAGS -u GOROOT \
            GO111MODULE=off GOPROXY=off CGO_ENABLED=0 \
            GOCACHE="$GOCACHE_DIR" GOPATH="$KUBE_GOPATH" nice -n 10 "$GO" "$@") >>"$log" 2>&1; then
        tail -n 40 "$log" >&2
        die "go $1 failed (full log: $log)"
    fi
}

kube_check_tools() {
    [ -x "$GO" ] || die "$GO missing: apt-get install golang-1.19-go (scripts/install-deps.sh)"
    command -v dpkg-source >/dev/null || die "dpkg-source missing: apt-get install dpkg-dev"
    ensure_deb_src
}

# Sourced: the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

OUT=${APISERVER_OUT:-$KUBE_ROOT/build/apiserver}
BIN=$OUT/kube-apiserver
STAMP=$OUT/kube-apiserver.stamp
LOG=$OUT/build.log
RECIPE=3

kube_check_tools
newest=$(kube_newest)
[ -n "$newest" ] || die "no Debian source for kubernetes"
want="kubernetes $newest recipe $RECIPE go $("$GO" env GOVERSION)"
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    say "$BIN is current ($want)"
    exit 0
fi

mkdir -p "$OUT"
rm -f "$BIN" "$STAMP"
start=$(date +%s)
kube_fetch "$newest" "$LOG"

# The upstream tarball lacks one generated file kube-apiserver needs
# (pkg/generated/openapi/zz_generated.openapi.go, from openapi-gen); Debian's build makes it
# through the tree's own `make generated_files`. Only the openapi part is needed here (the
# other generated files are in the tarball): about 40 s.
export PATH="$(dirname "$GO"):$PATH"
say "generating the OpenAPI definitions (make gen_openapi)"
if ! (cd "$KUBE_TREE" && env -u GOTOOLCHAIN -u GOFLAGS GO111MODULE=off GOPROXY=off CGO_ENABLED=0 \
        GOCACHE="$GOCACHE_DIR" KUBE_VERBOSE=0 nice -n 10 make gen_openapi) >>"$LOG" 2>&1 ||
    [ ! -f "$KUBE_TREE/pkg/generated/openapi/zz_generated.openapi.go" ]; then
    tail -n 40 "$LOG" >&2
    die "make gen_openapi failed (full log: $LOG)"
fi

say "building kube-apiserver v$KUBE_REAL with $("$GO" env GOVERSION) (8 to 12 minutes on 2 cores from an empty Go cache)"
kube_go "$LOG" build -trimpath -ldflags "$KUBE_LDFLAGS" -o "$OUT/kube-apiserver.tmp" \
    k8s.io/kubernetes/cmd/kube-apiserver
mv "$OUT/kube-apiserver.tmp" "$BIN"
echo "$want" >"$STAMP"
say "$BIN built in $(($(date +%s) - start)) s ($("$BIN" --version 2>/dev/null))"
