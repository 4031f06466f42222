#!/usr/bin/env bash
# Static checks: the layer rules of lib/ (scripts/layers.sh), the README's Layout table against
# them and the tree (scripts/layout_readme.py), the shape of lib/ and cmd/ (scripts/shape.py:
# file and function lengths, include cycles, the comment each file opens with), calls banned by
# the house style (docs/style.md) in lib/ and cmd/, then cppcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
scripts/layers.sh || rc=1
scripts/layout_readme.py || rc=1
scripts/shape.py || rc=1
banned='\b(sprintf|vsprintf|strcpy|strcat|strtok|atoi|atol|sscanf|system|popen|gets)[[:space:]]*\('
if grep -RnE "$banned" lib cmd --include='*.c' --include='*.h' | grep -vE '^\S+:\s*(//|/?\*)'; then
    echo "lint: banned calls above (see docs/style.md)" >&2
    rc=1
fi
if command -v cppcheck >/dev/null; then
    cppcheck --quiet --error-exitcode=1 --enable=warning,portability --std=c11 \
        --inline-suppr -D_GNU_SOURCE -Ilib lib cmd profiler || rc=1
fi
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
