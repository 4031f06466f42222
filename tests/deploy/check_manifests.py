#!/usr/bin/env python3
"""Static checks of deploy/: every manifest parses, the kustomizations compose, and the result
passes Pod Security "restricted" and clrattach's own needs.

The composition kustomize would do is done here, so these checks need no cluster tooling
(tests/containers/ renders the same directories with `kubectl kustomize` and runs them): resources, namespace, strategic-merge patches
(lists merged by name, $patch: delete) and Components. Only what deploy/ uses is implemented;
anything else is reported as a failure rather than ignored. Field names are checked against
the saved Kubernetes OpenAPI (core/v1) so that a typo cannot pass as an unknown field.

Usage: check_manifests.py REPO_ROOT CLRATTACH_BINARY   (prints ok/FAIL lines; exit 1 on a FAIL)
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import yaml

ROOT, BINARY = sys.argv[1], sys.argv[2]
DEPLOY = os.path.join(ROOT, "deploy")
OPENAPI = "/work/shared/k8s-openapi/api__v1_openapi.json"
results = []


def check(name, fn):
    try:
        fn()
        results.append(True)
        print("ok " + name)
    except Exception as e:  # a failed assertion or a broken file: both are failures
        results.append(False)
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e))


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# ---- kustomize, the subset deploy/ uses ----------------------------------------------------
KNOWN_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "namespace", "resources", "patches", "labels",
                            "components"}


def smp(base, patch):
    """Strategic merge: maps merge, lists of named maps merge by name, $patch: delete."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for k, v in patch.items():
            out[k] = smp(out[k], v) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and all(
            isinstance(x, dict) and "name" in x for x in base + patch):
        out = copy.deepcopy(base)
        for item in patch:
            idx = next((i for i, x in enumerate(out) if x["name"] == item["name"]), None)
            if item.get("$patch") == "delete":
                assert idx is not None, "$patch: delete of missing %s" % item["name"]
                del out[idx]
            elif idx is None:
                out.append(copy.deepcopy(item))
            else:
                out[idx] = smp(out[idx], item)
        return out
    return copy.deepcopy(patch)


def matches(obj, target):
    return all(obj.get("kind") == target[k] if k == "kind" else
               obj.get("apiVersion", "").split("/")[0] == target[k] if k == "group" else
               obj.get("apiVersion", "").split("/")[-1] == target[k] if k == "version" else
               obj["metadata"]["name"] == target[k] if k == "name" else False
               for k in target)


def apply_patches(objs, kdir, patches):
    for p in patches:
        assert set(p) <= {"path", "target"}, "unsupported patch form %s" % p
        for patch in load_docs(os.path.join(kdir, p["path"])):
            target = p.get("target") or {"kind": patch["kind"], "name": patch["metadata"]["name"]}
            hit = [o for o in objs if matches(o, target)]
            assert hit, "patch %s matches nothing" % p["path"]
            for o in hit:
                body = {k: v for k, v in patch.items() if k != "metadata"}
                o.update(smp(o, body))


def render(kdir, as_component=False):
    k = load_docs(os.path.join(kdir, "kustomization.yaml"))[0]
    assert set(k) <= KNOWN_KUSTOMIZATION_KEYS, "unsupported keys %s" % (set(k) - KNOWN_KUSTOMIZATION_KEYS)
    want = "Component" if as_component else "Kustomization"
    assert k["kind"] == want, "%s is a %s, expected %s" % (kdir, k["kind"], want)
    objs = []
    for r in k.get("resources", []):
        p = os.path.normpath(os.path.join(kdir, r))
        objs += render(p) if os.path.isdir(p) else load_docs(p)
    for c in k.get("components", []):
        comp = load_docs(os.path.join(kdir, c, "kustomization.yaml"))[0]
        apply_patches(objs, os.path.join(kdir, c), comp.get("patches", []))
    if "namespace" in k:
        for o in objs:
            # kustomize gives a Namespace object the kustomization's namespace as its name.
            o["metadata"]["name" if o["kind"] == "Namespace" else "namespace"] = k["namespace"]
    apply_patches(objs, kdir, k.get("patches", []))
    return objs


