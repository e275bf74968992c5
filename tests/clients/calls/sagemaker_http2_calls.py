"""AWS's client for InvokeEndpointWithBidirectionalStream (`aws-sdk-sagemaker-runtime-http2`,
Python 3.12 or later), as docs/bidirectional-streaming.md shows it, pointed at the local
runtime's HTTPS listener. Two things differ from a call to AWS, and only these: the endpoint
URI, and a CRT transport that trusts the runtime's self-signed certificate
(LOCAL_RUNTIME_CERTIFICATE, the file `python -m local_runtime --http2-port` made).

Each case reports, as JSON text, what the session gave back: per id its frame types in order
and its text."""

from __future__ import annotations

import asyncio
import json
import os

from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
)
from awscrt.io import ClientTlsContext, TlsContextOptions
from common import ENDPOINT, MAX_TOKENS, MESSAGES, RUNTIME_URL, report
from smithy_http.aio.crt import AWSCRTHTTPClient

CERTIFICATE = os.environ["LOCAL_RUNTIME_CERTIFICATE"]
ENDINGS = ("done", "error", "cancelled")
CHAT = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}
LONG = {"prompt": "class Parser:", "max_tokens": 1800, "ignore_eos": True}


class LocalTrust(AWSCRTHTTPClient):
    """The CRT transport, trusting the local runtime's certificate instead of the system's
    roots (it builds its TLS context on creation and again on each copy)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tls_ctx = self._local_context()

    def __deepcopy__(self, memo):
        copy = super().__deepcopy__(memo)
        copy._tls_ctx = copy._local_context()
        return copy

    @staticmethod
    def _local_context() -> ClientTlsContext:
        options = TlsContextOptions()
        options.override_default_trust_store_from_path(ca_filepath=CERTIFICATE)
        return ClientTlsContext(options)


async def client() -> AsyncSageMakerRuntimeHTTP2Client:
    """Credentials from the environment, as for any AWS client."""
    config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
        endpoint_uri=RUNTIME_URL, region="us-east-1", transport=LocalTrust()
    )
    return AsyncSageMakerRuntimeHTTP2Client(config=config)


class Session:
    """One bidirectional stream: frames sent as parts, the answer's parts read as frames."""

    def __init__(self, stream):
        self.stream = stream
        self.output = None
        self.frames: dict[str, list[dict]] = {}

    @classmethod
    async def open(cls) -> Session:
        stream = await (await client()).invoke_endpoint_with_bidirectional_stream(
            InvokeEndpointWithBidirectionalStreamInput(endpoint_name=ENDPOINT)
        )
        return cls(stream)

    async def send(self, frame: dict | str | bytes) -> None:
        data = json.dumps(frame) if isinstance(frame, dict) else frame
        part = RequestPayloadPart(
            bytes_=data if isinstance(data, bytes) else data.encode(),
            data_type="BINARY" if isinstance(data, bytes) else "UTF8",
        )
        await self.stream.input_stream.send(RequestStreamEventPayloadPart(value=part))

    async def next_frame(self) -> dict:
        if self.output is None:
            _, self.output = await self.stream.await_output()
        event = await self.output.receive()
        if event is None:
            raise EOFError("the answer ended before the frame the case waits for")
        frame = json.loads(event.value.bytes_)
        frame["data_type"] = event.value.data_type
        self.frames.setdefault(frame["id"], []).append(frame)
        return frame

    async def until(self, request_id, kinds) -> dict:
        while True:
            frame = await self.next_frame()
            if frame["id"] == request_id and frame["type"] in kinds:
                return frame

    async def until_ended(self, ids) -> None:
        open_ids = {i for i in ids if not self.ended(i)}
        while open_ids:
            frame = await self.next_frame()
            if frame["type"] in ENDINGS:
                open_ids.discard(frame["id"])

    def ended(self, request_id) -> bool:
        return any(frame["type"] in ENDINGS for frame in self.frames.get(request_id, []))

    async def close(self) -> None:
        await self.stream.input_stream.close()

    def summary(self) -> str:
        return json.dumps(
            {
                request_id: {
                    "types": [frame["type"] for frame in frames],
                    "text": "".join(
                        choice.get("delta", {}).get("content") or choice.get("text") or ""
                        for frame in frames
                        if frame["type"] == "chunk"
                        for choice in frame["data"].get("choices", [])
                    ),
                    "last": frames[-1],
                }
                for request_id, frames in self.frames.items()
            }
        )


async def two_turns() -> str:
    """A chat streamed, and a second turn sent while the first still streams."""
    session = await Session.open()
    await session.send({"id": "turn-1", **CHAT})
    await session.until("turn-1", ("chunk",))
    await session.send({"id": "turn-2", **CHAT})
    await session.until_ended({"turn-1", "turn-2"})
    await session.close()
    return session.summary()


async def cancel() -> str:
    """A long generation cancelled after its first chunk; the session then serves again."""
    session = await Session.open()
    await session.send({"id": "long", **LONG, "stream": True})
    await session.until("long", ("chunk",))
    await session.send({"type": "cancel", "id": "long"})
    await session.until_ended({"long"})
    await session.send({"id": "after", **CHAT})
    await session.until_ended({"after"})
    await session.close()
    return session.summary()


async def bad_frames() -> str:
    """A part that is not JSON and a binary part, each answered with an error frame; a chat
    after them is answered."""
    session = await Session.open()
    await session.send("this is not JSON")
    await session.send(b"\x00\x01binary")
    await session.send({"id": "good", **CHAT})
    while len(session.frames.get(None, [])) < 2 or "good" not in session.frames:
        await session.next_frame()
    await session.until_ended({"good"})
    await session.close()
    return session.summary()


async def oversized() -> str:
    """A part past twice the container's payload limit: the container closes the socket with
    1009, which the client raises as a ModelStreamError."""
    session = await Session.open()
    await session.send({"id": "big", "prompt": "x" * (13 * 1024 * 1024)})
    await session.next_frame()
    return session.summary()


def run(case):
    return lambda: asyncio.run(case())


report(
    {
        "two turns": run(two_turns),
        "cancel": run(cancel),
        "bad frames": run(bad_frames),
        "oversized": run(oversized),
    }
)
