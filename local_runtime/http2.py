"""The runtime's HTTPS listener with HTTP/2, for InvokeEndpointWithBidirectionalStream: its
client (`aws-sdk-sagemaker-runtime-http2`, on AWS's CRT transport) streams a request body while
it reads the answer only over TLS with ALPN `h2`. Hypercorn serves the same app there beside
uvicorn's plain HTTP/1.1 listener, on one event loop.

The certificate is self-signed for localhost and 127.0.0.1, made once in a folder and reused;
a client trusts that one file (`CERTIFICATE_FILE` in the folder)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import os
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("local_runtime")

DEFAULT_CERTIFICATE_DIR = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "sagemaker-vllm-peagle"
    / "local-runtime-tls"
)
CERTIFICATE_FILE = "certificate.pem"
KEY_FILE = "key.pem"
VALID_DAYS = 365


def certificate(folder: Path) -> tuple[Path, Path]:
    """The folder's certificate and key, made first when missing."""
    cert_path, key_path = folder / CERTIFICATE_FILE, folder / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        # Its own authority, so a client can trust it as a root.
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


async def serve(app: ASGIApp, host: str, port: int, folder: Path, stopped: asyncio.Event) -> None:
    """HTTPS with HTTP/2 (and HTTP/1.1 for clients that offer only that) until `stopped` is
    set. The app's lifespan is uvicorn's to run: here it is answered and skipped."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    drop_late_data()
    cert_path, key_path = certificate(folder)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.certfile, config.keyfile = str(cert_path), str(key_path)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.errorlog = log
    # A session lasts as long as its client keeps it; no idle limit of the server's own.
    config.keep_alive_timeout = 3600
    log.info("HTTP/2 over TLS on https://%s:%d (certificate %s)", host, port, cert_path)
    await hypercorn_serve(without_lifespan(app), config, shutdown_trigger=stopped.wait, mode="asgi")


def without_lifespan(app: ASGIApp) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    return wrapped


def drop_late_data() -> None:
    """Hypercorn 0.18's HTTP/2 protocol drops the whole connection, every stream on it, when
    DATA arrives on a stream whose answer has already ended (a KeyError in
    `H2Protocol._handle_events`; hypercorn issue #329, its fix in pull request #334 not yet
    released). A client that streams its input races every answer that ends first: a
    refusal, or the container closing the session. Such DATA is acknowledged, for the
    connection's flow control, and dropped, as that fix does; and the stream is reset with
    NO_ERROR, as RFC 9113 (8.1) asks of a server that answered before the request ended, so
    that a client waiting for room to send more stops waiting. Idempotent."""
    import h2.errors
    import h2.events
    import h2.exceptions
    import hypercorn.protocol
    from hypercorn.protocol.h2 import H2Protocol

    if getattr(hypercorn.protocol.H2Protocol, "drops_late_data", False):
        return

    class LateDataDropped(H2Protocol):
        drops_late_data = True

        async def _handle_events(self, events: list[h2.events.Event]) -> None:
            # One at a time: an event can close a stream that a later one names.
            for event in events:
                data = isinstance(event, h2.events.DataReceived)
                if data and event.stream_id not in self.streams:
                    self.connection.acknowledge_received_data(
                        event.flow_controlled_length, event.stream_id
                    )
                    try:
                        self.connection.reset_stream(event.stream_id, h2.errors.ErrorCodes.NO_ERROR)
                    except h2.exceptions.StreamClosedError:
                        pass  # reset already
                    await self._flush()
                    continue
                await super()._handle_events([event])

    hypercorn.protocol.H2Protocol = LateDataDropped