# ---- OpenAPI field names ---------------------------------------------------------------------
SCHEMAS = json.load(open(OPENAPI))["components"]["schemas"]


def ref_of(prop):
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[1]
    for sub in prop.get("allOf", []):
        if "$ref" in sub:
            return sub["$ref"].rsplit("/", 1)[1]
    return None


def known_fields(obj, schema, where):
    """Every key of obj is a property of the schema, recursively through $refs."""
    props = SCHEMAS[schema].get("properties", {})
    for key, val in obj.items():
        assert key in props, "%s: unknown field %r (%s)" % (where, key, schema)
        p = props[key]
        sub = ref_of(p)
        if sub and isinstance(val, dict) and "properties" in SCHEMAS[sub]:
            known_fields(val, sub, where + "." + key)
        items = p.get("items", {})
        isub = ref_of(items) if items else None
        if isub and isinstance(val, list) and "properties" in SCHEMAS[isub]:
            for i, v in enumerate(val):
                known_fields(v, isub, "%s.%s[%d]" % (where, key, i))


# ---- Pod Security "restricted" (kubernetes/pod-security-admission policy/check_*.go) --------
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret", "image"}


def all_containers(spec):
    return spec.get("containers", []) + spec.get("initContainers", []) + \
        spec.get("ephemeralContainers", [])


def restricted(spec, where):
    for k in ("hostPID", "hostIPC", "hostNetwork"):
        assert not spec.get(k), "%s: %s" % (where, k)
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        assert kinds <= RESTRICTED_VOLUMES, "%s: volume %s is %s" % (where, v["name"], kinds)
    psc = spec.get("securityContext", {})
    for c in all_containers(spec):
        sc = c.get("securityContext", {})
        w = "%s container %s" % (where, c["name"])
        assert not sc.get("privileged"), w + ": privileged"
        assert sc.get("allowPrivilegeEscalation") is False, w + ": allowPrivilegeEscalation"
        assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, w + ": runAsNonRoot"
        assert sc.get("runAsUser", psc.get("runAsUser", 1)) != 0, w + ": runAsUser 0"
        caps = sc.get("capabilities", {})
        assert "ALL" in caps.get("drop", []), w + ": capabilities not dropped"
        assert set(caps.get("add") or []) <= {"NET_BIND_SERVICE"}, w + ": capabilities added"
        prof = sc.get("seccompProfile", psc.get("seccompProfile", {}))
        assert prof.get("type") in ("RuntimeDefault", "Localhost"), w + ": seccomp %s" % prof
        if prof["type"] == "Localhost":
            assert prof.get("localhostProfile"), w + ": Localhost without localhostProfile"
        for port in c.get("ports", []):
            assert "hostPort" not in port, w + ": hostPort"


