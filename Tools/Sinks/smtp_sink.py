#!/usr/bin/env python3
"""A local SMTP sink for Signet development and tests.

Accepts every message (optionally after AUTH) and writes each one, exactly as received in
DATA (raw RFC 5322, CRLF line breaks, dot-stuffing removed), to its own file:

    <dir>/<UTC timestamp>-<n>.eml

Files are written under a temporary name and renamed, so a reader never sees half a message.
When the server is ready it prints ``listening <port>`` on standard output (the chosen port
when started with ``--port 0``). It stops cleanly on SIGTERM or SIGINT.

It never logs message contents, addresses or credentials: one line per message on standard
error gives the file name and size only.

Usage:
    python3 smtp_sink.py [--host 127.0.0.1] [--port 2525] [--dir .data/sinks/email]
                         [--auth USER:PASSWORD] [--reject-domain DOMAIN ...]
                         [--tls-cert CERT.pem --tls-key KEY.pem]

With --tls-cert and --tls-key the sink offers STARTTLS and requires it before MAIL FROM
(and before AUTH when --auth is set).

Requires aiosmtpd (see requirements.txt).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import os
import signal
import ssl
import sys
from pathlib import Path

try:
    from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write(
        "smtp_sink: the aiosmtpd package is missing; "
        "install it with: pip install -r sinks/requirements.txt\n"
    )
    sys.exit(3)


class SinkHandler:
    """aiosmtpd handler: refuses recipients in the configured domains, stores the rest."""

    def __init__(self, directory: Path, reject_domains: set[str]) -> None:
        self.directory = directory
        self.reject_domains = reject_domains
        self.counter = itertools.count(1)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        domain = address.rpartition("@")[2].lower()
        if domain in self.reject_domains:
            return "550 5.1.1 Recipient rejected by the sink"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802
        content = envelope.original_content or b""
        path = write_atomically(self.directory, next(self.counter), ".eml", content)
        sys.stderr.write(f"smtp_sink: stored {path.name} ({len(content)} bytes)\n")
        return "250 2.0.0 Message accepted by the sink"


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


def make_authenticator(expected_user: bytes, expected_password: bytes):
    """An aiosmtpd authenticator accepting one user name and password (PLAIN or LOGIN)."""

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login == expected_user
            and auth_data.password == expected_password
        )
        return AuthResult(success=ok, handled=False)

    return authenticator


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Local SMTP sink that stores every message as a file.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2525, help="port to listen on; 0 picks a free one")
    parser.add_argument("--dir", default=".data/sinks/email", help="directory for the .eml files")
    parser.add_argument(
        "--auth",
        metavar="USER:PASSWORD",
        default=os.environ.get("SMTP_SINK_AUTH"),
        help="require SMTP AUTH with these credentials (also SMTP_SINK_AUTH); no AUTH by default",
    )
    parser.add_argument(
        "--reject-domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="answer 550 to RCPT TO addresses in this domain (repeatable)",
    )
    parser.add_argument("--tls-cert", metavar="CERT.pem", help="certificate chain for STARTTLS (with --tls-key)")
    parser.add_argument("--tls-key", metavar="KEY.pem", help="private key for STARTTLS (with --tls-cert)")
    arguments = parser.parse_args(argv)
    if bool(arguments.tls_cert) != bool(arguments.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    return arguments


async def serve(arguments: argparse.Namespace) -> None:
    directory = Path(arguments.dir)
    directory.mkdir(parents=True, exist_ok=True)
    handler = SinkHandler(directory, {d.lower() for d in arguments.reject_domain})

    options: dict = {"hostname": "signet-smtp-sink", "ident": "Signet SMTP sink"}
    if arguments.auth:
        user, separator, password = arguments.auth.partition(":")
        if not separator:
            raise SystemExit("smtp_sink: --auth must be USER:PASSWORD")
        options.update(
            authenticator=make_authenticator(user.encode(), password.encode()),
            auth_required=True,
            # The sink speaks plain TCP on loopback; allow AUTH without TLS.
            auth_require_tls=False,
        )

    if arguments.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(arguments.tls_cert, arguments.tls_key)
        options.update(tls_context=context, require_starttls=True)

    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler, loop=loop, **options), arguments.host, arguments.port)
    port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)

    # A parent may start us with SIGTERM blocked: the signal mask survives exec, and `swift test`
    # starting us through Foundation.Process passes a mask with it blocked. A blocked signal
    # never reaches the handler, so unblock the two we stop on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main(argv: list[str]) -> int:
    arguments = parse_arguments(argv)
    asyncio.run(serve(arguments))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
