#!/usr/bin/env python3
"""A local SMS gateway sink for Signet development and tests.

Accepts ``POST /messages`` with a JSON object ``{"to": "+...", "text": "...", "sender": "..."}``
(``sender`` optional) and writes each accepted request body, byte for byte, to its own file:

    <dir>/<UTC timestamp>-<n>.json

then answers ``202 Accepted`` with ``{"id": "<file name>", "status": "accepted"}``.
Files are written under a temporary name and renamed, so a reader never sees half a message.

Other answers:
    400  the body is not such a JSON object (``to`` must start with ``+``, ``text`` non-empty)
    401  ``--token`` or ``--basic`` is set and the Authorization header does not match
    404  another path; 405 another method; 413 a body over 64 KiB
    503  one of the first ``--fail-first N`` requests (for retry tests), with Retry-After: 0

When ready it prints ``listening <port>`` on standard output (the chosen port with
``--port 0``). It stops cleanly on SIGTERM or SIGINT. Standard library only (threaded
``http.server``). It never logs message contents, numbers or credentials: one line per
request on standard error gives the method, path and status.

Usage:
    python3 sms_sink.py [--host 127.0.0.1] [--port 8025] [--dir .data/sinks/sms]
                        [--fail-first N] [--token TOKEN] [--basic USER:PASSWORD]
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hmac
import itertools
import json
import os
import signal
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MAX_BODY = 64 * 1024


class SinkState:
    """What the request threads share, behind one lock."""

    def __init__(self, directory: Path, fail_first: int, accepted_authorizations: list[str]) -> None:
        self.directory = directory
        self.fail_remaining = fail_first
        self.accepted_authorizations = accepted_authorizations
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def take_failure(self) -> bool:
        with self.lock:
            if self.fail_remaining > 0:
                self.fail_remaining -= 1
                return True
            return False

    def next_number(self) -> int:
        with self.lock:
            return next(self.counter)

    def authorized(self, header: str | None) -> bool:
        if not self.accepted_authorizations:
            return True
        if header is None:
            return False
        return any(hmac.compare_digest(header.encode(), a.encode()) for a in self.accepted_authorizations)


def valid_message(document: object) -> bool:
    if not isinstance(document, dict):
        return False
    to, text, sender = document.get("to"), document.get("text"), document.get("sender")
    if not isinstance(to, str) or not to.startswith("+") or not to[1:].isdigit():
        return False
    if not isinstance(text, str) or not text:
        return False
    return sender is None or isinstance(sender, str)


def write_atomically(directory: Path, number: int, suffix: str, content: bytes) -> Path:
    """Writes ``content`` to ``<directory>/<timestamp>-<number><suffix>`` via a rename."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    final = directory / f"{stamp}-{number}{suffix}"
    temporary = directory / f".{final.name}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, final)
    return final


class SinkRequestHandler(BaseHTTPRequestHandler):
    server_version = "SignetSMSSink/1.0"
    protocol_version = "HTTP/1.1"
    state: SinkState  # set on a subclass by make_handler

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] != "/messages":
            self.drain()
            self.answer(HTTPStatus.NOT_FOUND, {"error": "not_found"})
            return
        length = self.content_length()
        if length is None or length > MAX_BODY:
            self.close_connection = True
            self.answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "body_too_large"})
            return
        body = self.rfile.read(length)
        if self.state.take_failure():
            self.answer(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "unavailable"}, {"Retry-After": "0"})
            return
        if not self.state.authorized(self.headers.get("Authorization")):
            self.answer(HTTPStatus.UNAUTHORIZED, {"error": "unauthorized"}, {"WWW-Authenticate": "Bearer"})
            return
        try:
            document = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            document = None
        if not valid_message(document):
            self.answer(HTTPStatus.BAD_REQUEST, {"error": "invalid_message"})
            return
        path = write_atomically(self.state.directory, self.state.next_number(), ".json", body)
        self.answer(HTTPStatus.ACCEPTED, {"id": path.stem, "status": "accepted"})

    def do_GET(self) -> None:  # noqa: N802
        self.answer(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "method_not_allowed"}, {"Allow": "POST"})

    do_PUT = do_DELETE = do_PATCH = do_GET

    def content_length(self) -> int | None:
        try:
            return int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return None

    def drain(self) -> None:
        length = self.content_length()
        if length and length <= MAX_BODY:
            self.rfile.read(length)

    def answer(self, status: HTTPStatus, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        # Method, path and status only: never bodies, numbers or headers.
        sys.stderr.write(f"sms_sink: {self.command} {self.path.split('?', 1)[0]} {args[1] if len(args) > 1 else ''}\n")


def make_handler(state: SinkState) -> type[SinkRequestHandler]:
    return type("BoundSinkRequestHandler", (SinkRequestHandler,), {"state": state})


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Local SMS gateway sink that stores every message as a file.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8025, help="port to listen on; 0 picks a free one")
    parser.add_argument("--dir", default=".data/sinks/sms", help="directory for the .json files")
    parser.add_argument("--fail-first", type=int, default=0, metavar="N", help="answer 503 to the first N requests")
    parser.add_argument(
        "--token", default=os.environ.get("SMS_SINK_TOKEN"), help="require 'Authorization: Bearer TOKEN' (also SMS_SINK_TOKEN)"
    )
    parser.add_argument(
        "--basic",
        metavar="USER:PASSWORD",
        default=os.environ.get("SMS_SINK_BASIC"),
        help="require HTTP Basic with these credentials (also SMS_SINK_BASIC)",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    arguments = parse_arguments(argv)
    directory = Path(arguments.dir)
    directory.mkdir(parents=True, exist_ok=True)
    accepted: list[str] = []
    if arguments.token:
        accepted.append(f"Bearer {arguments.token}")
    if arguments.basic:
        accepted.append("Basic " + base64.b64encode(arguments.basic.encode()).decode())
    state = SinkState(directory, max(0, arguments.fail_first), accepted)

    server = ThreadingHTTPServer((arguments.host, arguments.port), make_handler(state))
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)

    def stop(signum, frame) -> None:
        # shutdown() waits for serve_forever to return, so it must run on another thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    # A parent may start us with SIGTERM blocked: the signal mask survives exec, and `swift test`
    # starting us through Foundation.Process passes a mask with it blocked. A blocked signal
    # never reaches the handler, so unblock the two we stop on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