# ---- clrattach's own needs --------------------------------------------------------------------
def arg(c, flag):
    for a in c.get("args", []):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def sidecar_ok(spec, where, native, app_name="app"):
    side = [c for c in spec.get("initContainers" if native else "containers", [])
            if c["name"] == "clrattach"]
    assert len(side) == 1, "%s: one clrattach %s" % (where, "initContainer" if native else "container")
    other = [c for c in spec.get("containers" if native else "initContainers", [])
             if c["name"] == "clrattach"]
    assert not other, "%s: clrattach in both lists" % where
    s = side[0]
    if native:
        assert s.get("restartPolicy") == "Always", where + ": native sidecar needs restartPolicy: Always"
    assert spec.get("shareProcessNamespace") is True, where + ": shareProcessNamespace"
    assert s["args"][0] == "watch", where + ": the sidecar runs watch"
    for flag in ("--profiler", "--clsid", "--target-dir"):
        assert arg(s, flag), "%s: %s missing" % (where, flag)
    env = {e["name"]: e for e in s.get("env", [])}
    for name, field in (("CLRATTACH_POD_NAME", "metadata.name"),
                        ("CLRATTACH_POD_NAMESPACE", "metadata.namespace"),
                        ("CLRATTACH_POD_UID", "metadata.uid")):
        assert env[name]["valueFrom"]["fieldRef"]["fieldPath"] == field, "%s: %s" % (where, name)
    assert s.get("terminationMessagePolicy") in ("File", "FallbackToLogsOnError"), where
    sc, psc = s["securityContext"], spec.get("securityContext", {})
    assert sc.get("readOnlyRootFilesystem") is True, where + ": readOnlyRootFilesystem"
    app = next(c for c in spec["containers"] if c["name"] == app_name)
    app_uid = app.get("securityContext", {}).get("runAsUser", psc.get("runAsUser"))
    assert sc["runAsUser"] == app_uid, "%s: sidecar uid %s != app uid %s" % (where, sc["runAsUser"], app_uid)
    assert arg(s, "--uid") in (None, str(app_uid)), where + ": --uid is not the app's"
    # --target-dir is a path in the APP's view: an emptyDir mounted there.
    tdir = arg(s, "--target-dir")
    mount = next((m for m in app.get("volumeMounts", []) if m["mountPath"] == tdir), None)
    assert mount and not mount.get("readOnly"), "%s: %s not a writable mount of the app" % (where, tdir)
    vol = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert "emptyDir" in vol, "%s: %s is not an emptyDir" % (where, tdir)
    tmpdir = {e["name"]: e.get("value") for e in app.get("env", [])}.get("TMPDIR")
    if app.get("securityContext", {}).get("readOnlyRootFilesystem"):
        assert tmpdir, where + ": read-only app root without a writable TMPDIR (no diagnostic socket)"
        # The sample profiler writes its report from inside the app and fails its attach when it
        # cannot (its default is /tmp): its out= must be on a writable mount of the app.
        # With --startup there is no client data: the report's path is the app's CLRPROBE_OUT
        # (the probe reads it with getenv(), which --env does not reach).
        if arg(s, "--profiler").startswith("/profilers/"):
            out = dict(kv.split("=", 1) for kv in (arg(s, "--client-data") or "").split(";")
                       if "=" in kv).get("out", "")
            if "--startup" in s["args"]:
                out = {e["name"]: e.get("value") for e in app.get("env", [])}.get("CLRPROBE_OUT") or ""
            assert any(out.startswith(m["mountPath"].rstrip("/") + "/")
                       for m in app.get("volumeMounts", []) if not m.get("readOnly")), \
                "%s: the sample profiler's report (%r) is not on a writable mount of the app" % (where, out)


def pod_spec_fields(spec, where):
    known_fields(spec, "io.k8s.api.core.v1.PodSpec", where)


# ---- the checks ---------------------------------------------------------------------------------
def t_parse():
    n = 0
    for d, _, files in os.walk(DEPLOY):
        for f in files:
            p = os.path.join(d, f)
            if f.endswith((".yaml", ".yml")):
                for doc in load_docs(p):
                    assert "apiVersion" in doc and "kind" in doc, p
                    n += 1
            elif f.endswith(".json"):
                json.load(open(p))
                n += 1
    assert n >= 10, "only %d documents" % n


def deployments(objs):
    return [o for o in objs if o["kind"] == "Deployment"]


def default_container_is_app(dep, where):
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    assert ann.get("kubectl.kubernetes.io/default-container") == "app", \
        where + ": kubectl logs/exec would not default to the app"


