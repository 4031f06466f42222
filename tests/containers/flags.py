#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Docker flags for one container of the deploy/ manifests, so the container suite runs what
the manifests say instead of a hand-kept copy of them.

  flags.py pod KUSTOMIZE_DIR CONTAINER [options]   a container of the Deployment that
                                                    `kubectl kustomize KUSTOMIZE_DIR` renders
  flags.py debug CUSTOM_JSON PROFILE [options]      a `kubectl debug --profile=PROFILE
                                                    --custom=CUSTOM_JSON` container (the
                                                    profile's securityContext, then custom's)
  flags.py args KUSTOMIZE_DIR CONTAINER [--set-arg --name=value]...   the container's args

Prints one docker-run argument per line. What the pod spec says and what it becomes:
  runAsUser/runAsGroup (container over pod)   --user UID:GID
  readOnlyRootFilesystem                     --read-only
  allowPrivilegeEscalation: false            --security-opt no-new-privileges
  capabilities.drop / add                    --cap-drop X / --cap-add X
  seccompProfile RuntimeDefault              nothing (the engine's default profile)
                 Localhost NAME              --security-opt seccomp=SECCOMP_DIR/NAME
                 Unconfined                  --security-opt seccomp=unconfined
  env value / fieldRef                       -e NAME=VALUE (fieldRefs from --pod-name,
                                             the rendered namespace, --pod-uid)
  volumeMounts of an emptyDir                --volume=EMPTYDIR_ROOT/NAME:PATH (mode 0777)
  terminationMessagePath                     -v TERMINATION_FILE:PATH
  shareProcessNamespace: true                --pid container:PID_OWNER
Anything else in a securityContext the suite cannot reproduce is an error, not ignored.
"""
import argparse
import json
import os
import subprocess
import sys

import yaml

KNOWN_SC = {"runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
            "allowPrivilegeEscalation", "capabilities", "seccompProfile", "privileged"}


def render(kdir):
    out = subprocess.run(["kubectl", "kustomize", kdir], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def deployment(kdir):
    (dep,) = [d for d in render(kdir) if d["kind"] == "Deployment"]
    return dep


def find_container(spec, name):
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == name:
            return c
    sys.exit("flags.py: no container %r" % name)


def security_flags(psc, sc, seccomp_dir):
    unknown = set(sc) - KNOWN_SC
    if unknown:
        sys.exit("flags.py: securityContext fields the suite does not reproduce: %s"
                 % sorted(unknown))
    if sc.get("privileged"):
        sys.exit("flags.py: privileged containers are not part of the suite")
    f = []
    uid = sc.get("runAsUser", psc.get("runAsUser"))
    gid = sc.get("runAsGroup", psc.get("runAsGroup"))
    non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    if uid is not None:
        if non_root and uid == 0:
            sys.exit("flags.py: runAsNonRoot with runAsUser 0")
        f.append("--user=%d:%d" % (uid, gid if gid is not None else uid))
    elif non_root:
        sys.exit("flags.py: runAsNonRoot without runAsUser: the suite needs a numeric uid")
    if sc.get("readOnlyRootFilesystem"):
        f.append("--read-only")
    if sc.get("allowPrivilegeEscalation") is False:
        f.append("--security-opt=no-new-privileges")
    caps = sc.get("capabilities", {})
    f += ["--cap-drop=%s" % c for c in caps.get("drop", [])]
    f += ["--cap-add=%s" % c for c in caps.get("add", [])]
    prof = sc.get("seccompProfile", psc.get("seccompProfile", {"type": "RuntimeDefault"}))
    if prof["type"] == "Localhost":
        f.append("--security-opt=seccomp=%s/%s" % (seccomp_dir, prof["localhostProfile"]))
    elif prof["type"] == "Unconfined":
        f.append("--security-opt=seccomp=unconfined")
    elif prof["type"] != "RuntimeDefault":
        sys.exit("flags.py: seccompProfile %s" % prof)
    return f


def env_flags(c, meta, a):
    fields = {"metadata.name": a.pod_name, "metadata.namespace": meta.get("namespace", "default"),
              "metadata.uid": a.pod_uid}
    f = []
    for e in c.get("env", []):
        if "value" in e:
            f.append("--env=%s=%s" % (e["name"], e["value"]))
        elif "fieldRef" in e.get("valueFrom", {}):
            f.append("--env=%s=%s" % (e["name"], fields[e["valueFrom"]["fieldRef"]["fieldPath"]]))
        else:
            sys.exit("flags.py: env %s: only value and fieldRef are reproduced" % e["name"])
    return f


def mount_flags(c, spec, emptydir_root):
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    f = []
    for m in c.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        if "emptyDir" not in v:
            continue  # the service-account volume is added by the suite, as the kubelet does
        if not emptydir_root:
            sys.exit("flags.py: %s mounts emptyDir %s: give --emptydir-root" % (c["name"], m["name"]))
        # A host directory, as the kubelet makes an emptyDir: mode 0777, exec-able, and it
        # outlives a restart of the container (a tmpfs would be a new one, and Docker copies
        # the mount point's mode into it on restart).
        d = os.path.join(emptydir_root, m["name"])
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        f.append("--volume=%s:%s" % (d, m["mountPath"]))
    return f


def parse_size(s):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for u, n in units.items():
        if s.endswith(u):
            return int(s[:-2]) * n
    return int(s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["pod", "debug", "args"])
    p.add_argument("source")
    p.add_argument("which")
    p.add_argument("--pod-name", default="orders-api-0")
    p.add_argument("--pod-uid", default="2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11")
    p.add_argument("--seccomp-dir", default="/var/lib/kubelet/seccomp")
    p.add_argument("--pid-owner", default="")
    p.add_argument("--termination-file", default="")
    p.add_argument("--emptydir-root", default="", help="host directory holding the emptyDirs")
    p.add_argument("--set-arg", action="append", default=[],
                   help="--name=value replaces the container's --name=... argument")
    a = p.parse_args()

    if a.mode == "debug":
        custom = json.load(open(a.source))
        # kubectl debug's profiles (k8s.io/kubectl/pkg/cmd/debug/profiles.go), for a container
        # joining another's PID namespace (--target): "general" adds SYS_PTRACE to a root
        # container; "restricted" is Pod Security restricted; custom's fields go on top.
        base = {"general": {"capabilities": {"add": ["SYS_PTRACE"]}},
                "restricted": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                               "capabilities": {"drop": ["ALL"]},
                               "seccompProfile": {"type": "RuntimeDefault"}}}[a.which]
        sc = dict(base)
        if a.which == "restricted":
            sc.update(custom.get("securityContext", {}))
        out = security_flags({}, sc, a.seccomp_dir)
        out += env_flags(custom, {"namespace": "shop"}, a)
        print("\n".join(out))
        return

    dep = deployment(a.source)
    spec = dep["spec"]["template"]["spec"]
    c = find_container(spec, a.which)
    if a.mode == "args":
        args = list(c.get("args", []))
        for s in a.set_arg:
            key = s.split("=", 1)[0] + "="
            hits = [i for i, x in enumerate(args) if x.startswith(key)]
            if hits:
                args[hits[0]] = s
            else:
                args.append(s)
        print("\n".join(args))
        return
    out = security_flags(spec.get("securityContext", {}), c.get("securityContext", {}),
                         a.seccomp_dir)
    out += env_flags(c, dep["metadata"], a)
    out += mount_flags(c, spec, a.emptydir_root)
    if spec.get("shareProcessNamespace") and a.pid_owner:
        out.append("--pid=container:%s" % a.pid_owner)
    if c.get("terminationMessagePath") and a.termination_file:
        out.append("--volume=%s:%s" % (a.termination_file, c["terminationMessagePath"]))
    print("\n".join(out))


if __name__ == "__main__":
    main()
