#!/usr/bin/env python3
"""Static checks of the Dockerfile (tests/containers/ builds and runs it): a multi-stage build
whose final stage is FROM scratch, runs as a numeric non-root user, has the OCI labels and an
exec-form ENTRYPOINT, carries the SBOM, and COPYs only paths that the make targets run in the builder produce
(asked from make itself with -n, so a renamed rule or output breaks this test).

Usage: check_dockerfile.py REPO_ROOT
"""
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = sys.argv[1]
results = []


def check(name, fn):
    try:
        fn()
        results.append(True)
        print("ok " + name)
    except Exception as e:
        results.append(False)
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e))


def instructions():
    """(INSTRUCTION, rest) with continuation lines joined and comments dropped."""
    out, cur = [], ""
    for line in open(os.path.join(ROOT, "Dockerfile")):
        s = line.rstrip("\n")
        if not cur and (s.lstrip().startswith("#") or not s.strip()):
            continue
        if s.lstrip().startswith("#"):
            continue
        cur += s.rstrip("\\") + " " if s.endswith("\\") else s
        if not s.endswith("\\"):
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def stages():
    st = []
    for ins, rest in instructions():
        if ins == "FROM":
            m = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            st.append({"image": m.group(1), "name": m.group(2), "ins": []})
        elif st:
            st[-1]["ins"].append((ins, rest))
    return st


def t_stages():
    st = stages()
    assert len(st) >= 2, "not multi-stage"
    assert st[0]["image"].startswith("debian:bookworm"), st[0]["image"]
    assert st[-1]["image"] == "scratch", "final stage is %s" % st[-1]["image"]
    names = {s["name"] for s in st[:-1]}
    for ins, rest in st[-1]["ins"]:
        if ins == "COPY":
            m = re.search(r"--from=(\S+)", rest)
            assert m and m.group(1) in names, "final COPY not from a build stage: " + rest
        assert ins != "RUN", "RUN in a scratch stage (there is no shell)"


def t_user():
    final = stages()[-1]["ins"]
    users = [r for i, r in final if i == "USER"]
    assert users, "no USER in the final stage"
    uid, _, gid = users[-1].partition(":")
    # Numeric: kubelet's runAsNonRoot check cannot verify a user name in an image.
    assert uid.isdigit() and int(uid) != 0 and (not gid or (gid.isdigit() and int(gid) != 0)), users[-1]


def t_entrypoint_labels():
    final = stages()[-1]["ins"]
    ep = [r for i, r in final if i == "ENTRYPOINT"]
    assert ep and json.loads(ep[-1]) == ["/clrattach"], ep
    labels = " ".join(r for i, r in final if i == "LABEL")
    for k in ("title", "description", "version", "revision", "source", "licenses"):
        assert "org.opencontainers.image." + k + "=" in labels, "label %s missing" % k


def make_targets():
    st = stages()
    builder = st[0]
    workdir = "/"
    targets = []
    for ins, rest in builder["ins"]:
        if ins == "WORKDIR":
            workdir = rest
        if ins == "RUN":
            for cmd in re.split(r"&&|;", rest):
                words = shlex.split(cmd)
                # VAR=value words before the command are its environment.
                while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                    words = words[1:]
                if words and words[0] == "make":
                    targets += [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return workdir, targets


def make_cmd():
    # static.mk is meant to be included by the Makefile; until it is, name it explicitly.
    mk = open(os.path.join(ROOT, "Makefile")).read()
    extra = [] if re.search(r"^-?include\s+static\.mk", mk, re.M) else ["-f", "Makefile", "-f", "static.mk"]
    return ["make", "-n", "--no-print-directory", "BUILD=build"] + extra


def t_copies_built():
    workdir, targets = make_targets()
    assert targets, "the builder runs no make target"
    # Every target has a rule (make -n fails with "No rule to make target" otherwise).
    for t in targets:
        r = subprocess.run(make_cmd() + [t], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, "make %s: %s" % (t, r.stderr.strip()[-300:])
    # What the targets produce: the file targets themselves, and for `static` what the script
    # writes (scripts/build-static.sh is the recipe; its outputs are checked in its text).
    produced = {t for t in targets if "/" in t}
    if "static" in targets:
        r = subprocess.run(make_cmd() + ["static"], cwd=ROOT, capture_output=True, text=True)
        assert "scripts/build-static.sh" in r.stdout, r.stdout
        script = open(os.path.join(ROOT, "scripts/build-static.sh")).read()
        assert 'mv "$OUT/clrattach.tmp" "$OUT/clrattach"' in script
        assert 'strip -o "$OUT/clrattach.stripped"' in script
        assert 'mv "$OUT/clrattach.spdx.json.tmp" "$OUT/clrattach.spdx.json"' in script
        produced |= {"build/static/clrattach", "build/static/clrattach.stripped",
                     "build/static/clrattach.spdx.json"}
    # The OpenTelemetry agent is managed code the builder (no .NET SDK) cannot build: built
    # before the image (scripts/build-image.sh runs make otel-agent) and let into the context.
    image_sh = open(os.path.join(ROOT, "scripts/build-image.sh")).read()
    ign = open(os.path.join(ROOT, ".dockerignore")).read().split()
    if re.search(r"^\s*make\b.*\botel-agent\b", image_sh, re.M) and "!build/otel-agent" in ign:
        r = subprocess.run(make_cmd() + ["otel-agent"], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, "make otel-agent: " + r.stderr.strip()[-300:]
        produced.add("build/otel-agent")
    copies = [r for i, r in stages()[-1]["ins"] if i == "COPY"]
    dests = set()
    for c in copies:
        words = [w for w in c.split() if not w.startswith("--")]
        src, dst = words[0], words[-1]
        rel = os.path.relpath(src, workdir)
        assert rel in produced, "COPY %s: not produced by make %s" % (src, " ".join(targets))
        dests.add(dst)
    assert {"/clrattach", "/sbom/clrattach.spdx.json", "/profilers/linux-x64/libclrprobe.so",
            "/profilers/linux-musl-x64/libclrprobe.so", "/otel-agent"} <= dests, dests


def t_dockerignore():
    ign = open(os.path.join(ROOT, ".dockerignore")).read().split()
    # The context must not carry a host build (a glibc object linked into the static binary)
    # nor the git history.
    assert "build" in ign and ".git" in ign, ign


check("dockerfile-stages", t_stages)
check("dockerfile-user-nonroot", t_user)
check("dockerfile-entrypoint-labels", t_entrypoint_labels)
check("dockerfile-copies-built-paths", t_copies_built)
check("dockerignore", t_dockerignore)
sys.exit(0 if all(results) else 1)
