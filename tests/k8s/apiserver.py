#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small stand-in for kube-apiserver, enough to test how clrattach reports Events.

Serves HTTPS on 127.0.0.1 (ephemeral port, written to --port-file) with the certificates that
gen-certs.sh put in --ca-dir. It checks the bearer token against --token-file (re-read on every
request, so a test can rotate it), validates Event creates the way the apiserver does
(pkg/apis/core/validation/events.go, see /work/shared/reference/kubernetes.md 1.3), stores the
events, answers pod GETs, applies series PATCHes (merge patches only), and records every request.

Unknown fields are rejected with 400, as with fieldValidation=Strict, so that a typo in the
client shows up in tests instead of being dropped.

How closely it follows a real server. The rules marked [1.20] were checked against kube-apiserver
1.20.2 built from Debian bookworm's source (tests/apiserver/run.sh runs clrattach against it,
and compares this stand-in's answers with the real server's for the probes listed there):
  [1.20] authentication first (401 Status "Unauthorized"), then AUTHORIZATION BEFORE ROUTING: a
         request the token may not make gets 403 Forbidden with the RBAC message, whatever the
         path, even one in a group the server does not serve (never the 404 that would send a
         client to the core/v1 fallback). Every token may do everything unless /_test/deny says
         otherwise.
  [1.20] what is not served (POST /_test/unserved): a group version whose group still serves
         another version ("events.k8s.io/v1", as with --runtime-config=events.k8s.io/v1=false)
         answers a Status 404 NotFound with empty details; a group none of whose versions is
         served ("events.k8s.io", as with events.k8s.io/v1beta1=false too) answers the mux's
         text/plain "404 page not found".
  [1.20] a pod GET answers 404 NotFound for a pod it does not know (the defaults below, --pod,
         POST /_test/pods), 403 when denied, else the pod with a uid derived from its name.
  [1.20] PATCH with Content-Type application/json is 415 UnsupportedMediaType.
  [1.20] Event creates (ValidateEventCreate on both groups: required fields, lengths in bytes,
         qualified reportingController, type, deprecated* unset, series.count >= 2; MicroTime
         parsing with exactly six fractional digits; 409 for a name that exists; 400 for a body
         namespace other than the URL's) and 404 for a PATCH of an unknown Event.
Stricter than 1.20, on purpose (what newer servers or stricter settings refuse):
  [1.25+ fieldValidation=Strict] unknown fields are 400 (1.20 drops them silently, 1.23+ drops
         them with a Warning header), so a typo in the client shows up here.
  [current upstream validation, kubernetes.md 1.3; 1.20.2 answers 201/200] an events.k8s.io
         Event whose regarding.namespace is not the Event's namespace is 422; a PATCH is
         validated by ValidateEventUpdate: only series and metadata may change, and series.count
         must stay >= 2.
  [stricter than every version] PATCH takes application/merge-patch+json only: a real server
         also takes strategic-merge-patch+json and json-patch+json; clrattach sends merge patches.
Not modelled: HTTP/2 (Python's http.server speaks HTTP/1.1 only; a real apiserver negotiates h2
through ALPN, and the glibc build of clrattach then uses it), watches, list selectors,
resourceVersion semantics, admission.

Test endpoints (no auth):
  GET  /_test/requests   every API request so far: method, path, token, body, status and
                         response body
  GET  /_test/events     the stored events (events.k8s.io/v1 form, plus "postedAs")
  POST /_test/faults     replace the fault list (JSON array, see Fault below)
  POST /_test/reset      clear requests, events, faults, denials and unserved versions (the
                         known pods stay)
  POST /_test/reset-events  drop the stored events only (as the apiserver's event TTL does)
  POST /_test/deny       replace the denied requests: ["VERB GROUP/RESOURCE", ...], e.g.
                         ["get /pods", "create events.k8s.io/events"] ("" group for core)
  POST /_test/unserved   replace what is not served: ["events.k8s.io/v1"] (a version) or
                         ["events.k8s.io"] (the whole group)
  POST /_test/pods       replace the known pods: ["NS/NAME", ...]
PATCH .../events/{name} (both groups) takes application/merge-patch+json only (415 otherwise),
404 for an unknown name, applies the patch to the object in the URL's group form, and validates the result as a
create plus, on events.k8s.io, the update rule that only series and metadata may change.
A fault is {"match": "<substring of 'METHOD /path'>", "times": N, "do": KIND, ...}; the first
fault that matches and has times left is used. KIND is one of:
  status        answer "status" with a canned Status body (403 Forbidden with the RBAC message,
                404 NotFound with empty details (group not served), 409, 422, 500, 503), or
                with "body" when the fault has one
  text          answer "status" with the text/plain "text" (a proxy's or mux's 404), or with the
                media type "content_type" when the fault has one
  429           text/plain "Too many requests" with Retry-After: "retry_after" (default 1)
  rotate401     write a new token to the token file, revoke the old one, answer 401
  store500      handle the request (the event is stored) but answer 500: a lost response
  hang          sleep "seconds" (default 30) before closing without an answer
  expire        delete the event the request's path names, then handle the request normally
"""
import argparse
import json
import os
import re
import secrets
import socket
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUB = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
MICROTIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")

EVENTS_V1_FIELDS = {
    "apiVersion", "kind", "metadata", "eventTime", "series", "reportingController",
    "reportingInstance", "action", "reason", "regarding", "related", "note", "type",
    "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount",
}
CORE_FIELDS = {
    "apiVersion", "kind", "metadata", "involvedObject", "reason", "message", "source",
    "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series", "action",
    "related", "reportingComponent", "reportingInstance",
}
REF_FIELDS = {"apiVersion", "kind", "name", "namespace", "uid", "fieldPath", "resourceVersion"}
META_FIELDS = {"name", "generateName", "namespace", "labels", "annotations"}


def is_subdomain(s):
    return isinstance(s, str) and 0 < len(s) <= 253 and DNS1123_SUB.match(s) is not None


def merge_patch(target, patch):
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def is_qualified(s):
    if not isinstance(s, str) or not s:
        return False
    parts = s.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not is_subdomain(parts[0]):
        return False
    name = parts[-1]
    return len(name) <= 63 and QUALIFIED_NAME.match(name) is not None


def blen(s):
    """Go's len(): bytes."""
    return len(s.encode("utf-8")) if isinstance(s, str) else 0


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return body


class Invalid(Exception):
    def __init__(self, code, body):
        super().__init__(body.get("message"))
        self.code = code
        self.body = body


def bad_request(msg):
    return Invalid(400, status_body(400, "BadRequest", msg))


def validate_event(group, ns, obj):
    """Returns the event in events.k8s.io/v1 form, or raises Invalid."""
    strict_group = group == "events.k8s.io"
    if not isinstance(obj, dict):
        raise bad_request("Event in version \"v1\" cannot be handled as a Event: not an object")
    want_api = "events.k8s.io/v1" if strict_group else "v1"
    if obj.get("apiVersion") != want_api or obj.get("kind") != "Event":
        raise bad_request("the API version in the data (%s) does not match the expected API "
                          "version (%s)" % (obj.get("apiVersion"), want_api))
    allowed = EVENTS_V1_FIELDS if strict_group else CORE_FIELDS
    unknown = sorted(set(obj) - allowed)
    meta = obj.get("metadata") or {}
    if isinstance(meta, dict):
        unknown += ["metadata." + k for k in sorted(set(meta) - META_FIELDS)]
    ref_key = "regarding" if strict_group else "involvedObject"
    ref = obj.get(ref_key) or {}
    if isinstance(ref, dict):
        unknown += [ref_key + "." + k for k in sorted(set(ref) - REF_FIELDS)]
    if unknown:
        raise bad_request("strict decoding error: " +
                          ", ".join('unknown field "%s"' % u for u in unknown))
    series = obj.get("series")
    times = [obj.get("eventTime")]
    if isinstance(series, dict):
        times.append(series.get("lastObservedTime"))
    for v in times:
        if v is not None:
            if not isinstance(v, str) or not MICROTIME.match(v):
                raise bad_request(
                    'Event in version "v1" cannot be handled as a Event: parsing time "%s" as '
                    '"2006-01-02T15:04:05.000000Z07:00": cannot parse' % v)
    if not isinstance(meta, dict) or not isinstance(ref, dict):
        raise bad_request("metadata and %s must be objects" % ref_key)
    if meta.get("namespace") not in (None, "", ns):
        raise bad_request("the namespace of the provided object does not match the namespace "
                          "sent on the request")
    name = meta.get("name") or ""

    # Field names in causes are the internal ones (kubernetes issue #94748).
    causes = []

    def cause(reason, field, message):
        causes.append({"reason": reason, "message": message, "field": field})

    if not name and not meta.get("generateName"):
        cause("FieldValueRequired", "metadata.name", "Required value: name or generateName "
              "is required")
    elif name and strict_group and not is_subdomain(name):
        cause("FieldValueInvalid", "metadata.name", 'Invalid value: "%s": a lowercase RFC 1123 '
              "subdomain must consist of lower case alphanumeric characters, '-' or '.'" % name)
    elif name and ("/" in name or "%" in name or name in (".", "..")):
        cause("FieldValueInvalid", "metadata.name", 'Invalid value: "%s": may not contain '
              "'/' or '%%'" % name)

    event_time = obj.get("eventTime")
    strict = strict_group or bool(event_time)
    ctrl_key = "reportingController" if strict_group else "reportingComponent"
    ref_ns = ref.get("namespace") or ""
    if strict:
        if not ref_ns:
            if ns not in ("default", "kube-system"):
                cause("FieldValueInvalid", "involvedObject.namespace",
                      'Invalid value: "": does not match event.namespace')
        elif ref_ns != ns:
            cause("FieldValueInvalid", "involvedObject.namespace",
                  'Invalid value: "%s": does not match event.namespace' % ref_ns)
        ctrl = obj.get(ctrl_key) or ""
        if not ctrl:
            cause("FieldValueRequired", ctrl_key, "Required value")
        elif not is_qualified(ctrl):
            cause("FieldValueInvalid", ctrl_key, 'Invalid value: "%s": a qualified name must '
                  "consist of alphanumeric characters, '-', '_' or '.'" % ctrl)
        for key in ("reportingInstance", "action", "reason"):
            v = obj.get(key) or ""
            if not v:
                cause("FieldValueRequired", key, "Required value")
            elif blen(v) > 128:
                cause("FieldValueInvalid", key, 'Invalid value: "": can have at most 128 '
                      "characters")
        note = obj.get("note" if strict_group else "message") or ""
        if blen(note) > 1024:
            cause("FieldValueInvalid", "message", 'Invalid value: "": can have at most 1024 '
                  "characters")
    elif ref_ns and ref_ns != ns:
        cause("FieldValueInvalid", "involvedObject.namespace",
              'Invalid value: "%s": does not match event.namespace' % ref_ns)
    if strict_group:
        if not event_time:
            cause("FieldValueRequired", "eventTime", "Required value")
        if obj.get("type") not in ("Normal", "Warning"):
            cause("FieldValueNotSupported", "type", 'Unsupported value: "%s": supported '
                  'values: "Normal", "Warning"' % obj.get("type"))
        for dep, field in (("deprecatedSource", "source"),
                           ("deprecatedFirstTimestamp", "firstTimestamp"),
                           ("deprecatedLastTimestamp", "lastTimestamp"),
                           ("deprecatedCount", "count")):
            if obj.get(dep) not in (None, 0, {}, ""):
                cause("FieldValueInvalid", field, "Invalid value: needs to be unset")
        series = obj.get("series")
        if series is not None:
            count = series.get("count") if isinstance(series, dict) else None
            if not isinstance(count, int) or isinstance(count, bool) or count < 2:
                cause("FieldValueInvalid", "series.count", "Invalid value: should be at least 2")
            if not isinstance(series, dict) or not series.get("lastObservedTime"):
                cause("FieldValueRequired", "series.lastObservedTime", "Required value")
    if causes:
        kind = "Event.events.k8s.io" if strict_group else "Event"
        errs = ["%s: %s" % (c["field"], c["message"]) for c in causes]
        msg = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        details = {"name": name, "kind": "Event", "causes": causes}
        if strict_group:
            details["group"] = "events.k8s.io"
        raise Invalid(422, status_body(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name,
                                                                                    msg), details))
    if strict_group:
        ev = dict(obj)
    else:  # pkg/apis/events/v1/conversion.go, the other way round
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
              "regarding": ref, "note": obj.get("message"), "reason": obj.get("reason"),
              "type": obj.get("type"), "eventTime": event_time, "action": obj.get("action"),
              "reportingController": obj.get("reportingComponent"),
              "reportingInstance": obj.get("reportingInstance")}
        if obj.get("series") is not None:
            ev["series"] = obj.get("series")
    ev["metadata"] = dict(meta, namespace=ns)
    return ev


