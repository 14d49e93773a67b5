#!/usr/bin/env python3
"""A local OTLP/HTTP trace collector sink for Signet development and tests.

Accepts ``POST /v1/traces`` with an OTLP ``ExportTraceServiceRequest`` in the JSON encoding
(``Content-Type: application/json``; https://opentelemetry.io/docs/specs/otlp/#otlphttp) and
appends every span to ``<dir>/spans.jsonl``, one flat JSON object a line:

    {"service": "signet-authentication", "traceId": "…", "spanId": "…", "parentSpanId": "…",
     "name": "POST /v1/tenants/{tenant}/signins", "kind": 2, "start": 1764…, "end": 1764…,
     "attributes": {"http.route": "…", "http.response.status_code": 200}, "error": false}

and answers ``200`` with ``{}`` (an ``ExportTraceServiceResponse`` with no rejected spans).

``GET /v1/spans?traceId=<32 hex>`` answers the recorded spans of that trace as a JSON array
(all of them without ``traceId``), for tests.

Other answers: 400 a body that is not such a JSON object, 404 another path, 405 another
method, 413 a body over 4 MiB, 415 another content type (protobuf is not decoded here), 503
one of the first ``--fail-first N`` requests (for the exporter's failure path).

When ready it prints ``listening <port>`` on standard output. It stops cleanly on SIGTERM or
SIGINT. Standard library only (threaded ``http.server``).

Usage:
    python3 otlp_sink.py [--host 127.0.0.1] [--port 4318] [--dir .data/sinks/otlp] [--fail-first N]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MAX_BODY = 4 * 1024 * 1024
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def attribute_value(value: dict):
    """The Python value of an OTLP ``AnyValue`` (the scalar kinds)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    return None


def flatten(request: dict) -> list[dict]:
    """The spans of an ``ExportTraceServiceRequest``, each with its resource's service.name.

    Raises ValueError (KeyError, TypeError) when the request does not have OTLP's shape.
    """
    spans = []
    for resource_spans in request["resourceSpans"]:
        resource = {a["key"]: attribute_value(a["value"]) for a in resource_spans.get("resource", {}).get("attributes", [])}
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                trace_id, span_id = span["traceId"], span["spanId"]
                if not HEX32.match(trace_id) or not re.match(r"^[0-9a-f]{16}$", span_id):
                    raise ValueError("ids must be lower-case hex")
                spans.append({
                    "service": resource.get("service.name"),
                    "instance": resource.get("service.instance.id"),
                    "traceId": trace_id,
                    "spanId": span_id,
                    "parentSpanId": span.get("parentSpanId") or None,
                    "name": span["name"],
                    "kind": int(span.get("kind", 0)),
                    "start": int(span["startTimeUnixNano"]),
                    "end": int(span["endTimeUnixNano"]),
                    "attributes": {a["key"]: attribute_value(a["value"]) for a in span.get("attributes", [])},
                    "error": span.get("status", {}).get("code") == 2,
                })
    return spans


class SinkState:
    """What the request threads share, behind one lock."""

    def __init__(self, directory: Path, fail_first: int) -> None:
        self.path = directory / "spans.jsonl"
        self.fail_remaining = fail_first
        self.lock = threading.Lock()
        self.spans: list[dict] = []

    def take_failure(self) -> bool:
        with self.lock:
            if self.fail_remaining > 0:
                self.fail_remaining -= 1
                return True
            return False

    def add(self, spans: list[dict]) -> None:
        with self.lock:
            self.spans.extend(spans)
            with self.path.open("a", encoding="utf-8") as f:
                for span in spans:
                    f.write(json.dumps(span, sort_keys=True) + "\n")

    def trace(self, trace_id: str | None) -> list[dict]:
        with self.lock:
            return [s for s in self.spans if trace_id is None or s["traceId"] == trace_id]


def make_handler(state: SinkState):
    class Handler(BaseHTTPRequestHandler):
        server_version = "signet-otlp-sink"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's name
            sys.stderr.write("%s %s\n" % (self.command, format % args))

        def answer(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if urllib.parse.urlsplit(self.path).path != "/v1/traces":
                return self.answer(HTTPStatus.NOT_FOUND, {"error": "not found"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self.answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "too large"})
            body = self.rfile.read(length)
            if (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
                return self.answer(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "only the JSON encoding"})
            if state.take_failure():
                return self.answer(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "failing on purpose"})
            try:
                spans = flatten(json.loads(body))
            except (ValueError, KeyError, TypeError) as error:
                return self.answer(HTTPStatus.BAD_REQUEST, {"error": f"not an OTLP trace request: {type(error).__name__}"})
            state.add(spans)
            self.answer(HTTPStatus.OK, {})

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/v1/spans":
                return self.answer(HTTPStatus.NOT_FOUND, {"error": "not found"})
            trace_id = urllib.parse.parse_qs(url.query).get("traceId", [None])[0]
            self.answer(HTTPStatus.OK, state.trace(trace_id))

        def do_PUT(self) -> None:  # noqa: N802 - http.server's name
            self.answer(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "method not allowed"})

        do_DELETE = do_PUT

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--dir", default=".data/sinks/otlp")
    parser.add_argument("--fail-first", type=int, default=0)
    args = parser.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(SinkState(directory, args.fail_first)))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()


if __name__ == "__main__":
    main()