def t_base():
    objs = render(os.path.join(DEPLOY, "base"))
    (dep,) = deployments(objs)
    default_container_is_app(dep, "base")
    spec = dep["spec"]["template"]["spec"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    pod_spec_fields(spec, "base")
    restricted(spec, "base")
    sidecar_ok(spec, "base", native=False)
    # The check sees a sample profiler left writing its report to the app's read-only /tmp.
    s = copy.deepcopy(spec)
    side = next(c for c in s["containers"] if c["name"] == "clrattach")
    side["args"] = [a for a in side["args"] if not a.startswith("--client-data")]
    try:
        sidecar_ok(s, "mutant", native=False)
    except AssertionError:
        return
    raise AssertionError("a sidecar without the sample profiler's client data passed")


def t_root():
    assert len(render(DEPLOY)) == len(render(os.path.join(DEPLOY, "base")))


def t_rbac():
    objs = render(os.path.join(DEPLOY, "base"))
    role = next(o for o in objs if o["kind"] == "Role")
    rb = next(o for o in objs if o["kind"] == "RoleBinding")
    sa = next(o for o in objs if o["kind"] == "ServiceAccount")
    (dep,) = deployments(objs)
    got = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
           for r in rule["resources"] for v in rule["verbs"]}
    want = {("events.k8s.io", "events", "create"), ("", "events", "create"),
            ("events.k8s.io", "events", "patch"), ("", "events", "patch"), ("", "pods", "get")}
    assert got == want, "Role grants %s" % sorted(got)
    assert not any("resourceNames" in r for r in role["rules"])
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                             "name": role["metadata"]["name"]}, rb["roleRef"]
    # No namespace on the subject: the binding's own (kubectl kustomize fills in the
    # ServiceAccount's when it is part of the same build; RBAC reads an empty one as the
    # binding's namespace).
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"]}], rb["subjects"]
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    (nsobj,) = [o for o in objs if o["kind"] == "Namespace"]
    ns = {o["metadata"]["namespace"] for o in objs if o["kind"] != "Namespace"}
    assert ns == {nsobj["metadata"]["name"]}, "namespaces %s, Namespace %s" % (ns, nsobj)
    # deploy/rbac names no namespace itself: whoever lists it sets one.
    for o in render(os.path.join(DEPLOY, "rbac")):
        assert "namespace" not in o["metadata"], o["metadata"]
        for sub in o.get("subjects", []):
            assert "namespace" not in sub, sub


def t_native():
    (dep,) = deployments(render(os.path.join(DEPLOY, "overlays", "native-sidecar")))
    spec = dep["spec"]["template"]["spec"]
    pod_spec_fields(spec, "native-sidecar")
    restricted(spec, "native-sidecar")
    sidecar_ok(spec, "native-sidecar", native=True)
    # Apart from where it lives, the native sidecar is the plain one.
    (base,) = deployments(render(os.path.join(DEPLOY, "base")))
    plain = next(c for c in base["spec"]["template"]["spec"]["containers"] if c["name"] == "clrattach")
    native = dict(spec["initContainers"][0])
    native.pop("restartPolicy")
    assert native == plain, "native sidecar differs from the plain one"


