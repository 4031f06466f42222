#!/usr/bin/env python3
"""An OTLP/HTTP receiver for the tests (tests/e2e/test_otel_agent.sh), loopback only, stdlib only.

Usage: otlp_receiver.py OUT.jsonl PORTFILE [--seconds N]
Listens on 127.0.0.1 on a port of the kernel's choosing (written to PORTFILE once it listens),
takes POST /v1/traces and /v1/metrics in http/protobuf (gzip too), decodes the protobuf wire
format by hand (ExportTraceServiceRequest, ExportMetricsServiceRequest: resource attributes;
spans with trace, span and parent ids, name, kind, attributes; metric names, units, types) and
appends one JSON line per span or metric to OUT.jsonl, with the time it came. Answers 200 with an
empty response message. Stops by itself after --seconds (default 600).
"""
import gzip
import json
import os
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
METRIC_TYPES = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}


class DecodeError(ValueError):
    pass


def varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def fields(buf):
    """Yields (field number, wire type, value) of one message: an int for varint and fixed
    fields, bytes for length-delimited ones."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            if i + 8 > len(buf):
                raise DecodeError("truncated fixed64")
            v = struct.unpack_from("<Q", buf, i)[0]
            i += 8
        elif wt == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise DecodeError("truncated bytes")
            v = bytes(buf[i:i + n])
            i += n
        elif wt == 5:
            if i + 4 > len(buf):
                raise DecodeError("truncated fixed32")
            v = struct.unpack_from("<I", buf, i)[0]
            i += 4
        else:
            raise DecodeError(f"wire type {wt}")
        yield num, wt, v


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def any_value(buf):
    for num, _, v in fields(buf):
        if num == 1:
            return v.decode("utf-8", "replace")
        if num == 2:
            return bool(v)
        if num == 3:
            return signed64(v)
        if num == 4:
            return struct.unpack("<d", struct.pack("<Q", v))[0]
        if num == 5:
            return [any_value(x) for n, _, x in fields(v) if n == 1]
        if num == 6:
            return key_values(x for n, _, x in fields(v) if n == 1)
        if num == 7:
            return v.hex()
    return None


def key_values(items):
    out = {}
    for kv in items:
        key, val = "", None
        for num, _, v in fields(kv):
            if num == 1:
                key = v.decode("utf-8", "replace")
            elif num == 2:
                val = any_value(v)
        out[key] = val
    return out


def resource(buf):
    return key_values(v for n, _, v in fields(buf) if n == 1)


def scope(buf):
    name = version = ""
    for num, _, v in fields(buf):
        if num == 1:
            name = v.decode("utf-8", "replace")
        elif num == 2:
            version = v.decode("utf-8", "replace")
    return name, version


def span(buf):
    s = {"trace_id": "", "span_id": "", "parent_span_id": "", "name": "", "kind": "UNSPECIFIED",
         "attributes": {}, "status_code": 0}
    attrs = []
    for num, _, v in fields(buf):
        if num == 1:
            s["trace_id"] = v.hex()
        elif num == 2:
            s["span_id"] = v.hex()
        elif num == 4:
            s["parent_span_id"] = v.hex()
        elif num == 5:
            s["name"] = v.decode("utf-8", "replace")
        elif num == 6:
            s["kind"] = KINDS.get(v, str(v))
        elif num == 7:
            s["start_unix_nano"] = v
        elif num == 8:
            s["end_unix_nano"] = v
        elif num == 9:
            attrs.append(v)
        elif num == 15:
            s["status_code"] = next((x for n, _, x in fields(v) if n == 3), 0)
    s["attributes"] = key_values(attrs)
    return s


def metric(buf):
    m = {"name": "", "unit": "", "type": "", "points": 0}
    for num, _, v in fields(buf):
        if num == 1:
            m["name"] = v.decode("utf-8", "replace")
        elif num == 3:
            m["unit"] = v.decode("utf-8", "replace")
        elif num in METRIC_TYPES:
            m["type"] = METRIC_TYPES[num]
            m["points"] = sum(1 for n, _, _ in fields(v) if n == 1)
    return m


def decode_request(buf, signal, key, one):
    """An Export*ServiceRequest: its resources (field 1), each with its resource (1) and scopes
    (2), each with its scope (1) and items (2), decoded by one(); one dict per item."""
    out = []
    for num, _, rs in fields(buf):
        if num != 1:
            continue
        res = {}
        scopes = []
        for n, _, v in fields(rs):
            if n == 1:
                res = resource(v)
            elif n == 2:
                scopes.append(v)
        for ss in scopes:
            name = version = ""
            items = []
            for n, _, v in fields(ss):
                if n == 1:
                    name, version = scope(v)
                elif n == 2:
                    items.append(v)
            for it in items:
                out.append({"signal": signal, "resource": res, "scope": name,
                            "scope_version": version, key: one(it)})
    return out


def decode_traces(buf):
    """ExportTraceServiceRequest: one dict per span."""
    return decode_request(buf, "traces", "span", span)


def decode_metrics(buf):
    """ExportMetricsServiceRequest: one dict per metric."""
    return decode_request(buf, "metrics", "metric", metric)


class Handler(BaseHTTPRequestHandler):
    out = None
    lock = threading.Lock()

    def log_message(self, fmt, *args):  # quiet
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(n, 64 << 20))
        try:
            if self.headers.get("Content-Encoding", "") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                items = decode_traces(body)
            elif self.path == "/v1/metrics":
                items = decode_metrics(body)
            else:
                self.send_response(404)
                self.end_headers()
                return
        except (DecodeError, OSError, EOFError) as e:
            items = [{"signal": "error", "path": self.path, "error": str(e)}]
        now = time.time()
        with self.lock, open(self.out, "a") as f:
            for it in items:
                it["t"] = now
                f.write(json.dumps(it, sort_keys=True) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def main():
    args = sys.argv[1:]
    seconds = 600
    if "--seconds" in args:
        k = args.index("--seconds")
        seconds = int(args[k + 1])
        del args[k:k + 2]
    Handler.out, portfile = args
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(portfile + ".tmp", portfile)
    threading.Timer(seconds, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
