#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""expect.py WORKDIR EXPR: evaluates a Python expression over one scenario's results and exits
1 (printing what was seen) when it is false. Names available in EXPR:
  o      the driver's outcome JSON (rc, errno, error, hint, attempts, http_status, log, ...)
  R      the requests the test API server received, in order
  E      the events it stored
  calls  [(method, path, status), ...] of R, for exact-sequence checks
  POST_V1, POST_CORE, GET_POD  the paths of the scenario's pod "orders-api-1" in "shop"
"""
import json
import os
import sys

work, expr = sys.argv[1], sys.argv[2]


def load(name, default):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


o = load("out.json", {})
R = load("requests.json", [])
E = load("events.json", [])
env = {
    "__builtins__": __builtins__, "json": json, "o": o, "R": R, "E": E, "calls": [(r["method"], r["path"], r["status"]) for r in R],
    "POST_V1": "/apis/events.k8s.io/v1/namespaces/shop/events",
    "POST_CORE": "/api/v1/namespaces/shop/events",
    "GET_POD": "/api/v1/namespaces/shop/pods/orders-api-1",
}
try:
    ok = eval(expr, env)
except Exception as ex:  # a KeyError in an expectation is a failed expectation
    ok = False
    print("  error evaluating: %r" % ex, file=sys.stderr)
if not ok:
    print("  expected: " + expr, file=sys.stderr)
    print("  outcome:  " + json.dumps(o), file=sys.stderr)
    print("  calls:    " + json.dumps(env["calls"]), file=sys.stderr)
    sys.exit(1)
