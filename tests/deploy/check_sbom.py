#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks an SBOM against what the binary says it is made of.

    check_sbom.py SBOM VERSION_JSON [LABELS_JSON]

SBOM is the SPDX 2.3 JSON document of a static build (scripts/build_info.py), VERSION_JSON the
output of that build's `clrattach version -o json`, LABELS_JSON (optional) the image's labels
as `docker image inspect -f '{{json .Config.Labels}}'` prints them. No SBOM scanner or SPDX
validator is packaged by Debian or npm, so the document is held to what SPDX 2.3 makes
mandatory (clause 6, document creation information; clause 7, package information) and to
what scanners read (a purl per package: Trivy and Grype match Debian advisories by
pkg:deb/debian/SOURCE@VERSION). Prints ok/FAIL lines; exits 1 on any FAIL.
"""
import json
import re
import sys
from datetime import datetime

results = []


def check(name, fn, *args):
    try:
        fn(*args)
        results.append(True)
        print("ok " + name)
    except AssertionError as e:
        results.append(False)
        print("FAIL %s: %s" % (name, e))


SPDXID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")
PURL = re.compile(r"^pkg:deb/debian/([a-z0-9][a-z0-9.+-]+)@([^?#]+)\?(.*)$")


def t_document(doc):
    """SPDX 2.3 clause 6: the mandatory document fields, with their fixed values."""
    assert doc.get("spdxVersion") == "SPDX-2.3", doc.get("spdxVersion")
    assert doc.get("dataLicense") == "CC0-1.0", doc.get("dataLicense")
    assert doc.get("SPDXID") == "SPDXRef-DOCUMENT", doc.get("SPDXID")
    assert isinstance(doc.get("name"), str) and doc["name"], "name"
    ns = doc.get("documentNamespace", "")
    assert re.match(r"^[a-z][a-z0-9+.-]*://\S+$", ns) and "#" not in ns, "documentNamespace %r" % ns
    ci = doc.get("creationInfo") or {}
    datetime.strptime(ci.get("created", ""), "%Y-%m-%dT%H:%M:%SZ")
    creators = ci.get("creators") or []
    assert creators and all(re.match(r"^(Person|Organization|Tool): \S", c) for c in creators), creators


def t_packages(doc):
    """SPDX 2.3 clause 7: each package's mandatory fields; SPDXIDs unique."""
    pkgs = doc.get("packages") or []
    assert pkgs, "no packages"
    ids = [p.get("SPDXID") for p in pkgs]
    assert len(set(ids)) == len(ids), "duplicate SPDXID"
    for p in pkgs:
        assert SPDXID.match(p.get("SPDXID", "")), p.get("SPDXID")
        assert p.get("name"), "package without a name"
        assert p.get("downloadLocation"), "%s: no downloadLocation" % p["name"]
        assert p.get("versionInfo"), "%s: no versionInfo" % p["name"]
        # filesAnalyzed defaults to true, which then requires packageVerificationCode.
        assert p.get("filesAnalyzed") is False or "packageVerificationCode" in p, p["name"]


def t_relationships(doc):
    ids = {p["SPDXID"] for p in doc["packages"]} | {"SPDXRef-DOCUMENT"}
    rels = doc.get("relationships") or []
    for r in rels:
        assert r.get("spdxElementId") in ids and r.get("relatedSpdxElement") in ids, r
        assert re.match(r"^[A-Z_]+$", r.get("relationshipType", "")), r
    described = set(doc.get("documentDescribes") or []) | {
        r["relatedSpdxElement"] for r in rels
        if r["spdxElementId"] == "SPDXRef-DOCUMENT" and r["relationshipType"] == "DESCRIBES"}
    assert described, "the document describes nothing"


def root_package(doc, ver):
    roots = [p for p in doc["packages"] if p["name"] == ver["name"]]
    assert len(roots) == 1, "%d packages named %s" % (len(roots), ver["name"])
    return roots[0]


