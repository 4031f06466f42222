"""The fake kubectl (see kubectl next to this file). State lives in $FAKE_DIR:

  argv                      every command line, one per line, arguments joined by " | "
  version.json              GET /version
  context-ns                the kubeconfig context's namespace (default: default)
  pods/NS/NAME/pod.json     a pod as stored, before any ephemeral container
  pods/NS/NAME/result.json  the attach container's termination message (its exit_code is the
                            container's exit code); logs.txt its logs
  pods/NS/NAME/probe.txt    the uid probe's logs (`clrattach ps --pid N -o json`)
  pods/NS/NAME/pidprobe.txt the pid probe's logs (`clrattach ps --match-cgroup ID -o json`)
  pods/NS/NAME/hang         the attach container runs for good (no result)
  pods/NS/NAME/attach-fails the first `kubectl attach` fails
  pods/NS/NAME/conflict     the first PUT of ephemeral containers answers 409
  pods/NS/NAME/ecs.json     (written) the ephemeral containers created; put-EC.json each PUT;
                            stdin-EC.bin what `kubectl attach -i` got
  deployments/NS/NAME.json, statefulsets/NS/NAME.json   workloads
  events/*.json             (written) each `kubectl create -f -`
  create-fails              `kubectl create` fails
  events-group-forbidden    `kubectl create` of an events.k8s.io/v1 Event is forbidden (403)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

D = os.environ["FAKE_DIR"]
REAL = os.environ.get("REAL_KUBECTL", "/usr/bin/kubectl")
GLOBALS = ("--context", "--kubeconfig", "--cluster", "--user", "--as", "--as-group",
           "--request-timeout")
ALLOWED_EC = {"name", "image", "command", "args", "workingDir", "env", "envFrom", "volumeMounts",
              "volumeDevices", "terminationMessagePath", "terminationMessagePolicy",
              "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
              "targetContainerName"}


def log_argv(argv):
    fd = os.open(os.path.join(D, "argv"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (" | ".join(a.replace("\n", "\\n") for a in argv) + "\n").encode())
    os.close(fd)


def fail(msg, code=1):
    sys.stderr.write("Error from server: %s\n" % msg)
    sys.exit(code)


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def minor():
    return int(re.match(r"\d+", load(os.path.join(D, "version.json"))["minor"]).group(0))


def pod_dir(ns, name):
    return os.path.join(D, "pods", ns, name)


def pod_view(ns, name):
    """The pod as the server shows it now: its ephemeral containers and their states."""
    d = pod_dir(ns, name)
    pod = load(os.path.join(d, "pod.json"))
    if pod is None:
        fail('pods "%s" not found (NotFound)' % name)
    ecs = load(os.path.join(d, "ecs.json"), [])
    if ecs:
        pod["spec"]["ephemeralContainers"] = ecs
        sts = []
        for ec in ecs:
            n = ec["name"]
            if n.endswith(("-uid", "-pid")):
                state = {"terminated": {"exitCode": 0, "reason": "Completed"}}
            elif os.path.exists(os.path.join(d, "hang")) or (
                    ec.get("stdinOnce") and not os.path.exists(os.path.join(d, "attached-" + n))):
                state = {"running": {"startedAt": "2025-01-01T00:00:00Z"}}
            else:
                msg = open(os.path.join(d, "result.json")).read()
                try:
                    code = json.loads(msg)["exit_code"]
                except ValueError:  # a result that is not JSON: the container still exited 0
                    code = 0
                state = {"terminated": {"exitCode": code, "reason": "Completed", "message": msg}}
            sts.append({"name": n, "state": state, "image": ec["image"]})
        pod.setdefault("status", {})["ephemeralContainerStatuses"] = sts
    return pod


def render(obj, output):
    """-o OUTPUT over obj, by the real kubectl's printers."""
    if output == "json":
        sys.stdout.write(json.dumps(obj))
        return
    kind, _, tpl = output.partition("=")
    is_list = obj.get("kind", "").endswith("List")
    if is_list:
        # A list is printed item by item by `kubectl label --local`: the plugin's list templates
        # are {range .items[*]}BODY{end}, rendered here as BODY per item.
        m = re.fullmatch(r"\{range \.items\[\*\]\}(.*)\{end\}", tpl, re.S)
        if not m or kind != "jsonpath":
            fail("fake kubectl: list template not of the form {range .items[*]}...{end}: " + tpl)
        tpl = m.group(1)
        if not obj["items"]:
            return
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(obj, f)
    try:
        r = subprocess.run([REAL, "label", "--local", "-f", f.name, "fake.test/render=1",
                            "-o", "%s=%s" % (kind, tpl)], capture_output=True, text=True,
                           env=dict(os.environ, KUBECONFIG="/dev/null"))
    finally:
        os.unlink(f.name)
    if r.returncode:
        fail("template: " + r.stderr.strip())
    sys.stdout.write(r.stdout)


