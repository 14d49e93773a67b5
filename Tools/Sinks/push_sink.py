#!/usr/bin/env python3
"""A local push provider sink for Signet development and tests: APNs and FCM over HTTP/2.

Speaks HTTP/2 with prior knowledge (h2c) on one port, with the ``h2`` package (PyPI), and
answers three APIs as their providers do:

    POST /3/device/<token>                       APNs provider API
        authorization: bearer <ES256 JWT, kid in the header, iss and iat in the claims>
        apns-topic, apns-push-type required; apns-priority, apns-expiration, apns-collapse-id kept
        200 with apns-id; 403 {"reason": "InvalidProviderToken" | "ExpiredProviderToken"};
        400 {"reason": "MissingTopic" | "BadDeviceToken"}; 410 {"reason": "Unregistered"}
    POST /token                                  OAuth 2.0 token endpoint (JWT bearer grant)
        grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT with iss, scope, aud>
        200 {"access_token", "expires_in": 3600, "token_type": "Bearer"}; 400 invalid_grant
    POST /v1/projects/<project>/messages:send    FCM HTTP v1
        authorization: Bearer <an access token this sink issued>
        200 {"name": "projects/<project>/messages/<n>"}; 401; 404 UNREGISTERED

Every push accepted is written, whole, to its own file ``<dir>/<UTC timestamp>-<n>.json``
(``{"api", "path", "token", "headers", "payload"}``, the authorization header left out),
under a temporary name and renamed. A device token listed in the gone file (one per line,
``<dir>/gone-tokens`` by default; tests append to it) is answered as the provider answers a
token that is no longer valid. JWT signatures are not checked (the sink has no keys); their
shape, algorithm and claims are.

When ready it prints ``listening <port>``. It stops on SIGTERM or SIGINT. It logs one line
per request on standard error: method, path without the token, status.

Usage:
    python3 push_sink.py [--host 127.0.0.1] [--port 2643] [--dir .data/sinks/push] [--gone-file F]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import itertools
import json
import os
import secrets
import signal
import sys
import time
import urllib.parse
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions

MAX_BODY = 64 * 1024


def b64json(part: str) -> dict | None:
    try:
        data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(data)
        return value if isinstance(value, dict) else None
    except (ValueError, json.JSONDecodeError):
        return None


def jwt_parts(token: str) -> tuple[dict, dict] | None:
    parts = token.split(".")
    if len(parts) != 3 or not parts[2]:
        return None
    header, claims = b64json(parts[0]), b64json(parts[1])
    if header is None or claims is None:
        return None
    return header, claims


class Sink:
    def __init__(self, directory: Path, gone_file: Path) -> None:
        self.directory = directory
        self.gone_file = gone_file
        self.counter = itertools.count(1)
        self.access_tokens: set[str] = set()

    def gone(self, token: str) -> bool:
        try:
            return token in {line.strip() for line in self.gone_file.read_text().splitlines()}
        except FileNotFoundError:
            return False

    def record(self, api: str, path: str, token: str, headers: dict, payload: object) -> str:
        n = next(self.counter)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"{stamp}-{n}.json"
        kept = {k: v for k, v in headers.items() if not k.startswith(":") and k != "authorization"}
        document = {"api": api, "path": path, "token": token, "headers": kept, "payload": payload}
        temporary = self.directory / f".{name}.tmp"
        temporary.write_text(json.dumps(document, ensure_ascii=False, sort_keys=True))
        os.replace(temporary, self.directory / name)
        return name

    # Each handler returns (status, body object, extra headers).
    def apns(self, path: str, headers: dict, body: bytes):
        token = path[len("/3/device/"):]
        auth = headers.get("authorization", "")
        parts = jwt_parts(auth[7:]) if auth.lower().startswith("bearer ") else None
        if parts is None or parts[0].get("alg") != "ES256" or not parts[0].get("kid") or not parts[1].get("iss"):
            return 403, {"reason": "InvalidProviderToken"}, []
        iat = parts[1].get("iat")
        if not isinstance(iat, int) or abs(time.time() - iat) > 3600:
            return 403, {"reason": "ExpiredProviderToken"}, []
        if not headers.get("apns-topic"):
            return 400, {"reason": "MissingTopic"}, []
        if headers.get("apns-push-type") not in ("alert", "background"):
            return 400, {"reason": "InvalidPushType"}, []
        if not token or not all(c in "0123456789abcdefABCDEF" for c in token):
            return 400, {"reason": "BadDeviceToken"}, []
        if self.gone(token):
            return 410, {"reason": "Unregistered", "timestamp": int(time.time() * 1000)}, []
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            return 400, {"reason": "BadPayload"}, []
        self.record("apns", "/3/device/", token, headers, payload)
        return 200, None, [("apns-id", secrets.token_hex(16))]

    def oauth(self, headers: dict, body: bytes):
        form = urllib.parse.parse_qs(body.decode("ascii", "replace"))
        assertion = (form.get("assertion") or [""])[0]
        parts = jwt_parts(assertion)
        grant = (form.get("grant_type") or [""])[0]
        if grant != "urn:ietf:params:oauth:grant-type:jwt-bearer" or parts is None:
            return 400, {"error": "invalid_grant"}, []
        claims = parts[1]
        if not claims.get("iss") or "firebase.messaging" not in str(claims.get("scope", "")) or not claims.get("aud"):
            return 400, {"error": "invalid_grant", "error_description": "iss, scope and aud are required"}, []
        access = "sink-" + secrets.token_hex(16)
        self.access_tokens.add(access)
        return 200, {"access_token": access, "expires_in": 3600, "token_type": "Bearer"}, []

    def fcm(self, path: str, headers: dict, body: bytes):
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.access_tokens:
            return 401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}}, []
        try:
            payload = json.loads(body)
            token = payload["message"]["token"]
        except (json.JSONDecodeError, KeyError, TypeError):
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}}, []
        if self.gone(token):
            detail = {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}
            return 404, {"error": {"code": 404, "status": "NOT_FOUND", "details": [detail]}}, []
        name = self.record("fcm", path, token, headers, payload)
        project = path.split("/")[3]
        return 200, {"name": f"projects/{project}/messages/{name}"}, []

    def handle(self, method: str, path: str, headers: dict, body: bytes):
        if method != "POST":
            return 405, {"error": "method"}, []
        if path.startswith("/3/device/"):
            return self.apns(path, headers, body)
        if path == "/token":
            return self.oauth(headers, body)
        if path.startswith("/v1/projects/") and path.endswith("/messages:send"):
            return self.fcm(path, headers, body)
        return 404, {"error": "not found"}, []


class H2Server(asyncio.Protocol):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.streams: dict[int, tuple[dict, bytearray]] = {}

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.transport.write(self.conn.data_to_send())

    def data_received(self, data: bytes) -> None:
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.write(self.conn.data_to_send())
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = ({k.lower(): v for k, v in event.headers}, bytearray())
            elif isinstance(event, h2.events.DataReceived):
                entry = self.streams.get(event.stream_id)
                if entry is not None and len(entry[1]) + len(event.data) <= MAX_BODY:
                    entry[1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.respond(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.transport.write(self.conn.data_to_send())

    def respond(self, stream_id: int) -> None:
        headers, body = self.streams.pop(stream_id, ({}, bytearray()))
        method, path = headers.get(":method", ""), headers.get(":path", "")
        try:
            status, document, extra = self.sink.handle(method, path, headers, bytes(body))
        except Exception as error:  # a bug in the sink: answer 500, keep serving
            print(f"sink error: {type(error).__name__}", file=sys.stderr)
            status, document, extra = 500, {"error": "sink"}, []
        payload = b"" if document is None else json.dumps(document).encode()
        response = [(":status", str(status)), ("content-length", str(len(payload)))] + extra
        if payload:
            response.append(("content-type", "application/json"))
        self.conn.send_headers(stream_id, response, end_stream=not payload)
        if payload:
            self.conn.send_data(stream_id, payload, end_stream=True)
        shown = "/3/device/…" if path.startswith("/3/device/") else path
        print(f"{method} {shown} {status}", file=sys.stderr, flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2643)
    parser.add_argument("--dir", default=".data/sinks/push")
    parser.add_argument("--gone-file", default=None)
    args = parser.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    sink = Sink(directory, Path(args.gone_file) if args.gone_file else directory / "gone-tokens")
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: H2Server(sink), args.host, args.port)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


if __name__ == "__main__":
    asyncio.run(main())