def t_matches_binary(doc, ver):
    """Every component the binary names is a package of the SBOM, statically linked into the
    binary's package, with the same upstream version and a purl naming its Debian source
    version; and the SBOM names nothing else."""
    assert ver.get("linkage") == "static", "not a static build: %s" % ver.get("linkage")
    root = root_package(doc, ver)
    assert root["versionInfo"] == ver["version"], (root["versionInfo"], ver["version"])
    assert ver["commit"] in root.get("sourceInfo", ""), "commit %s not in the SBOM" % ver["commit"]
    linked = {r["relatedSpdxElement"] for r in doc["relationships"]
              if r["spdxElementId"] == root["SPDXID"] and r["relationshipType"] == "STATIC_LINK"}
    by_name = {p["name"]: p for p in doc["packages"] if p is not root}
    comps = ver.get("components") or []
    assert comps, "the binary names no component"
    for c in comps:
        p = by_name.get(c["name"])
        assert p, "component %s missing from the SBOM" % c["name"]
        assert p["versionInfo"] == c["version"], "%s: %s in the SBOM, %s in the binary" % (
            c["name"], p["versionInfo"], c["version"])
        assert p["SPDXID"] in linked, "%s: no STATIC_LINK from %s" % (c["name"], root["name"])
        assert p.get("licenseDeclared") == c["license"], (p.get("licenseDeclared"), c["license"])
        purls = [r["referenceLocator"] for r in p.get("externalRefs", [])
                 if r.get("referenceType") == "purl" and r.get("referenceCategory") == "PACKAGE-MANAGER"]
        assert len(purls) == 1, "%s: %d purls" % (c["name"], len(purls))
        m = PURL.match(purls[0])
        assert m, "%s: not a Debian purl: %s" % (c["name"], purls[0])
        deb_ver = m.group(2).replace("%2B", "+").replace("%3A", ":")
        assert (m.group(1), deb_ver) == (c["debian_source"], c["debian_version"]), (
            "%s: purl %s, binary %s %s" % (c["name"], purls[0], c["debian_source"], c["debian_version"]))
        assert "distro=debian-12" in m.group(3).split("&"), purls[0]
    agent = (ver.get("otel_agent") or {}).get("packages") or []
    extra = set(by_name) - {c["name"] for c in comps} - {a["name"] for a in agent}
    if agent:
        extra.discard("clrattach-otel-agent")
    assert not extra, "in the SBOM, not in the binary: %s" % sorted(extra)


def t_agent(doc, ver):
    """The OpenTelemetry agent's packages `clrattach version` names (/otel-agent in the image)
    are packages of the SBOM, contained by the agent's, each with its NuGet purl."""
    agent = (ver.get("otel_agent") or {}).get("packages") or []
    if not agent:
        return
    ids = {p["name"]: p for p in doc["packages"]}
    root = ids.get("clrattach-otel-agent")
    assert root, "no clrattach-otel-agent package"
    contained = {r["relatedSpdxElement"] for r in doc["relationships"]
                 if r["spdxElementId"] == root["SPDXID"] and r["relationshipType"] == "CONTAINS"}
    for a in agent:
        p = ids.get(a["name"])
        assert p and p["versionInfo"] == a["version"], "agent package %s %s" % (a["name"], a["version"])
        assert p["SPDXID"] in contained, "%s: not contained by the agent" % a["name"]
        purls = [r["referenceLocator"] for r in p.get("externalRefs", [])]
        assert purls == ["pkg:nuget/%s@%s" % (a["name"], a["version"])], purls


def t_labels(labels, ver):
    """The image's OCI annotations name the same version and commit."""
    for k in ("title", "description", "version", "revision", "source", "licenses"):
        assert labels.get("org.opencontainers.image." + k), "label %s missing" % k
    assert labels["org.opencontainers.image.version"] == ver["version"], labels
    assert labels["org.opencontainers.image.revision"] == ver["commit"], (
        labels["org.opencontainers.image.revision"], ver["commit"])


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    doc = json.load(open(argv[1]))
    ver = json.load(open(argv[2]))
    check("sbom-spdx-document-fields", t_document, doc)
    check("sbom-spdx-package-fields", t_packages, doc)
    check("sbom-spdx-relationships", t_relationships, doc)
    check("sbom-matches-version-output", t_matches_binary, doc, ver)
    check("sbom-otel-agent-packages", t_agent, doc, ver)
    if len(argv) == 4:
        check("oci-labels", t_labels, json.load(open(argv[3])), ver)
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main(sys.argv)
