#!/usr/bin/env bash
# The layer rules of lib/ (scripts/layers.sh) hold for the tree, and a planted breach of each
# kind fails the check: a lower folder reaching up, an include without its folder, a file
# directly in lib/, a folder with no rule. The README's Layout table matches the rules and the
# tree (scripts/layout_readme.py), and a planted drift fails that check: a rule changed, a file
# the table does not name, a module the tree lacks. Each breach is planted in a copy, never in
# the checkout. Prints ok/FAIL lines and "lint: N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { echo "ok lint/$1"; pass=$((pass + 1)); }
bad() { echo "FAIL lint/$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/    /'; fail=$((fail + 1)); }

if out=$(timeout 60 scripts/layers.sh "$ROOT" 2>&1); then ok layers-hold; else bad layers-hold "$out"; fi
if out=$(timeout 60 scripts/layout_readme.py "$ROOT" 2>&1); then
    ok readme-layout-holds
else
    bad readme-layout-holds "$out"
fi

# plant NAME EXPECTED-WORDS COMMAND...: a fresh copy of lib/, the README and the rules, the
# command run in it, then the check ($check: layers.sh or layout_readme.py) must fail and name
# the breach.
check=layers.sh
plant() {
    local name=$1 want=$2
    shift 2
    rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/scripts" && cp -a lib README.md "$tmp/tree/" &&
        cp scripts/layers.sh scripts/layout_readme.py "$tmp/tree/scripts/"
    (cd "$tmp/tree" && "$@")
    if out=$(timeout 60 "scripts/$check" "$tmp/tree" 2>&1); then
        bad "$name" "a planted breach passed the check"
    elif ! grep -qF -- "$want" <<<"$out"; then
        bad "$name" "the breach was not named ('$want' missing): $out"
    else
        ok "$name"
    fi
}
plant_line() { sed -i "0,/^#include/s||$2\n#include|" "$1"; }

plant reaching-up 'lib/base/util.c:' plant_line lib/base/util.c '#include "flow/attach.h"'
plant target-uses-deliver 'lib/deliver/ is not below it' \
    plant_line lib/target/rootfs.c '#include "deliver/deliver.h"'
plant profset-uses-runtime 'lib/runtime/ is not below it' \
    plant_line lib/profset/rid.c '#include "runtime/ipc.h"'
plant no-folder 'name the folder' plant_line lib/flow/ps.c '#include "util.h"'
plant dotdot 'name the folder' plant_line lib/flow/ps.c '#include "../base/util.h"'
plant missing-header 'no such header' plant_line lib/flow/ps.c '#include "base/nothing.h"'
plant loose-file 'directly in lib/' cp lib/base/util.h lib/loose.h
plant unruled-folder 'has no rule' sh -c 'mkdir lib/extra && cp lib/base/util.h lib/extra/'

check=layout_readme.py
plant readme-rule-drift 'lib/profset/ may use' sed -i 's/\[profset\]="base target"/[profset]="base"/' \
    scripts/layers.sh
plant readme-unnamed-file 'is in the tree but in no row' cp lib/base/util.c lib/base/extra.c
plant readme-missing-module 'does not exist' rm lib/runtime/hresult.c lib/runtime/hresult.h

echo "lint: $pass passed, $fail failed"
[ $fail -eq 0 ]
