#!/usr/bin/env bash
# deploy/components/listen rendered by `kubectl kustomize` on deploy/base: the pod shares no PID
# namespace, the emptyDir is mounted in the app and the sidecar, DOTNET_DiagnosticPorts on the
# app names the socket the sidecar listens on (the same path in both views), the sidecar runs
# `watch --listen` with its options valid for clrattach's own parser, and Pod Security
# "restricted" holds for every container.
. "$(dirname "$0")/component_lib.sh"
render_component listen || exit 1
python3 - "$K/out.yaml" "$ROOT/$BUILD/clrattach" <<'PY'
import subprocess, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
dep = [d for d in docs if d.get("kind") == "Deployment"][0]
spec = dep["spec"]["template"]["spec"]
failed = 0
def check(name, cond, why=""):
    global failed
    if cond:
        print("ok " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))
cs = {c["name"]: c for c in spec["containers"]}
app, side = cs.get("app"), cs.get("clrattach")
check("listen-component-no-shared-pidns", spec.get("shareProcessNamespace") is False)
vols = {v["name"]: v for v in spec.get("volumes", [])}
check("listen-component-emptydir", "emptyDir" in vols.get("clrattach-diag", {}))
def mount(c):
    return {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}.get("clrattach-diag")
check("listen-component-mounted-both", mount(app) and mount(app) == mount(side), (mount(app), mount(side)))
env = {e["name"]: e.get("value") for e in app.get("env", [])}
ports = env.get("DOTNET_DiagnosticPorts", "")
args = side["args"]
opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}
check("listen-component-port-matches", args[0] == "watch" and
      ports.split(",")[0] == opt.get("--listen") and
      opt.get("--listen", "").startswith(mount(side) + "/") and
      opt.get("--deliver-dir") == mount(side) and opt.get("--app-dir") == mount(app),
      (ports, opt))
# Options the sidecar's /proc-based selectors would need are gone (the args list is replaced).
check("listen-component-no-proc-selectors",
      not any(a.startswith(("--uid", "--target-dir", "--match-comm", "--match-cgroup")) for a in args), args)
# clrattach's own parser takes the args: --help after them ends with 0 only when every option
# before it was known and its value valid (a bad one exits 2 first).
r = subprocess.run([sys.argv[2]] + args + ["--help"], capture_output=True, text=True)
check("listen-component-args-parse", r.returncode == 0 and "--listen" in r.stdout, r.stderr)
# Pod Security "restricted" for every container.
pod_sc = spec.get("securityContext", {})
for c in spec["containers"] + spec.get("initContainers", []):
    sc = c.get("securityContext", {})
    ok = (sc.get("allowPrivilegeEscalation") is False and sc.get("capabilities", {}).get("drop") == ["ALL"]
          and (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot"))
          and (sc.get("seccompProfile") or pod_sc.get("seccompProfile"))
          and not sc.get("capabilities", {}).get("add"))
    check("listen-component-restricted-" + c["name"], ok, sc)
# The sample profiler writes its report where the app's CLRPROBE_OUT says (getenv()): with the
# app's root read-only, that must be on a writable mount of the app, or every startup load fails
# with ERROR_WRITE_PROTECT.
app_ro = app.get("securityContext", {}).get("readOnlyRootFilesystem")
out = env.get("CLRPROBE_OUT") or ""
writable = [m["mountPath"].rstrip("/") + "/" for m in app.get("volumeMounts", []) if not m.get("readOnly")]
check("listen-component-report-writable",
      not opt.get("--profiler", "").startswith("/profilers/") or not app_ro or
      any(out.startswith(w) for w in writable), (out, writable))
# Same uid in both: the socket can stay owner-only.
uid = lambda c: c.get("securityContext", {}).get("runAsUser", pod_sc.get("runAsUser"))
check("listen-component-same-uid", uid(app) == uid(side) and uid(side) not in (None, 0))
sys.exit(1 if failed else 0)
PY
