#!/usr/bin/env bash
# The layer rules of lib/ (README "Layout"), checked on every include: a file in lib/FOLDER may
# include headers of FOLDER itself and of the folders on its row, nothing else. A quoted include
# in lib/ must name its folder ("target/rootfs.h"), so that each include shows its layer; system
# headers (<...>) are not ours and are not checked. A file directly in lib/, or in a folder that
# has no row, is a breach too: it would stand outside every rule.
#
# Usage: scripts/layers.sh [ROOT]   (ROOT defaults to the checkout; tests/lint plants breaches in
# a copy). Prints each breach as FILE:LINE: message; exits 1 if there is any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# folder -> the folders it may use (besides itself). The order is the floors, lowest first.
declare -A may_use=(
    [base]=""
    [target]="base"
    [runtime]="base"
    [sandbox]="base"
    [profset]="base target"
    [deliver]="base target profset"
    [flow]="base target runtime sandbox profset deliver"
    [report]="base target runtime sandbox profset deliver flow"
)

rc=0
breach() {
    echo "$1: $2"
    rc=1
}

while IFS= read -r -d '' f; do
    rel=${f#lib/}
    case $rel in
    */*) folder=${rel%%/*} ;;
    *)
        breach "$f" "directly in lib/: every file belongs to a folder with a rule (README Layout)"
        continue
        ;;
    esac
    if [ -z "${may_use[$folder]+set}" ]; then
        breach "$f" "lib/$folder/ has no rule in scripts/layers.sh (add its row there and in the README)"
        continue
    fi
    allowed=" $folder ${may_use[$folder]} "
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]*)\" ]] || continue
        inc=${BASH_REMATCH[1]}
        if [[ $inc != */* || $inc == *..* || $inc == /* ]]; then
            breach "$f:$n" "#include \"$inc\": name the folder (\"FOLDER/$inc\"), no '..'"
            continue
        fi
        dep=${inc%%/*}
        if [ ! -f "lib/$inc" ]; then
            breach "$f:$n" "#include \"$inc\": no such header in lib/"
        elif [[ $allowed != *" $dep "* ]]; then
            breach "$f:$n" "#include \"$inc\": lib/$folder/ may use only${allowed// /, }(lib/$dep/ is not below it)"
        fi
    done <"$f"
done < <(find lib -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

[ $rc -eq 0 ] && echo "layers: every include in lib/ follows its folder's rule"
exit $rc
