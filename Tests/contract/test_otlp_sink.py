"""The local OTLP/HTTP sink (Tools/Sinks/otlp_sink.py) that the stack's trace test reads:
it takes OTLP/JSON trace requests, refuses what is not one, and answers a trace's spans."""

import json
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

SINK = pathlib.Path(__file__).resolve().parents[2] / "Tools" / "Sinks" / "otlp_sink.py"
TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.fixture
def sink(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, str(SINK), "--port", "0", "--dir", str(tmp_path), "--fail-first", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening "), line
    yield f"http://127.0.0.1:{line.split()[1]}", tmp_path
    proc.terminate()
    proc.wait(timeout=10)


def post(url, body, content_type="application/json"):
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def export_request(span_id="b7ad6b7169203331", parent="00f067aa0ba902b7"):
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "signet-test"}}]},
        "scopeSpans": [{"scope": {"name": "signet"}, "spans": [{
            "traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": "GET /v1/tenants/{tenant}", "kind": 2,
            "startTimeUnixNano": "1764000000000000000", "endTimeUnixNano": "1764000000001000000",
            "attributes": [{"key": "http.response.status_code", "value": {"intValue": "200"}}], "status": {"code": 2}}]}]}]}).encode()


def test_records_spans_and_answers_a_trace(sink):
    base, directory = sink
    # --fail-first 1: the first export is refused with 503 (the exporter's failure path).
    assert post(f"{base}/v1/traces", export_request())[0] == 503
    assert post(f"{base}/v1/traces", export_request()) == (200, b"{}")
    assert post(f"{base}/v1/traces", export_request(span_id="1111111111111111", parent=""))[0] == 200
    with urllib.request.urlopen(f"{base}/v1/spans?traceId={TRACE}", timeout=5) as r:
        spans = json.load(r)
    assert [s["spanId"] for s in spans] == ["b7ad6b7169203331", "1111111111111111"]
    first = spans[0]
    assert first["service"] == "signet-test" and first["parentSpanId"] == "00f067aa0ba902b7" and first["kind"] == 2
    assert first["attributes"] == {"http.response.status_code": 200} and first["error"] is True
    assert first["end"] - first["start"] == 1_000_000 and spans[1]["parentSpanId"] is None
    with urllib.request.urlopen(f"{base}/v1/spans?traceId={'f' * 32}", timeout=5) as r:
        assert json.load(r) == []
    assert len((directory / "spans.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("body, content_type, status", [
    (b"{}", "application/json", 400),
    (b"not json", "application/json", 400),
    (export_request().replace(TRACE.encode(), TRACE.upper().encode()), "application/json", 400),
    (b"\x0a\x00", "application/x-protobuf", 415),
])
def test_refuses_what_is_not_an_otlp_json_request(sink, body, content_type, status):
    base, _ = sink
    post(f"{base}/v1/traces", export_request())  # the one planned failure
    assert post(f"{base}/v1/traces", body, content_type)[0] == status
    assert post(f"{base}/v1/other", export_request())[0] == 404