def to_core(ev):
    out = {"apiVersion": "v1", "kind": "Event", "metadata": ev["metadata"],
           "involvedObject": ev.get("regarding"), "message": ev.get("note"),
           "reason": ev.get("reason"), "type": ev.get("type"), "eventTime": ev.get("eventTime"),
           "action": ev.get("action"), "reportingComponent": ev.get("reportingController"),
           "reportingInstance": ev.get("reportingInstance")}
    if ev.get("series") is not None:
        out["series"] = ev["series"]
    return out


# The pods the clients in tests/ report about; any other name is 404 as on a real server.
DEFAULT_PODS = ["shop/orders-api-1", "shop/orders-api-2", "shop/orders-7d9c8b6f5-x2x7k",
                "shop/orders-eph"]
SA_USER = "system:serviceaccount:{ns}:default"


def request_attributes(method, path):
    """What the apiserver's RequestInfoFactory makes of a request, before any routing:
    (verb, group, version, resource, namespace, name), or None for a non-resource path."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 2 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
        if not rest:  # the namespace object itself
            rest = ["namespaces", ns]
    if not rest:
        return None
    resource, name = rest[0], (rest[1] if len(rest) > 1 else "")
    verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update",
            "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
    return verb, group, version, resource, ns, name


def forbidden(attrs):
    """The RBAC denial as kube-apiserver words it (k8s.io/apiserver endpoints/handlers/
    responsewriters, forbidden())."""
    verb, group, _, resource, ns, name = attrs
    what = resource + ("." + group if group else "")
    user = SA_USER.format(ns=ns or "default")
    msg = '%s%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"' % (
        what, ' "%s"' % name if name else "", user, verb, resource, group)
    if ns:
        msg += ' in the namespace "%s"' % ns
    details = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return status_body(403, "Forbidden", msg, details)


def pod_uid(ns, name):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "pod/%s/%s" % (ns, name)))


class State:
    def __init__(self, token_file):
        self.lock = threading.Lock()
        self.token_file = token_file
        self.requests = []
        self.events = {}
        self.faults = []
        self.revoked = set()
        self.rv = 1000
        self.denied = set()
        self.unserved = set()
        self.pods = set(DEFAULT_PODS)

    def reset(self):
        with self.lock:
            self.requests, self.events, self.faults = [], {}, []
            self.denied, self.unserved = set(), set()

    def current_token(self):
        try:
            with open(self.token_file) as f:
                return f.read().strip()
        except OSError:
            return None

    def rotate_token(self):
        """What kubelet does: a new token behind the same path, swapped in atomically."""
        old = self.current_token()
        new = "rotated-" + secrets.token_hex(16)
        tmp = self.token_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(new + "\n")
        os.replace(tmp, self.token_file)
        if old:
            self.revoked.add(old)

    def take_fault(self, what):
        with self.lock:
            for f in self.faults:
                if f.get("match", "") in what and f.get("times", 1) > 0:
                    f["times"] = f.get("times", 1) - 1
                    return dict(f)
        return None


CANNED = {
    403: ("Forbidden", 'events.events.k8s.io is forbidden: User "system:serviceaccount:{ns}:'
          'default" cannot create resource "events" in API group "events.k8s.io" in the '
          'namespace "{ns}"', {"group": "events.k8s.io", "kind": "events"}),
    404: ("NotFound", "the server could not find the requested resource", {}),
    409: ("AlreadyExists", 'events "{name}" already exists', {"name": "{name}",
                                                             "kind": "events"}),
    422: ("Invalid", 'Event.events.k8s.io "{name}" is invalid: reason: Required value',
          {"name": "{name}", "group": "events.k8s.io", "kind": "Event",
           "causes": [{"reason": "FieldValueRequired", "message": "Required value",
                       "field": "reason"}]}),
    500: ("InternalError", "Internal error occurred: etcdserver: request timed out", None),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request", None),
}


def canned(code, ns, name):
    reason, msg, details = CANNED.get(code, ("InternalError", "injected failure", None))
    fill = lambda s: s.replace("{ns}", ns).replace("{name}", name)
    if details is not None:
        details = {k: (fill(v) if isinstance(v, str) else v) for k, v in details.items()}
    return status_body(code, reason, fill(msg), details)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle on, the body waits for the
    # client's delayed ACK (40 ms), which would show in every timing of a report.
    disable_nagle_algorithm = True
    server_version = "fake-kube-apiserver/1.0"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: " + fmt % args + "\n")

    def setup(self):
        super().setup()
        self.connection.settimeout(60)

    def send_json(self, code, obj, extra=None):
        self.response_body = obj
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        return code

    def send_text(self, code, text, extra=None, content_type=None):
        self.response_body = text
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type or "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        return code

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 3 * 1024 * 1024:
            raise bad_request("request entity too large")
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        st = self.server.state
        url = urlsplit(self.path)
        path = url.path
        raw = self.read_body()
        if path.startswith("/_test/"):
            return self.test_endpoint(method, path, raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        rec = {"method": method, "path": path, "query": url.query, "token": token,
               "content_type": self.headers.get("Content-Type"),
               "accept": self.headers.get("Accept"),
               "user_agent": self.headers.get("User-Agent"),
               "authorization_headers": len(self.headers.get_all("Authorization") or []),
               "body": body, "status": None}
        with st.lock:
            st.requests.append(rec)
            if self.server.request_log:
                # One line per API request, flushed at once: how a test whose client cannot
                # query /_test/ (a TLS 1.1-only server) learns whether anything got through.
                with open(self.server.request_log, "a") as f:
                    f.write("%s %s\n" % (method, path))
        self.response_body = None
        rec["status"] = self.answer(method, path, raw, body, token)
        rec["response"] = self.response_body

    def answer(self, method, path, raw, body, token):
        st = self.server.state
        m = re.match(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$", path)
        pod = (m.group(1), m.group(2)) if m else None
        m = re.match(r"^/(api/v1|apis/events\.k8s\.io/v1)/namespaces/([^/]+)/events$", path)
        events = (("" if m.group(1) == "api/v1" else "events.k8s.io"), m.group(2)) if m else None
        m = re.match(r"^/(api/v1|apis/events\.k8s\.io/v1)/namespaces/([^/]+)/events/([^/]+)$",
                     path)
        item = (("" if m.group(1) == "api/v1" else "events.k8s.io"), m.group(2), m.group(3)) \
            if m else None
        ns = (pod or events or ("default",))[-1 if not pod else 0]
        name = (body.get("metadata") or {}).get("name", "") if isinstance(body, dict) and \
            isinstance(body.get("metadata"), dict) else ""
        if item:
            ns, name = item[1], item[2]

        current = st.current_token()
        if not token or token != current or token in st.revoked:
            return self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        # Authorization runs before the request is routed (k8s.io/apiserver's handler chain:
        # WithAuthorization wraps the mux), so a denied request is 403 even where no handler
        # exists.
        attrs = request_attributes(method, path)
        if attrs:
            verb, group, version, resource = attrs[:4]
            if "%s %s/%s" % (verb, group, resource) in st.denied:
                return self.send_json(403, forbidden(attrs))
            if group and group in st.unserved:
                # No version of the group is served: the mux's NotFoundHandler, not a Status.
                return self.send_text(404, "404 page not found\n")
            if ("%s/%s" % (group, version) if group else version) in st.unserved:
                # The group is there but not this version: its handler's NotFound Status.
                return self.send_json(404, status_body(404, "NotFound", "the server could not "
                                                       "find the requested resource", {}))

        fault = st.take_fault("%s %s" % (method, path))
        kind = fault.get("do") if fault else None
        if kind == "hang":
            time.sleep(float(fault.get("seconds", 30)))
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return 0
        if kind == "rotate401":
            st.rotate_token()
            return self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        if kind == "429":
            return self.send_text(429, "Too many requests, please try again later.\n",
                                  {"Retry-After": str(fault.get("retry_after", 1))})
        if kind == "status":
            code = int(fault["status"])
            return self.send_json(code, fault.get("body") or canned(code, ns, name))
        if kind == "text":
            return self.send_text(int(fault["status"]), fault.get("text", ""),
                                  content_type=fault.get("content_type"))
        if kind == "expire" and item:
            with st.lock:
                st.events.pop((item[1], item[2]), None)
        if item and method == "PATCH":
            return self.patch_event(item, raw, body)

        if pod and method == "GET":
            pns, pname = pod
            if "%s/%s" % (pns, pname) not in st.pods:
                return self.send_json(404, status_body(
                    404, "NotFound", 'pods "%s" not found' % pname,
                    {"name": pname, "kind": "pods"}))
            return self.send_json(200, {
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": pname, "namespace": pns, "uid": pod_uid(pns, pname),
                             "resourceVersion": "1",
                             "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"containers": [{"name": "app", "image": "example/app:1"}]},
                "status": {"phase": "Running"}})
        if events and method == "GET":
            group, ens = events
            with st.lock:
                items = [e for (n_s, _), e in sorted(st.events.items()) if n_s == ens]
            if not group:
                items = [to_core(e) for e in items]
            return self.send_json(200, {
                "kind": "EventList", "apiVersion": "v1" if not group else "events.k8s.io/v1",
                "metadata": {"resourceVersion": str(st.rv)}, "items": items})
        if events and method == "POST":
            group, ens = events
            if not DNS1123_LABEL.match(ens):
                return self.send_json(404, status_body(404, "NotFound", 'namespaces "%s" not '
                                                       "found" % ens, {"name": ens,
                                                                       "kind": "namespaces"}))
            if not isinstance(body, dict):
                return self.send_json(400, status_body(
                    400, "BadRequest", "Event in version \"v1\" cannot be handled as a Event: "
                    "invalid character looking for beginning of value"))
            try:
                ev = validate_event(group, ens, body)
            except Invalid as ex:
                return self.send_json(ex.code, ex.body)
            ename = ev["metadata"].get("name") or (ev["metadata"].get("generateName", "ev") +
                                                   secrets.token_hex(3))
            with st.lock:
                if (ens, ename) in st.events:
                    what = "events.events.k8s.io" if group else "events"
                    return self.send_json(409, status_body(
                        409, "AlreadyExists", '%s "%s" already exists' % (what, ename),
                        {"name": ename, "group": group or None, "kind": "events"}
                        if group else {"name": ename, "kind": "events"}))
                st.rv += 1
                ev["metadata"] = dict(ev["metadata"], name=ename, uid=str(uuid.uuid4()),
                                      resourceVersion=str(st.rv),
                                      creationTimestamp=datetime.now(timezone.utc).strftime(
                                          "%Y-%m-%dT%H:%M:%SZ"))
                ev["postedAs"] = "events.k8s.io/v1" if group else "v1"
                st.events[(ens, ename)] = ev
            if kind == "store500":
                return self.send_json(500, canned(500, ns, name))
            out = {k: v for k, v in ev.items() if k != "postedAs"}
            return self.send_json(201, out if group else to_core(out))
        return self.send_json(404, status_body(404, "NotFound", "the server could not find "
                                               "the requested resource", {}))

    def patch_event(self, item, raw, patch):
        st = self.server.state
        group, ens, ename = item
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        # The apiserver picks the patch type from the media type before it looks anything up.
        if ctype != "application/merge-patch+json":
            return self.send_json(415, status_body(
                415, "UnsupportedMediaType", "the body of the request was in an unknown format "
                "- accepted media types include: application/merge-patch+json"))
        with st.lock:
            stored = st.events.get((ens, ename))
        if stored is None:
            what = "events.events.k8s.io" if group else "events"
            details = {"name": ename, "kind": "events"}
            if group:
                details["group"] = group
            return self.send_json(404, status_body(404, "NotFound", '%s "%s" not found' %
                                                   (what, ename), details))
        if not isinstance(patch, dict):
            return self.send_json(400, status_body(400, "BadRequest", "error decoding patch: "
                                                   "invalid JSON object"))
        base = {k: v for k, v in stored.items() if k != "postedAs"}
        if not group:
            base = to_core(base)
        merged = merge_patch(base, patch)
        server_meta = stored["metadata"]
        if not isinstance(merged.get("metadata"), dict) or \
                merged["metadata"].get("name") != ename:
            return self.send_json(400, status_body(400, "BadRequest", "the name of the object "
                                                   "does not match the name on the URL"))
        # Server-set metadata is not something a create may carry; validate without it.
        check = dict(merged, metadata={k: v for k, v in merged["metadata"].items()
                                       if k in META_FIELDS})
        check = {k: v for k, v in check.items() if v is not None}
        try:
            ev = validate_event(group, ens, check)
            if group:
                # ValidateEventUpdate on events.k8s.io: everything but series and metadata
                # is immutable.
                changed = sorted(k for k in set(base) | set(merged)
                                 if k not in ("series", "metadata") and
                                 base.get(k) != merged.get(k))
                if changed:
                    causes = [{"reason": "FieldValueInvalid", "field": k,
                               "message": "Invalid value: field is immutable"} for k in changed]
                    raise Invalid(422, status_body(
                        422, "Invalid", 'Event.events.k8s.io "%s" is invalid: %s: field is '
                        "immutable" % (ename, changed[0]),
                        {"name": ename, "group": group, "kind": "Event", "causes": causes}))
        except Invalid as ex:
            return self.send_json(ex.code, ex.body)
        with st.lock:
            if (ens, ename) not in st.events:
                return self.send_json(404, status_body(404, "NotFound", 'events "%s" not found'
                                                       % ename, {"name": ename,
                                                                 "kind": "events"}))
            st.rv += 1
            ev["metadata"] = dict(server_meta, **{k: v for k, v in ev["metadata"].items()
                                                  if k in ("labels", "annotations")},
                                  resourceVersion=str(st.rv))
            ev["postedAs"] = stored["postedAs"]
            st.events[(ens, ename)] = ev
        out = {k: v for k, v in ev.items() if k != "postedAs"}
        return self.send_json(200, out if group else to_core(out))

    def test_endpoint(self, method, path, raw):
        st = self.server.state
        if method == "GET" and path == "/_test/requests":
            with st.lock:
                return self.send_json(200, st.requests)
        if method == "GET" and path == "/_test/events":
            with st.lock:
                return self.send_json(200, [e for _, e in sorted(st.events.items())])
        if method == "POST" and path == "/_test/faults":
            faults = json.loads(raw or b"[]")
            with st.lock:
                st.faults = faults
            return self.send_json(200, {"faults": len(faults)})
        if method == "POST" and path == "/_test/reset":
            st.reset()
            return self.send_json(200, {})
        if method == "POST" and path in ("/_test/deny", "/_test/unserved", "/_test/pods"):
            items = json.loads(raw or b"[]")
            with st.lock:
                setattr(st, {"deny": "denied"}.get(path[7:], path[7:]), set(items))
            return self.send_json(200, {path[7:]: len(items)})
        if method == "POST" and path == "/_test/reset-events":
            with st.lock:
                st.events = {}
            return self.send_json(200, {})
        return self.send_json(404, {"error": "no such test endpoint"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, ctx, state, verbose, request_log=None):
        super().__init__(addr, Handler)
        self.ctx = ctx
        self.state = state
        self.verbose = verbose
        self.request_log = request_log

    def get_request(self):
        # The handshake runs in the handler thread (on first read), so a client that hangs
        # or aborts the handshake (wrong CA) never blocks the accept loop.
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ca-dir", required=True, help="directory made by gen-certs.sh")
    ap.add_argument("--token-file", required=True, help="the valid token; re-read per request")
    ap.add_argument("--port-file", required=True, help="written with the port once listening")
    ap.add_argument("--faults", default="[]", help="initial fault list (JSON)")
    ap.add_argument("--bind", default="127.0.0.1", help="127.0.0.1 (default) or ::1")
    ap.add_argument("--pod", action="append", default=[],
                    help="NS/NAME of a pod the server knows, besides the defaults")
    ap.add_argument("--cert", default="server",
                    help="NAME: serve NAME.crt/NAME.key of --ca-dir (gen-certs.sh makes several)")
    ap.add_argument("--tls-version", choices=["1.1", "1.2", "1.3"],
                    help="speak only this TLS version (default: 1.2 and later)")
    ap.add_argument("--request-log", help="append 'METHOD PATH' per API request to this file")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if a.tls_version:
        v = {"1.1": ssl.TLSVersion.TLSv1_1, "1.2": ssl.TLSVersion.TLSv1_2,
             "1.3": ssl.TLSVersion.TLSv1_3}[a.tls_version]
        if v == ssl.TLSVersion.TLSv1_1:
            # OpenSSL 3's default security level refuses TLS 1.1 even when asked for it.
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = ctx.maximum_version = v
    ctx.load_cert_chain(os.path.join(a.ca_dir, a.cert + ".crt"),
                        os.path.join(a.ca_dir, a.cert + ".key"))
    state = State(os.path.abspath(a.token_file))
    state.faults = json.loads(a.faults)
    state.pods |= set(a.pod)
    if ":" in a.bind:
        Server.address_family = socket.AF_INET6
    srv = Server((a.bind, 0), ctx, state, a.verbose, a.request_log)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