def selector_match(sel, labels):
    terms = re.findall(r"(?:[^,(]|\([^)]*\))+", sel)
    for t in terms:
        t = t.strip()
        m = re.fullmatch(r"(\S+)\s+(in|notin)\s+\(([^)]*)\)", t)
        if m:
            vals = [v.strip() for v in m.group(3).split(",")]
            has = m.group(1) in labels and labels[m.group(1)] in vals
            if has != (m.group(2) == "in"):
                return False
            continue
        m = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", t)
        if m:
            eq = labels.get(m.group(1)) == m.group(3)
            if eq != (m.group(2) != "!="):
                return False
            continue
        if t.startswith("!"):
            if t[1:] in labels:
                return False
        elif t not in labels:
            return False
    return True


def main(argv):
    log_argv(argv)
    args, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a.split("=", 1)[0] in GLOBALS:
            if "=" not in a:
                i += 1
        else:
            args.append(a)
        i += 1
    verb, rest = args[0], args[1:]
    opts, pos, j = {}, [], 0
    while j < len(rest):
        a = rest[j]
        if a in ("-n", "-o", "-c", "-l", "-f", "--raw"):
            opts[a] = rest[j + 1]
            j += 2
            continue
        if a.startswith("-o") and len(a) > 2:
            opts["-o"] = a[2:]
        elif a in ("-A", "-i", "-q"):
            opts[a] = True
        else:
            pos.append(a)
        j += 1
    ctx_ns = open(os.path.join(D, "context-ns")).read().strip() \
        if os.path.exists(os.path.join(D, "context-ns")) else "default"
    ns = opts.get("-n", ctx_ns)

    if verb == "get" and "--raw" in opts:
        uri = opts["--raw"]
        if uri == "/version":
            sys.stdout.write(open(os.path.join(D, "version.json")).read())
            return
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/ephemeralcontainers", uri)
        if not m:
            fail("fake kubectl: unexpected URI " + uri)
        pod = pod_view(m.group(1), m.group(2))
        if minor() >= 22:
            out = {"kind": "Pod", "apiVersion": "v1"}
            out.update({k: v for k, v in pod.items() if k not in ("kind", "apiVersion")})
        else:
            out = {"kind": "EphemeralContainers", "apiVersion": "v1",
                   "metadata": {"name": m.group(2), "namespace": m.group(1),
                                "resourceVersion": pod["metadata"]["resourceVersion"]},
                   "ephemeralContainers": pod["spec"].get("ephemeralContainers")}
        sys.stdout.write(json.dumps(out, separators=(",", ":")))
        return
    if verb == "replace" and "--raw" in opts:
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/ephemeralcontainers",
                         opts["--raw"])
        d = pod_dir(m.group(1), m.group(2))
        if os.path.exists(os.path.join(d, "conflict")) and \
                not os.path.exists(os.path.join(d, ".conflicted")):
            open(os.path.join(d, ".conflicted"), "w").close()
            fail('Operation cannot be fulfilled on pods "%s": the object has been modified; '
                 "please apply your changes to the latest version and try again" % m.group(2))
        body = json.load(open(opts["-f"]))
        if minor() >= 22:
            assert body["kind"] == "Pod", body.get("kind")
            new = body["spec"]["ephemeralContainers"]
        else:
            assert body["kind"] == "EphemeralContainers", body.get("kind")
            new = body["ephemeralContainers"]
        old = load(os.path.join(d, "ecs.json"), [])
        names = [c["name"] for c in new]
        if len(set(names)) != len(names):
            fail("spec.ephemeralContainers: Duplicate value")
        for c in old:  # existing ones may be neither removed nor changed
            if c not in new:
                fail("ephemeral containers may not be changed or removed")
        added = [c for c in new if c not in old]
        if len(added) != 1:
            fail("fake kubectl: %d containers added" % len(added))
        (ec,) = added
        if not set(ec) <= ALLOWED_EC:
            fail("unknown fields %s" % (set(ec) - ALLOWED_EC))
        if minor() < 21 and "securityContext" in ec:
            fail("securityContext: Forbidden: cannot be set for an Ephemeral Container")
        json.dump(old + [ec], open(os.path.join(d, "ecs.json"), "w"))
        with open(os.path.join(d, "put-%s.json" % ec["name"]), "w") as f:
            json.dump(body, f)
        return
    if verb == "get":
        what = pos[0]
        if what in ("pods", "pod") and len(pos) == 1:
            items = []
            root = os.path.join(D, "pods")
            for pns in sorted(os.listdir(root)):
                if not opts.get("-A") and pns != ns:
                    continue
                for name in sorted(os.listdir(os.path.join(root, pns))):
                    p = pod_view(pns, name)
                    if selector_match(opts.get("-l", ""), p["metadata"].get("labels", {})):
                        items.append(p)
            render({"apiVersion": "v1", "kind": "List", "items": items}, opts["-o"])
            return
        if what in ("pod", "pods"):
            render(pod_view(ns, pos[1]), opts["-o"])
            return
        kind, _, name = what.partition("/")
        sub = {"deployment.apps": "deployments", "statefulset.apps": "statefulsets"}.get(kind)
        obj = load(os.path.join(D, sub or "-", ns, name + ".json")) if sub else None
        if obj is None:
            fail('%s "%s" not found (NotFound)' % (kind, name))
        render(obj, opts["-o"])
        return
    if verb == "logs":
        d = pod_dir(ns, pos[0])
        f = ("probe.txt" if opts["-c"].endswith("-uid")
             else "pidprobe.txt" if opts["-c"].endswith("-pid") else "logs.txt")
        sys.stdout.write(open(os.path.join(d, f)).read())
        return
    if verb == "attach":
        d = pod_dir(ns, pos[0])
        c = opts["-c"]
        if os.path.exists(os.path.join(d, "attach-fails")) and \
                not os.path.exists(os.path.join(d, ".attach-failed")):
            open(os.path.join(d, ".attach-failed"), "w").close()
            sys.exit(1)
        data = sys.stdin.buffer.read()
        open(os.path.join(d, "stdin-%s.bin" % c), "wb").write(data)
        if not data:
            with open(os.path.join(d, "attach.log"), "a") as f:
                f.write("empty\n")
        open(os.path.join(d, "attached-" + c), "w").close()
        return
    if verb == "create":
        if os.path.exists(os.path.join(D, "create-fails")):
            fail('events.events.k8s.io is forbidden: User "u" cannot create resource', 1)
        body = sys.stdin.read()
        doc = json.loads(body)  # the plugin must write JSON
        if (os.path.exists(os.path.join(D, "events-group-forbidden"))
                and doc.get("apiVersion") == "events.k8s.io/v1"):
            fail('events.events.k8s.io '
                 'is forbidden: User "u" cannot create resource "events" in API group '
                 '"events.k8s.io" in the namespace "shop"', 1)
        os.makedirs(os.path.join(D, "events"), exist_ok=True)
        fd, _ = tempfile.mkstemp(suffix=".json", dir=os.path.join(D, "events"))
        os.write(fd, body.encode())
        os.close(fd)
        return
    fail("fake kubectl: unexpected " + verb)


main(sys.argv[1:])
