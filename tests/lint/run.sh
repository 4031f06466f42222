#!/usr/bin/env bash
# The layer rules of lib/ (scripts/layers.sh) hold for the tree, and a planted breach of each
# kind fails the check: a lower folder reaching up, an include without its folder, a file
# directly in lib/, a folder with no rule. The README's Layout table matches the rules and the
# tree (scripts/layout_readme.py), and a planted drift fails that check: a rule changed, a file
# the table does not name, a module the tree lacks. The shape of lib/ and cmd/ (scripts/shape.py)
# holds for the tree, a planted breach of each kind fails it and is named (a file over the limit,
# a function over the limit, an include cycle, also through an _internal header, a file that does
# not open with what it is for), and what only looks like a breach passes (long initialisers,
# braces in strings, comments and macros, a function exactly at the limit). Each breach is
# planted in a copy, never in the checkout. Prints ok/FAIL lines and "lint: N passed, M failed".
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
if out=$(timeout 60 scripts/shape.py "$ROOT" 2>&1); then ok shape-holds; else bad shape-holds "$out"; fi

# plant NAME EXPECTED-WORDS COMMAND...: a fresh copy of lib/, cmd/, the README and the rules, the
# command run in it, then the check ($check: layers.sh or layout_readme.py) must fail and name
# the breach.
check=layers.sh
copy_tree() {
    rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/scripts" && cp -a lib cmd README.md "$tmp/tree/" &&
        cp scripts/layers.sh scripts/layout_readme.py "$tmp/tree/scripts/"
}
plant() {
    local name=$1 want=$2
    shift 2
    copy_tree
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

check=shape.py
# The limits, from the one place that holds them.
. scripts/shape.conf
# What the check says of an unplanted copy: a planted breach must be named on a line of its own
# that is not already there, so that a breach the tree still has cannot pass for the planted one;
# and a plant that only looks like a breach must leave the answer exactly as it was.
copy_tree
baseline=$(timeout 60 scripts/shape.py "$tmp/tree" 2>&1)
shape_plant() {
    local name=$1 want=$2
    plant "$@"
    if grep -qF -- "$want" <<<"$baseline"; then
        bad "$name" "the unplanted tree already says '$want'"
    fi
}
shape_clean() {
    local name=$1
    shift
    copy_tree
    (cd "$tmp/tree" && "$@")
    local out
    out=$(timeout 60 scripts/shape.py "$tmp/tree" 2>&1)
    if [ "$out" = "$baseline" ]; then
        ok "$name"
    else
        bad "$name" "$(diff <(echo "$baseline") <(echo "$out"))"
    fi
}
# fn NAME N: a function NAME whose definition, from its first line to its closing brace, is N
# lines long.
fn() {
    printf 'int %s(void)\n{\n    int n = 0;\n' "$1"
    for _ in $(seq 6 "$2"); do echo '    n++;'; done
    printf '    return n;\n}\n'
}
purpose() { printf '/* SPDX-License-Identifier: Apache-2.0 */\n/* %s */\n' "$1"; }
{ echo 'int shape_long(void);' && fn shape_long $((max_function_lines + 1)); } >"$tmp/long.c"
{ echo 'int shape_fits(void);' && fn shape_fits "$max_function_lines"; } >"$tmp/fits.c"
seq "$max_file_lines" | sed 's|.*|/* filler */|' >"$tmp/filler.c"
# Not breaches: tables longer than a function may be (one a compound literal), a struct, braces in a macro, in strings,
# characters and comments, a comment in a parameter list, a macro used without a ';'; then a
# function at the limit, whose count they would spoil if any of them were taken for code.
{
    echo 'static const int shape_table[] = {'
    seq $((max_function_lines * 2)) | sed 's/$/,/'
    echo '};'
    echo 'static const int *shape_p = (const int[]){'
    seq $((max_function_lines * 2)) | sed 's/$/,/'
    cat <<'EOF'
};
struct shape_s {
    int (*cb)(void);
};
#define SHAPE_M(x)                                                                                 \
    do {                                                                                           \
        if (x) {                                                                                   \
    } while (0)
int shape_stray(int a, int b);
int shape_stray(int a,
                /* { the second */ int b)
{
    const char *s = "{{ \" {"; /* { { */
    char c = '{'; // {
    return s[0] + c + '\'' + a + b;
}
#define SHAPE_DECLARE(name) int name(void);
SHAPE_DECLARE(shape_after)

EOF
    fn shape_after "$max_function_lines"
} >"$tmp/stray.c"

shape_plant file-too-long "lib/base/util.c:$((max_file_lines + 1)): " \
    sh -c "cat $tmp/filler.c >>lib/base/util.c"
shape_plant cmd-file-too-long "cmd/clrattach/options.c:$((max_file_lines + 1)): " \
    sh -c "cat $tmp/filler.c >>cmd/clrattach/options.c"
shape_plant function-too-long "function shape_long is $((max_function_lines + 1)) lines" \
    sh -c "cat $tmp/long.c >>lib/base/util.c"
shape_clean function-at-limit-passes sh -c "cat $tmp/fits.c >>lib/base/util.c"
shape_clean stray-braces-pass sh -c "cat $tmp/stray.c >>lib/base/util.c"
shape_plant include-cycle 'include cycle among the modules base/opfile, base/render, base/sha256' \
    sh -c "$(declare -f plant_line)"'
    plant_line lib/base/sha256.c "#include \"base/render.h\""
    plant_line lib/base/render.c "#include \"base/opfile.h\""
    plant_line lib/base/opfile.c "#include \"base/sha256.h\""'
shape_plant include-cycle-internal 'include cycle among the modules target/creds, target/rootfs' \
    sh -c "$(declare -f purpose plant_line)"'
    { purpose "What creds.c and its tests share."; echo "#include \"target/rootfs.h\""; } \
        >lib/target/creds_internal.h
    plant_line lib/target/rootfs.c "#include \"target/creds_internal.h\""'
shape_plant no-purpose-comment 'lib/base/extra.c:2: does not open with a comment' \
    sh -c 'printf "/* SPDX-License-Identifier: Apache-2.0 */\n#include \"base/util.h\"\n" \
        >lib/base/extra.c'
shape_plant purpose-after-guard 'lib/base/extra.h:2: does not open with a comment' \
    sh -c 'printf "/* SPDX-License-Identifier: Apache-2.0 */\n#ifndef X_H\n#define X_H\n/* %s */\n#endif\n" \
        "What this header is for." >lib/base/extra.h'
shape_plant purpose-too-short 'cmd/clrattach/extra.c:2: does not open with a comment' \
    sh -c "$(declare -f purpose); purpose 'Helpers.' >cmd/clrattach/extra.c"
shape_plant purpose-code-after 'lib/base/extra.c:2: does not open with a comment' \
    sh -c "$(declare -f purpose)"'; purpose "What this file is for." | sed "2s|\$| int x;|" \
        >lib/base/extra.c'
shape_plant no-spdx 'lib/base/extra.c:1: line 1 is not the SPDX line' \
    sh -c 'printf "/* What this file is for. */\n/* What this file is for. */\n" >lib/base/extra.c'

echo "lint: $pass passed, $fail failed"
[ $fail -eq 0 ]
