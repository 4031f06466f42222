#!/usr/bin/env python3
"""Unit tests of otlp_receiver.py's decoder, on bytes built here by a small protobuf encoder:
an ExportTraceServiceRequest with two spans (a server span and its client child, attributes of
every value kind), an ExportMetricsServiceRequest with a sum and a histogram, and truncated or
malformed input, which must raise DecodeError and nothing else. Run: python3 test_otlp_receiver.py
"""
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_receiver as r  # noqa: E402


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    key = varint(num << 3 | wt)
    if wt == 0:
        return key + varint(payload)
    if wt == 1:
        return key + struct.pack("<Q", payload)
    if wt == 5:
        return key + struct.pack("<I", payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return key + varint(len(payload)) + payload


def msg(*parts):
    return b"".join(parts)


def kv(key, anyvalue):
    return field(1, 2, key) + field(2, 2, anyvalue)


S = lambda s: field(1, 2, s)  # noqa: E731  AnyValue string
I = lambda n: field(3, 0, n & ((1 << 64) - 1))  # noqa: E731  AnyValue int
B = lambda b: field(2, 0, int(b))  # noqa: E731
D = lambda d: field(4, 1, struct.unpack("<Q", struct.pack("<d", d))[0])  # noqa: E731

RESOURCE = msg(field(1, 2, kv("service.name", S("shop"))), field(1, 2, kv("process.pid", I(42))))
TRACE = bytes(range(16))
SERVER = bytes([1] * 8)
CLIENT = bytes([2] * 8)


def span(sid, parent, name, kind, attrs):
    return msg(field(1, 2, TRACE), field(2, 2, sid), field(4, 2, parent), field(5, 2, name),
               field(6, 0, kind), field(7, 1, 1000), field(8, 1, 2000),
               *[field(9, 2, a) for a in attrs], field(15, 2, field(3, 0, 2)))


class TraceTests(unittest.TestCase):
    def test_spans(self):
        server = span(SERVER, b"", "GET /work", 2,
                      [kv("http.request.method", S("GET")), kv("http.response.status_code", I(200)),
                       kv("negative", I(-5)), kv("flag", B(True)), kv("ratio", D(0.5)),
                       kv("list", field(5, 2, field(1, 2, S("a")) + field(1, 2, I(1))))])
        client = span(CLIENT, SERVER, "GET", 3, [kv("url.full", S("http://127.0.0.1:1/leaf"))])
        scope_spans = msg(field(1, 2, field(1, 2, "System.Net.Http") + field(2, 2, "10.0")),
                          field(2, 2, server), field(2, 2, client))
        req = field(1, 2, field(1, 2, RESOURCE) + field(2, 2, scope_spans))
        out = r.decode_traces(req)
        self.assertEqual(len(out), 2)
        s, c = out[0], out[1]
        self.assertEqual(s["resource"], {"service.name": "shop", "process.pid": 42})
        self.assertEqual(s["scope"], "System.Net.Http")
        self.assertEqual(s["scope_version"], "10.0")
        self.assertEqual(s["span"]["trace_id"], TRACE.hex())
        self.assertEqual(s["span"]["kind"], "SERVER")
        self.assertEqual(s["span"]["parent_span_id"], "")
        self.assertEqual(s["span"]["status_code"], 2)
        self.assertEqual(s["span"]["attributes"],
                         {"http.request.method": "GET", "http.response.status_code": 200,
                          "negative": -5, "flag": True, "ratio": 0.5, "list": ["a", 1]})
        self.assertEqual(c["span"]["parent_span_id"], SERVER.hex())
        self.assertEqual(c["span"]["kind"], "CLIENT")
        self.assertEqual(c["span"]["name"], "GET")

    def test_unknown_fields_skipped(self):
        req = field(1, 2, field(9, 5, 7) + field(1, 2, RESOURCE) + field(3, 2, "schema"))
        self.assertEqual(r.decode_traces(req), [])


class MetricTests(unittest.TestCase):
    def test_metrics(self):
        point = field(1, 2, field(3, 1, 5))
        m1 = msg(field(1, 2, "dotnet.gc.collections"), field(3, 2, "{collection}"), field(7, 2, point + point))
        m2 = msg(field(1, 2, "http.client.request.duration"), field(3, 2, "s"), field(9, 2, point))
        scope_metrics = msg(field(1, 2, field(1, 2, "System.Runtime")), field(2, 2, m1), field(2, 2, m2))
        req = field(1, 2, field(1, 2, RESOURCE) + field(2, 2, scope_metrics))
        out = r.decode_metrics(req)
        self.assertEqual([o["metric"]["name"] for o in out],
                         ["dotnet.gc.collections", "http.client.request.duration"])
        self.assertEqual(out[0]["metric"], {"name": "dotnet.gc.collections", "unit": "{collection}",
                                            "type": "sum", "points": 2})
        self.assertEqual(out[1]["metric"]["type"], "histogram")
        self.assertEqual(out[0]["scope"], "System.Runtime")


class MalformedTests(unittest.TestCase):
    def test_truncated(self):
        good = field(1, 2, field(1, 2, RESOURCE))
        for cut in range(1, len(good)):
            try:
                r.decode_traces(good[:cut])
                r.decode_metrics(good[:cut])
            except r.DecodeError:
                pass

    def test_bad_wire_type(self):
        with self.assertRaises(r.DecodeError):
            r.decode_traces(bytes([0x0B]))  # field 1, wire type 3 (groups: not in OTLP)

    def test_long_varint(self):
        with self.assertRaises(r.DecodeError):
            r.decode_traces(b"\x08" + b"\xff" * 11)


if __name__ == "__main__":
    unittest.main()