def t_localhost():
    (dep,) = deployments(render(os.path.join(DEPLOY, "overlays", "seccomp-localhost")))
    default_container_is_app(dep, "seccomp-localhost")
    spec = dep["spec"]["template"]["spec"]
    restricted(spec, "seccomp-localhost")
    sidecar_ok(spec, "seccomp-localhost", native=False)
    side = next(c for c in spec["containers"] if c["name"] == "clrattach")
    prof = side["securityContext"]["seccompProfile"]
    assert prof == {"type": "Localhost", "localhostProfile": "clrattach.json"}, prof
    app = next(c for c in spec["containers"] if c["name"] == "app")
    assert app["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"


def t_profile_file():
    path = os.path.join(DEPLOY, "seccomp", "clrattach.json")
    out = subprocess.run([BINARY, "seccomp-profile"], check=True, capture_output=True).stdout
    # Compared as JSON: the checked-in file may be formatted differently.
    assert json.load(open(path)) == json.loads(out), \
        "%s differs from `%s seccomp-profile`: regenerate it" % (path, BINARY)
    assert json.loads(out)["defaultAction"].startswith("SCMP_ACT_")


def t_component():
    comp = os.path.join(DEPLOY, "components", "inject-sidecar")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "billing", "namespace": "shop"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}},
               "spec": {"securityContext": {"runAsUser": 1654, "runAsNonRoot": True,
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "web", "image": "billing",
                                        "securityContext": {"allowPrivilegeEscalation": False,
                                                            "capabilities": {"drop": ["ALL"]}}}],
                        "volumes": [{"name": "cfg", "configMap": {"name": "x"}}]}}}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "billing"}, "spec": {}}
    objs = [dep, svc]
    k = load_docs(os.path.join(comp, "kustomization.yaml"))[0]
    assert k["kind"] == "Component" and k["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
    apply_patches(objs, comp, k["patches"])
    spec = objs[0]["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["web", "clrattach"], spec["containers"]
    assert [v["name"] for v in spec["volumes"]] == ["cfg", "clrattach-profilers"]
    assert spec["shareProcessNamespace"] is True
    assert objs[1] == svc, "the component touched a Service"
    pod_spec_fields(spec, "component")
    restricted(spec, "component")
    # With the consumer's own patch mounting the volume in "web" (docs/sidecar.md), it is complete.
    spec["containers"][0]["volumeMounts"] = [{"name": "clrattach-profilers",
                                              "mountPath": "/clrattach-profilers"}]
    sidecar_ok(spec, "component", native=False, app_name="web")
    # Applying it twice changes nothing (lists merge by name).
    again = copy.deepcopy(objs)
    apply_patches(again, comp, k["patches"])
    assert again == objs


def t_startup_suspend():
    kdir = os.path.join(DEPLOY, "overlays", "startup-suspend")
    (dep,) = deployments(render(kdir))
    default_container_is_app(dep, "startup-suspend")
    spec = dep["spec"]["template"]["spec"]
    pod_spec_fields(spec, "startup-suspend")
    restricted(spec, "startup-suspend")
    sidecar_ok(spec, "startup-suspend", native=False)
    app = next(c for c in spec["containers"] if c["name"] == "app")
    env = {e["name"]: e.get("value") for e in app["env"]}
    assert env["DOTNET_DefaultDiagnosticPortSuspend"] == "1", env
    assert env["TMPDIR"], "the base's TMPDIR was lost"
    side = next(c for c in spec["containers"] if c["name"] == "clrattach")
    assert side["args"][:2] == ["watch", "--startup"], side["args"]
    # clrattach refuses --client-data with watch --startup.
    assert arg(side, "--client-data") is None, side["args"]
    assert len(spec["containers"]) == 2, [c["name"] for c in spec["containers"]]
    # kubectl's own kustomize renders it, to the same Deployment as the composition above.
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with kustomize) is not on PATH"
    out = subprocess.run([kubectl, "kustomize", kdir], check=True, capture_output=True,
                         text=True).stdout
    (real,) = deployments([d for d in yaml.safe_load_all(out) if d])
    rspec = real["spec"]["template"]["spec"]
    got = {c["name"]: c for c in rspec["containers"]}
    want = {c["name"]: c for c in spec["containers"]}
    assert got["clrattach"]["args"] == want["clrattach"]["args"], got["clrattach"]["args"]
    # env merges by name; kustomize puts a patch's new entries first.
    by_name = lambda c: sorted(c["env"], key=lambda e: e["name"])
    assert by_name(got["app"]) == by_name(want["app"]), got["app"]["env"]
    assert sorted(c["name"] for c in rspec["containers"]) == ["app", "clrattach"]


def t_custom():
    c = json.load(open(os.path.join(DEPLOY, "kubectl-debug", "custom.json")))
    # kubectl refuses these in a custom profile; ephemeral containers refuse the others.
    forbidden = {"name", "command", "image", "lifecycle", "volumeDevices", "ports", "resources",
                 "livenessProbe", "readinessProbe", "startupProbe", "restartPolicy"}
    assert not set(c) & forbidden, set(c) & forbidden
    known_fields(c, "io.k8s.api.core.v1.EphemeralContainer", "custom.json")
    restricted({"containers": [dict(c, name="debugger")]}, "custom.json")
    assert c["securityContext"]["runAsUser"] != 0
    (m,) = c["volumeMounts"]
    assert m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount" and m["readOnly"]
    assert "subPath" not in m and m["name"].startswith("kube-api-access-")
    env = {e["name"]: e for e in c["env"]}
    assert env["CLRATTACH_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid"


def t_restricted_negative():
    # The checker itself must catch violations (a checker that passes everything is no test).
    (dep,) = deployments(render(os.path.join(DEPLOY, "base")))
    spec = dep["spec"]["template"]["spec"]
    bad = [("hostPID", lambda s: s.update(hostPID=True)),
           ("hostPath", lambda s: s["volumes"].append({"name": "h", "hostPath": {"path": "/"}})),
           ("privileged", lambda s: s["containers"][1]["securityContext"].update(privileged=True)),
           ("escalation", lambda s: s["containers"][1]["securityContext"].pop("allowPrivilegeEscalation")),
           ("caps", lambda s: s["containers"][1]["securityContext"]["capabilities"].update(add=["SYS_PTRACE"])),
           ("seccomp", lambda s: s["containers"][1]["securityContext"].update(
               seccompProfile={"type": "Unconfined"}))]
    for name, mutate in bad:
        s = copy.deepcopy(spec)
        mutate(s)
        try:
            restricted(s, "mutant")
        except AssertionError:
            continue
        raise AssertionError("the restricted check accepted %s" % name)
    s = copy.deepcopy(spec)
    s["containers"][1]["securityContex"] = {}
    try:
        pod_spec_fields(s, "mutant")
    except AssertionError:
        return
    raise AssertionError("a misspelt field passed the OpenAPI check")


def t_agent():
    """deploy/agent: the node agent's DaemonSet has what docs/security.md says and no more."""
    objs = render(os.path.join(DEPLOY, "agent"))
    (ds,) = [o for o in objs if o["kind"] == "DaemonSet"]
    spec = ds["spec"]["template"]["spec"]
    pod_spec_fields(spec, "agent")
    assert spec["hostPID"] is True and not spec.get("hostNetwork") and not spec.get("hostIPC")
    assert not any("hostPath" in v for v in spec.get("volumes", [])), "no hostPath"
    (c,) = spec["containers"]
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"], "add": [
        "SETUID", "SETGID", "SYS_PTRACE", "DAC_OVERRIDE", "DAC_READ_SEARCH", "CHOWN", "FOWNER"]}, sc
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert not sc.get("privileged")
    assert sc["seccompProfile"] == {"type": "Localhost", "localhostProfile": "clrattach.json"}
    assert c["args"][0] == "agent" and "--profiles=/etc/clrattach/profiles.json" in c["args"]
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    role = next(o for o in objs if o["kind"] == "ClusterRole")
    got = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
           for r in rule["resources"] for v in rule["verbs"]}
    want = {("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch"),
            ("", "namespaces", "get"), ("events.k8s.io", "events", "create"),
            ("events.k8s.io", "events", "patch"), ("", "events", "create"), ("", "events", "patch")}
    assert got == want, "ClusterRole grants %s" % sorted(got)
    crb = next(o for o in objs if o["kind"] == "ClusterRoleBinding")
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": spec["serviceAccountName"],
                                "namespace": ds["metadata"]["namespace"]}], crb["subjects"]
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    profiles = json.loads(cm["data"]["profiles.json"])["profiles"]
    assert profiles and all(p.get("namespaces") for p in profiles.values()), profiles
    assert profiles["probe"]["profiler"] == "/profilers", profiles["probe"]
    # and the binary takes them as the agent would at start
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(cm["data"]["profiles.json"])
        f.flush()
        r = subprocess.run([BINARY, "agent", "--check-profiles", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


check("manifests-parse", t_parse)
check("base-restricted-sidecar", t_base)
check("root-kustomization", t_root)
check("rbac-names-and-rules", t_rbac)
check("native-sidecar-overlay", t_native)
check("seccomp-localhost-overlay", t_localhost)
check("seccomp-profile-file-matches-binary", t_profile_file)
check("inject-sidecar-component", t_component)
check("startup-suspend-component", t_startup_suspend)
check("kubectl-debug-custom-spec", t_custom)
check("agent-daemonset", t_agent)
check("checker-catches-violations", t_restricted_negative)
sys.exit(0 if all(results) else 1)
