#!/usr/bin/env python3
"""Waits for what tests/e2e/test_otel_agent.sh expects in the JSON lines otlp_receiver.py writes.

Usage: otlp_check.py RECV.jsonl CHECK --service NAME --since T [--within S] [--where K=V]... [args]
Looks only at records of resource service.name NAME that came at or after T (seconds since the
epoch) and, with --where, whose resource has K=V (one replica's records among those of a service
that several send: tests/cluster/scenario_otel.sh); polls until CHECK holds or S seconds (default 10) have passed from T. Prints one
line: what held (with the delay of the first span, else record, after T), or what was seen. Exits 0 or 1.

CHECK is one of:
  web-chain        a trace with the ASP.NET Core server span GET /work (method, route, status),
                   its HttpClient child to /leaf, and the /leaf server span child of that one
  console-client   an HttpClient span to /ping with method, status 200, url and server address
  parent TRACE SPAN  a server span of trace TRACE whose parent is SPAN (propagation from outside)
  metrics          runtime (dotnet.*), process (process.*) and HTTP client metrics
  resource K=V     every record has the resource attribute K=V
  single-work      no trace has the GET /work server span twice (one SDK, not two)
  quiet            nothing came at all: waits the whole of S seconds
  any              anything came
"""
import json
import sys
import time


def load(path, service, since, where=()):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line being written
                res = r.get("resource", {})
                if r.get("t", 0) >= since and res.get("service.name") == service and \
                        all(str(res.get(k)) == v for k, v in where):
                    out.append(r)
    except FileNotFoundError:
        pass
    return out


def spans(recs):
    return [r["span"] for r in recs if r["signal"] == "traces"]


def web_chain(recs, _args):
    ss = spans(recs)
    by_id = {s["span_id"]: s for s in ss}
    for leaf in ss:
        if leaf["kind"] != "SERVER" or leaf["name"] != "GET /leaf":
            continue
        client = by_id.get(leaf["parent_span_id"])
        if not client or client["kind"] != "CLIENT" or not client["attributes"].get("url.full", "").endswith("/leaf"):
            continue
        work = by_id.get(client["parent_span_id"])
        if not work or work["kind"] != "SERVER" or work["name"] != "GET /work":
            continue
        a = work["attributes"]
        if (a.get("http.request.method") == "GET" and a.get("http.route") == "/work" and
                a.get("http.response.status_code") == 200 and a.get("url.path") == "/work" and
                work["trace_id"] == client["trace_id"] == leaf["trace_id"]):
            return f"trace {work['trace_id']}: GET /work {work['span_id']} > GET {client['span_id']} > GET /leaf {leaf['span_id']}"
    return None


def console_client(recs, _args):
    for s in spans(recs):
        a = s["attributes"]
        if (s["kind"] == "CLIENT" and s["name"] == "GET" and "/ping?" in a.get("url.full", "") and
                a.get("http.request.method") == "GET" and a.get("http.response.status_code") == 200 and
                a.get("server.address") == "127.0.0.1" and s["parent_span_id"] == ""):
            return f"client span {s['span_id']} to {a['url.full']}"
    return None


def parent(recs, args):
    trace, span = args
    for s in spans(recs):
        if s["kind"] == "SERVER" and s["trace_id"] == trace and s["parent_span_id"] == span:
            return f"server span {s['span_id']} ({s['name']}) child of the caller's {span}"
    return None


def metrics(recs, _args):
    names = {r["metric"]["name"] for r in recs if r["signal"] == "metrics"}
    need = ["dotnet.gc.collections", "dotnet.thread_pool.thread.count", "process.cpu.time",
            "process.memory.usage", "http.client.request.duration"]
    if all(n in names for n in need):
        return f"{len(names)} metrics, among them {', '.join(need)}"
    return None


def resource(recs, args):
    k, _, v = args[0].partition("=")
    if recs and all(str(r["resource"].get(k)) == v for r in recs):
        return f"{len(recs)} records with {k}={v}"
    return None


def single_work(recs, _args):
    seen = {}
    for s in spans(recs):
        if s["kind"] == "SERVER" and s["name"] == "GET /work":
            seen[s["trace_id"]] = seen.get(s["trace_id"], 0) + 1
    if seen and max(seen.values()) == 1:
        return f"{len(seen)} traces, each with one GET /work server span"
    return None


def any_(recs, _args):
    return f"{len(recs)} records" if recs else None


CHECKS = {"web-chain": web_chain, "console-client": console_client, "parent": parent,
          "metrics": metrics, "resource": resource, "single-work": single_work, "any": any_}


def main():
    argv = sys.argv[1:]
    opts = {"--within": "10"}
    rest, where = [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--where" and i + 1 < len(argv) and "=" in argv[i + 1]:
            k, _, v = argv[i + 1].partition("=")
            where.append((k, v))
            i += 2
        elif argv[i] in ("--service", "--since", "--within"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    path, check, args = rest[0], rest[1], rest[2:]
    service, since, within = opts["--service"], float(opts["--since"]), float(opts["--within"])
    deadline = since + within
    if check == "quiet":
        while time.time() < deadline:
            time.sleep(0.2)
        recs = load(path, service, since, where)
        if recs:
            print(f"{len(recs)} records came, the first {recs[0]['t'] - since:.1f} s after")
            return 1
        print(f"nothing came in {within:g} s")
        return 0
    while True:
        recs = load(path, service, since, where)
        held = CHECKS[check](recs, args)
        if held:
            sp = [r["t"] for r in recs if r["signal"] == "traces"]
            what, first = ("span", min(sp)) if sp else ("record", min(r["t"] for r in recs))
            print(f"{held} (first {what} {first - since:.2f} s after)")
            return 0
        if time.time() >= deadline:
            kinds = sorted({(s["name"], s["kind"]) for s in spans(recs)})
            print(f"not within {within:g} s: {len(recs)} records, spans {kinds[:8]}")
            return 1
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
