#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The commit a build names (`clrattach version`, the SBOM): from git when this tree is a checkout
# of its own ("-dirty" with uncommitted changes); from the COMMIT file that `git archive` fills in
# (.gitattributes: export-subst) when it is an archive; else "unknown". A tree unpacked inside
# another repository's work tree is not that repository's checkout: its own COMMIT file counts.
root=$(cd "$(dirname "$0")/.." && pwd -P)
top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null) &&
    [ "$(cd "$top" && pwd -P)" = "$root" ] &&
    git -C "$root" describe --always --dirty --abbrev=40 --exclude='*' 2>/dev/null && exit 0
stamp=$(head -c 64 "$root/COMMIT" 2>/dev/null | tr -d '\n')
case $stamp in
*[!0-9a-f]* | '') echo unknown ;;
*) [ ${#stamp} -eq 40 ] && echo "$stamp" || echo unknown ;;
esac
