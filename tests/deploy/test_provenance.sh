#!/usr/bin/env bash
# What the binaries say they are made of. The static build's `clrattach version` (text and
# -o json) names the components scripts/build-static.sh recorded as linked
# (build/static/components), the stamps of the libraries it built, and the commit; its SBOM
# (build/static/clrattach.spdx.json, what the image carries) is a valid SPDX 2.3 document that
# names exactly those components (tests/deploy/check_sbom.py), and a tampered SBOM is caught.
# The dynamic build says it is one and names the libraries it runs with.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
STATIC_DIR=${STATIC_DIR:-$ROOT/build/static}
STATIC=$STATIC_DIR/clrattach
ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for f in "$STATIC" "$STATIC_DIR/components" "$STATIC_DIR/clrattach.spdx.json" "$ROOT/$BUILD/clrattach"; do
    [ -e "$f" ] || { fail provenance-prerequisites "$f missing (make all static)"; exit 1; }
done

"$STATIC" version -o json >"$WORK/version.json" 2>"$WORK/err" || fail static-version-json "$(cat "$WORK/err")"
"$STATIC" version >"$WORK/version.txt" 2>"$WORK/err" || fail static-version-text "$(cat "$WORK/err")"

# The JSON names clrattach's version, a commit, and exactly the components file's lines.
if msg=$(python3 - "$WORK/version.json" "$STATIC_DIR/components" "$ROOT/VERSION" <<'PY' 2>&1
import json, re, sys
v = json.load(open(sys.argv[1]))
want = [dict(zip(("name", "version", "debian_source", "debian_version", "license"),
                 l.rstrip("\n").split("\t"))) for l in open(sys.argv[2]) if l.strip()]
assert v["name"] == "clrattach" and v["version"] == open(sys.argv[3]).read().strip(), v
assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", v["commit"]), v["commit"]
assert v["linkage"] == "static", v["linkage"]
assert v["components"] == want, (v["components"], want)
names = [c["name"] for c in want]
for must in ("curl", "openssl", "jansson", "musl"):
    assert must in names, "%s not named" % must
PY
); then ok static-version-json-components; else fail static-version-json-components "$msg"; fi

# The libraries built from Debian's sources are named with the version their stamp records (the
# source actually fetched), and the text output carries the same lines.
bad=""
for pkg in curl openssl jansson; do
    stamp=$(cut -d' ' -f1 "$STATIC_DIR/deps/$pkg.stamp" 2>/dev/null)
    line=$(grep -E "^  $pkg " "$WORK/version.txt")
    [ -n "$stamp" ] && [[ $line == *"(Debian source $pkg $stamp,"* ]] || bad="$bad $pkg(stamp '$stamp', text '$line')"
done
grep -q "^linkage: static$" "$WORK/version.txt" || bad="$bad linkage"
grep -qE "^commit: [0-9a-f]{40}" "$WORK/version.txt" || bad="$bad commit"
if [ -z "$bad" ]; then ok static-version-text-stamps; else fail static-version-text-stamps "$bad: $(cat "$WORK/version.txt")"; fi

# The SBOM against the binary's own answer.
python3 "$ROOT/tests/deploy/check_sbom.py" "$STATIC_DIR/clrattach.spdx.json" "$WORK/version.json"

# The check catches an SBOM that lost a component or names another Debian revision.
python3 - "$STATIC_DIR/clrattach.spdx.json" "$WORK" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
lib = next(p for p in doc["packages"] if p["name"] == "openssl")
missing = dict(doc, packages=[p for p in doc["packages"] if p is not lib])
json.dump(missing, open(sys.argv[2] + "/missing.json", "w"))
ref = lib["externalRefs"][0]
ref["referenceLocator"] = ref["referenceLocator"].replace("@", "@0", 1)
json.dump(doc, open(sys.argv[2] + "/revision.json", "w"))
PY
for t in missing revision; do
    if python3 "$ROOT/tests/deploy/check_sbom.py" "$WORK/$t.json" "$WORK/version.json" |
        grep -q "^FAIL sbom-matches-version-output"; then
        ok "sbom-check-catches-$t"
    else
        fail "sbom-check-catches-$t" "a tampered SBOM ($t) passed"
    fi
done

# The dynamic build names what it links at run time, and --version still answers.
if msg=$(python3 - <<PY 2>&1
import json, subprocess
v = json.loads(subprocess.run(["$ROOT/$BUILD/clrattach", "version", "-o", "json"],
                              capture_output=True, text=True, check=True).stdout)
assert v["linkage"] == "dynamic", v
names = {l["name"]: l["version"] for l in v["system_libraries"]}
assert names.get("libcurl") and names.get("jansson") and names.get("tls"), names
assert "components" not in v, v
PY
); then ok dynamic-version-system-libraries; else fail dynamic-version-system-libraries "$msg"; fi
out=$("$STATIC" --version 2>&1)
if [ "$out" = "clrattach $(cat "$ROOT/VERSION")" ]; then ok version-flag; else fail version-flag "$out"; fi

# A build from `git archive` names its commit (COMMIT, filled in by export-subst), also when the
# archive is unpacked inside another repository's work tree; a tree with neither says unknown.
if head=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null); then
    mkdir -p "$WORK/repo/archive" "$WORK/bare"
    git -C "$WORK/repo" init -q
    if git -C "$ROOT" archive HEAD | tar -x -C "$WORK/repo/archive" &&
        make -s -C "$WORK/repo/archive" --no-print-directory build/gen/build_info.h >"$WORK/err" 2>&1 &&
        grep -q "BUILD_INFO_COMMIT \"$head\"" "$WORK/repo/archive/build/gen/build_info.h"; then
        ok archive-build-names-commit
    else
        fail archive-build-names-commit "$(cat "$WORK/err"; grep COMMIT "$WORK/repo/archive/build/gen/build_info.h" 2>&1)"
    fi
    cp -a "$ROOT/scripts" "$WORK/bare/" && printf '$Format:%%H$\n' >"$WORK/bare/COMMIT"
    out=$("$WORK/bare/scripts/commit.sh")
    if [ "$out" = unknown ]; then ok copy-without-commit-unknown; else fail copy-without-commit-unknown "$out"; fi
else
    fail archive-build-names-commit "not a git checkout: $ROOT"
fi
