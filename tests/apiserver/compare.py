#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compare.py REAL_URL REAL_CA REAL_TOKEN STANDIN_URL STANDIN_CA STANDIN_TOKEN NS POD

Keeps the stand-in (tests/k8s/apiserver.py) honest: sends the same probes (Event creates and
patches the apiserver must accept or refuse, a pod GET, a non-existent pod, a PATCH in plain
JSON) to a real kube-apiserver and to the stand-in, and compares the status codes. A difference is
a failure unless it is one the stand-in's header documents as deliberately stricter (listed in
STRICTER below). Prints "ok standin-agrees-NAME" / "FAIL standin-agrees-NAME: ..." per probe.
Both servers need NS to exist and POD to be a pod they know; the token may create, patch and
get events and get pods in NS.
"""
import json
import ssl
import sys
import urllib.error
import urllib.request

real = dict(zip(("url", "ca", "token"), sys.argv[1:4]))
standin = dict(zip(("url", "ca", "token"), sys.argv[4:7]))
ns, pod = sys.argv[7], sys.argv[8]

# Probes where the stand-in answers differently on purpose: name -> (real, stand-in).
STRICTER = {
    # Unknown fields: 1.20 drops them silently; the stand-in answers as fieldValidation=Strict.
    "v1-unknown-field": (201, 400),
    "core-unknown-field": (201, 400),
    # Rules of the current upstream validation (pkg/apis/core/validation/events.go, see
    # /work/shared/reference/kubernetes.md 1.3) that 1.20.2 does not enforce: an events.k8s.io
    # Event about an object in another namespace, and ValidateEventUpdate's immutable fields
    # and series.count >= 2 on a PATCH.
    "v1-regarding-other-ns": (201, 422),
    "patch-series-count-1": (200, 422),
    "patch-note-immutable": (200, 422),
}


def call(srv, method, path, body=None, ctype="application/json"):
    ctx = ssl.create_default_context(cafile=srv["ca"])
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    req = urllib.request.Request(srv["url"] + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + srv["token"])
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


V1 = "/apis/events.k8s.io/v1/namespaces/%s/events" % ns
CORE = "/api/v1/namespaces/%s/events" % ns
MP = "application/merge-patch+json"


def good(name):
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name},
            "eventTime": "2026-01-01T00:00:00.000001Z",
            "reportingController": "clrattach.dev/clrattach", "reportingInstance": "i",
            "action": "AttachProfiler", "reason": "ProfilerAttached", "type": "Normal",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": ns},
            "note": "n"}


def mut(name, fn):
    d = good(name)
    fn(d)
    return d


def core(name, **extra):
    d = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
         "involvedObject": {"kind": "Pod", "name": pod, "namespace": ns},
         "reason": "R", "message": "m", "type": "Normal", "source": {"component": "c"},
         "count": 1}
    d.update(extra)
    return d


def ser(count, t="2026-01-01T00:00:01.000001Z"):
    return {"series": {"count": count, "lastObservedTime": t}}


# (name, method, path, body, content type); names carry a suffix per server run below.
def probes(sfx):
    head = "cmp-head" + sfx
    return [
        ("v1-create", "POST", V1, good(head), None),
        ("v1-conflict", "POST", V1, good(head), None),
        ("v1-time-no-fraction", "POST", V1,
         mut("cmp-a" + sfx, lambda d: d.update(eventTime="2026-01-01T00:00:00Z")), None),
        ("v1-time-millis", "POST", V1,
         mut("cmp-b" + sfx, lambda d: d.update(eventTime="2026-01-01T00:00:00.123Z")), None),
        ("v1-no-event-time", "POST", V1, mut("cmp-c" + sfx, lambda d: d.pop("eventTime")), None),
        ("v1-no-controller", "POST", V1,
         mut("cmp-d" + sfx, lambda d: d.pop("reportingController")), None),
        ("v1-bad-controller", "POST", V1,
         mut("cmp-e" + sfx, lambda d: d.update(reportingController="a/b/c")), None),
        ("v1-bad-type", "POST", V1, mut("cmp-f" + sfx, lambda d: d.update(type="Info")), None),
        ("v1-deprecated-count", "POST", V1,
         mut("cmp-g" + sfx, lambda d: d.update(deprecatedCount=1)), None),
        ("v1-reason-129", "POST", V1, mut("cmp-h" + sfx, lambda d: d.update(reason="R" * 129)),
         None),
        ("v1-note-1025", "POST", V1, mut("cmp-i" + sfx, lambda d: d.update(note="n" * 1025)),
         None),
        ("v1-note-1024", "POST", V1, mut("cmp-j" + sfx, lambda d: d.update(note="n" * 1024)),
         None),
        ("v1-regarding-other-ns", "POST", V1,
         mut("cmp-k" + sfx, lambda d: d["regarding"].update(namespace="other")), None),
        ("v1-bad-name", "POST", V1, mut("Bad_Name" + sfx, lambda d: None), None),
        ("v1-body-other-ns", "POST", V1,
         mut("cmp-l" + sfx, lambda d: d["metadata"].update(namespace="other")), None),
        ("v1-series-count-1", "POST", V1, mut("cmp-m" + sfx, lambda d: d.update(ser(1))), None),
        ("v1-not-json", "POST", V1, b"not json", None),
        ("v1-unknown-field", "POST", V1, mut("cmp-n" + sfx, lambda d: d.update(foo=1)), None),
        ("core-create", "POST", CORE, core("cmp-o" + sfx), None),
        ("core-other-ns", "POST", CORE,
         core("cmp-p" + sfx, involvedObject={"kind": "Pod", "name": pod, "namespace": "other"}),
         None),
        ("core-event-time-needs-controller", "POST", CORE,
         core("cmp-q" + sfx, eventTime="2026-01-01T00:00:00.000001Z"), None),
        ("core-unknown-field", "POST", CORE, core("cmp-r" + sfx, foo=1), None),
        ("patch-plain-json-415", "PATCH", V1 + "/" + head, ser(2), "application/json"),
        ("patch-unknown-404", "PATCH", V1 + "/nope" + sfx, ser(2), MP),
        ("patch-series-count-1", "PATCH", V1 + "/" + head, ser(1), MP),
        ("patch-note-immutable", "PATCH", V1 + "/" + head, {"note": "changed"}, MP),
        ("patch-series", "PATCH", V1 + "/" + head, ser(2), MP),
        ("patch-series-core", "PATCH", CORE + "/" + head, ser(3, "2026-01-01T00:00:02.000001Z"),
         MP),
        ("pod-get", "GET", "/api/v1/namespaces/%s/pods/%s" % (ns, pod), None, None),
        ("pod-unknown-404", "GET", "/api/v1/namespaces/%s/pods/no-such-pod" % ns, None, None),
    ]


failed = 0
sfx = ".x%d" % (abs(hash(real["url"])) % 100000)
for (name, method, path, body, ctype), (_, m2, p2, b2, c2) in zip(probes(sfx), probes(sfx)):
    a, abody = call(real, method, path, body, ctype or "application/json")
    b, bbody = call(standin, m2, p2, b2, c2 or "application/json")
    want = STRICTER.get(name)
    if a == b and want is None:
        print("ok standin-agrees-%s (%d)" % (name, a))
    elif want is not None and (a, b) == want:
        print("ok standin-agrees-%s (real %d, stand-in %d: stricter on purpose)" % (name, a, b))
    else:
        failed += 1
        print("FAIL standin-agrees-%s: real %d, stand-in %d; real said %s" %
              (name, a, b, abody[:300].decode("utf-8", "replace")))
sys.exit(1 if failed else 0)
