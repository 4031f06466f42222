# shellcheck shell=bash
# What the component tests share: deploy/base with deploy/components/$1 rendered by
# `kubectl kustomize` into $K/out.yaml (K a fresh directory under $BUILD, removed at exit).
# Prints the ok or FAIL line of the render; returns 1 when it failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
render_component() {
    local name=$1
    command -v kubectl >/dev/null || { echo "FAIL $name-component: kubectl not on PATH"; return 1; }
    mkdir -p "$ROOT/$BUILD"
    K=$(mktemp -d "$ROOT/$BUILD/kustomize.XXXXXX")
    trap 'rm -rf "$K"' EXIT
    # kustomize takes relative paths only.
    local rel
    rel=$(python3 -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$ROOT/deploy" "$K")
    cat >"$K/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $rel/base
components:
- $rel/components/$name
YAML
    if ! kubectl kustomize "$K" >"$K/out.yaml" 2>"$K/err.txt"; then
        echo "FAIL $name-component-renders: $(cat "$K/err.txt")"
        return 1
    fi
    echo "ok $name-component-renders"
}
