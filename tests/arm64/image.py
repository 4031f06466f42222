#!/usr/bin/env python3
"""Reads the multi-arch image that scripts/build-image.sh writes (an oci-archive: an OCI image
layout in a tar) the way a registry client would: index.json -> the image index -> one manifest
per platform -> its config and layers. Checks both platforms are there, each config names its
own architecture, and unpacks each platform's root filesystem for test_image.sh to run.

Usage: image.py ARCHIVE OUTDIR    (prints "ok NAME" / "FAIL NAME: reason" lines; OUTDIR/<arch>/
       holds each platform's files)
"""
import gzip
import io
import json
import os
import sys
import tarfile

ARCHIVE, OUTDIR = sys.argv[1], sys.argv[2]
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
failed = []


def check(name, cond, why=""):
    print(("ok " + name) if cond else ("FAIL %s: %s" % (name, why)))
    if not cond:
        failed.append(name)
    return cond


tar = tarfile.open(ARCHIVE)
members = {m.name.lstrip("./"): m for m in tar.getmembers()}


def blob(desc):
    algo, _, hexd = desc["digest"].partition(":")
    data = tar.extractfile(members["blobs/%s/%s" % (algo, hexd)]).read()
    assert len(data) == desc["size"], "size of %s" % desc["digest"]
    return data


layout = json.load(tar.extractfile(members["index.json"]))
# buildah writes the manifest list itself as the layout's one entry.
top = layout["manifests"]
index = layout
if len(top) == 1 and top[0]["mediaType"] == INDEX:
    index = json.loads(blob(top[0]))
plats = {}
for m in index["manifests"]:
    p = m.get("platform", {})
    plats[(p.get("os"), p.get("architecture"))] = m
check("image-index-platforms", set(plats) == {("linux", "amd64"), ("linux", "arm64")},
      "platforms %s" % sorted(plats))

for arch in ("amd64", "arm64"):
    m = plats.get(("linux", arch))
    if not m:
        continue
    man = json.loads(blob(m))
    cfg = json.loads(blob(man["config"]))
    c = cfg.get("config", {})
    check("image-%s-config" % arch,
          man.get("mediaType", m["mediaType"]) == MANIFEST and cfg["architecture"] == arch
          and cfg["os"] == "linux" and c.get("Entrypoint") == ["/clrattach"]
          and c.get("User", "0").split(":")[0] not in ("", "0", "root"),
          "architecture %s, entrypoint %s, user %s" % (cfg["architecture"], c.get("Entrypoint"),
                                                        c.get("User")))
    root = os.path.join(OUTDIR, arch)
    os.makedirs(root, exist_ok=True)
    for layer in man["layers"]:
        data = blob(layer)
        if layer["mediaType"].endswith("+gzip"):
            data = gzip.decompress(data)
        with tarfile.open(fileobj=io.BytesIO(data)) as lt:
            for mem in lt.getmembers():
                # Only plain names: this is our own image, but a layer is still input.
                if mem.name.startswith("/") or ".." in mem.name.split("/"):
                    raise SystemExit("FAIL image-%s-layers: unsafe name %s" % (arch, mem.name))
                if mem.isfile() or mem.isdir():
                    lt.extract(mem, root, set_attrs=False)
                    if mem.isfile():
                        os.chmod(os.path.join(root, mem.name), mem.mode & 0o755)
sys.exit(1 if failed else 0)
