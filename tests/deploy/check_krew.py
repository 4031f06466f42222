#!/usr/bin/env python3
"""Checks the krew manifest `make krew` writes (deploy/krew/build.sh) against krew's documented
rules, and its archive against the manifest.

The rules, from krew's developer guide:
  https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/ (apiVersion
    krew.googlecontainertools.github.com/v1alpha2, kind Plugin; metadata.name matches the file
    name; spec.version a semantic version with its "v" prefix required; homepage;
    shortDescription "in only a few words"; description; platforms, each with a selector on
    os/arch, the archive's uri and sha256, files, and bin, the executable once installed)
  https://krew.sigs.k8s.io/docs/developer-guide/develop/naming-guide/ (lowercase words
    separated by hyphens)
  https://krew.sigs.k8s.io/docs/developer-guide/testing-locally/ (the .tar.gz archive and the
    manifest install together with `kubectl krew install --manifest --archive`)
Usage: check_krew.py ROOT OUTDIR. Prints ok/FAIL lines.
"""
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile

import yaml

ROOT, OUT = sys.argv[1], sys.argv[2]
failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print("ok " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))


path = os.path.join(OUT, "clrattach.yaml")
text = open(path).read()
m = yaml.safe_load(text)
spec = m.get("spec") or {}
version = open(os.path.join(ROOT, "VERSION")).read().strip()
check("krew-api-kind", m.get("apiVersion") == "krew.googlecontainertools.github.com/v1alpha2"
      and m.get("kind") == "Plugin", (m.get("apiVersion"), m.get("kind")))
name = (m.get("metadata") or {}).get("name", "")
check("krew-name", name == os.path.basename(path)[:-len(".yaml")]
      and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name)
check("krew-version", re.fullmatch(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?",
                                   str(spec.get("version")))
      and spec.get("version") == "v" + version, spec.get("version"))
check("krew-homepage", re.fullmatch(r"https://[^\s]+", str(spec.get("homepage"))), spec.get("homepage"))
short = str(spec.get("shortDescription") or "")
check("krew-short-description", 0 < len(short) <= 50 and "\n" not in short, short)
desc = str(spec.get("description") or "")
check("krew-description", len(desc.split()) >= 10 and desc.strip() != short, desc[:80])
check("krew-no-placeholder", "@" not in text, re.findall(r"@\w+@", text))
plats = spec.get("platforms") or []
check("krew-platforms", len(plats) >= 1, plats)
for i, p in enumerate(plats):
    sel = p.get("selector") or {}
    keys = set((sel.get("matchLabels") or {}).keys()) | {
        e.get("key") for e in sel.get("matchExpressions") or []}
    oses = set((sel.get("matchLabels") or {}).get("os", "").split()) | {
        v for e in sel.get("matchExpressions") or [] if e.get("key") == "os"
        for v in e.get("values") or []}
    # A bash script: Unix only.
    check("krew-platform-%d-selector" % i, keys and keys <= {"os", "arch"}
          and oses and oses <= {"linux", "darwin"}, sel)
    uri = str(p.get("uri") or "")
    check("krew-platform-%d-uri" % i, re.fullmatch(r"https://\S+\.tar\.gz", uri), uri)
    archive = os.path.join(OUT, os.path.basename(uri))
    data = open(archive, "rb").read() if os.path.exists(archive) else b""
    check("krew-platform-%d-sha256" % i, re.fullmatch(r"[0-9a-f]{64}", str(p.get("sha256")))
          and hashlib.sha256(data).hexdigest() == p.get("sha256"), (archive, p.get("sha256")))
    files = p.get("files") or []
    check("krew-platform-%d-files" % i, files and all(f.get("from") and f.get("to") for f in files), files)
    bin_ = str(p.get("bin") or "")
    members = {}
    if data:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            members = {x.name: (x, t.extractfile(x).read() if x.isfile() else None)
                       for x in t.getmembers()}
    plugin = open(os.path.join(ROOT, "deploy", "kubectl-clrattach"), "rb").read()
    got = members.get(bin_)
    check("krew-platform-%d-bin" % i, bin_ and "/" not in bin_ and set(members) == {bin_}
          and got and got[0].mode == 0o755 and got[0].uid == 0 and got[1] == plugin,
          (bin_, {k: oct(v[0].mode) for k, v in members.items()}))

# The archive is reproducible: built again elsewhere, the same bytes (the sha256 in the
# manifest then names what anyone rebuilds from the same commit).
with tempfile.TemporaryDirectory() as d:
    subprocess.run([os.path.join(ROOT, "deploy", "krew", "build.sh"), d], check=True,
                   stdout=subprocess.DEVNULL)
    again = yaml.safe_load(open(os.path.join(d, "clrattach.yaml")))
    check("krew-reproducible", [p["sha256"] for p in again["spec"]["platforms"]]
          == [p.get("sha256") for p in plats], "the archive differs when built again")
sys.exit(1 if failed else 0)
