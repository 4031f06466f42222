#!/usr/bin/env bash
# deploy/components/otel rendered by `kubectl kustomize` on deploy/base: the sidecar runs
# `watch --otel` with an endpoint, its options valid for clrattach's own parser, the pod's
# attributes in its environment (the Downward API and the app container's name), the agent
# delivered into the emptyDir the app uses as its TMPDIR, and Pod Security "restricted" holds.
. "$(dirname "$0")/component_lib.sh"
render_component otel || exit 1
python3 - "$K/out.yaml" "$ROOT/$BUILD/clrattach" <<'PY'
import subprocess, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
spec = [d for d in docs if d.get("kind") == "Deployment"][0]["spec"]["template"]["spec"]
failed = 0
def check(name, cond, why=""):
    global failed
    print(("ok " if cond else "FAIL ") + name + ("" if cond else ": %s" % (why,)))
    failed += 0 if cond else 1
cs = {c["name"]: c for c in spec["containers"]}
app, side = cs["app"], cs["clrattach"]
args = side["args"]
opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}
check("otel-component-watch-otel", args[:2] == ["watch", "--otel"] and
      opt.get("--endpoint", "").startswith("http") and "--profiler" not in opt, args)
env = {e["name"]: e for e in side.get("env", [])}
check("otel-component-pod-attributes",
      all(k in env for k in ("CLRATTACH_POD_NAME", "CLRATTACH_POD_NAMESPACE")) and
      env.get("CLRATTACH_CONTAINER_NAME", {}).get("value") == "app", env)
app_env = {e["name"]: e.get("value") for e in app.get("env", [])}
check("otel-component-delivered-to-app-tmpdir", app_env.get("TMPDIR") == opt.get("--target-dir"),
      (app_env.get("TMPDIR"), opt.get("--target-dir")))
check("otel-component-shared-pidns", spec.get("shareProcessNamespace") is True)
r = subprocess.run([sys.argv[2]] + args + ["--help"], capture_output=True, text=True)
check("otel-component-args-parse", r.returncode == 0 and "--otel" in r.stdout, r.stderr)
sc = side.get("securityContext", {})
check("otel-component-restricted", sc.get("allowPrivilegeEscalation") is False and
      sc.get("capabilities", {}).get("drop") == ["ALL"] and sc.get("runAsNonRoot"), sc)
sys.exit(1 if failed else 0)
PY
