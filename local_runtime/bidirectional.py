"""InvokeEndpointWithBidirectionalStream: one HTTP/2 stream from the client, bridged to the
container's WebSocket at /invocations-bidirectional-stream, as SageMaker's router bridges it.

Client to container: the request body is AWS event-stream messages. Each is a SigV4-signed
envelope (`:date`, `:chunk-signature`) whose payload is the event itself, a `PayloadPart`
(`DataType` UTF8 or BINARY, its bytes): one WebSocket frame, text or binary, per part. An
envelope with an empty payload ends the client's input, and with it the session: the runtime
closes the WebSocket (the container cancels what is still running there) and ends the answer.
SageMaker's own words: the stream lasts "until either the client closes it or the model
indicates completion". Signatures are not checked, as nowhere in the local runtime.

Container to client: each WebSocket message becomes one `PayloadPart` event (`DataType`,
`CompletionState` COMPLETE: a message arrives whole). The container closing the socket ends
the answer; a close other than normal (1000) or going away (1001) ends it with a
`ModelStreamError` event carrying the close code. The router's keepalive is SageMaker's: a
ping every 60 s, the socket closed after 5 unanswered.

Only HTTP/2 carries this call (the client's CRT transport sends a duplex body over nothing
else): `python -m local_runtime --http2-port` (local_runtime/http2.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import websockets
from botocore.eventstream import EventStreamBuffer, ParserError
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send
from websockets.asyncio.client import ClientConnection, connect

from local_runtime import event_stream
from local_runtime.asgi import raw_headers
from local_runtime.passed_headers import TO_CONTAINER, to_client
from local_runtime.runtime import Call, Runtime, container_failed, refusal
from local_runtime.runtime_errors import CONTAINER_NAME, model_error

log = logging.getLogger("local_runtime")

ROUTE = "/invocations-bidirectional-stream"
# The headers the operation's input names, passed to the container's handshake as they came.
PASSED_THROUGH = (
    *TO_CONTAINER,
    "x-amzn-sagemaker-model-invocation-path",
    "x-amzn-sagemaker-model-query-string",
)
# SageMaker's router: the socket accepted within 250 ms (here, a generous connect allowance
# for a loaded test machine), a ping every 60 s, closed after 5 unanswered.
OPEN_TIMEOUT_SECONDS = 5.0
PING_INTERVAL_SECONDS = 60.0
PING_TIMEOUT_SECONDS = 5 * PING_INTERVAL_SECONDS
NORMAL_CLOSES = (1000, 1001)
# What the HTTP/2 runtime's model calls a ValidationError.
INPUT_VALIDATION = "InputValidationError"


def payload_part(data: bytes, binary: bool) -> bytes:
    return event_stream.encode_message(
        {
            ":event-type": "PayloadPart",
            ":content-type": "application/octet-stream",
            ":message-type": "event",
            "DataType": "BINARY" if binary else "UTF8",
            "CompletionState": "COMPLETE",
        },
        data,
    )


class ClientParts:
    """The client's PayloadParts out of the request body, as they arrive."""

    def __init__(self, receive: Receive):
        self.receive = receive
        self.envelopes = EventStreamBuffer()
        self.ended = False

    async def __aiter__(self):
        while not self.ended:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                return
            self.envelopes.add_data(message.get("body", b""))
            for envelope in self.envelopes:
                if not envelope.payload:  # the signed end of the client's input
                    self.ended = True
                    return
                part = inner_event(envelope.payload)
                if part is not None:
                    yield part
            if not message.get("more_body", False):
                return


def inner_event(payload: bytes) -> tuple[bytes, bool] | None:
    """A PayloadPart's bytes, and whether they are binary; None for any other event."""
    events = EventStreamBuffer()
    events.add_data(payload)
    for event in events:
        if event.headers.get(":event-type") != "PayloadPart":
            log.info("bidirectional stream: ignored a %r event", event.headers.get(":event-type"))
            return None
        return event.payload, event.headers.get("DataType") == "BINARY"
    raise ParserError(f"an envelope of {len(payload)} bytes holds no whole event")


class InvokeEndpointWithBidirectionalStream:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = Call(scope)
        if (refused := await refusal(self.runtime, call, INPUT_VALIDATION)) is not None:
            await refused(scope, receive, send)
            return
        container = self.runtime.container
        url = f"ws://{container.authority}{container.base_path}{ROUTE}"
        try:
            socket = await connect(
                url,
                additional_headers=handshake_headers(call.headers),
                open_timeout=OPEN_TIMEOUT_SECONDS,
                ping_interval=PING_INTERVAL_SECONDS,
                ping_timeout=PING_TIMEOUT_SECONDS,
                max_size=None,
                proxy=None,
            )
        except websockets.InvalidStatus as error:
            response = error.response
            message = (response.body or b"").decode(errors="replace") or response.reason_phrase
            answer = model_error(call.endpoint_name, response.status_code, message, call.request_id)
            await answer(scope, receive, send)
            return
        except (OSError, TimeoutError, websockets.InvalidHandshake) as error:
            message = container_failed(error)
            await model_error(call.endpoint_name, 0, message, call.request_id)(scope, receive, send)
            return
        headers = to_client({}, call.headers, call.request_id)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": raw_headers({**headers, "content-type": event_stream.CONTENT_TYPE}),
            }
        )
        await Bridge(socket, send, call.endpoint_name).run(ClientParts(receive))


def handshake_headers(client_headers: Mapping[str, str]) -> dict[str, str]:
    return {name: client_headers[name] for name in PASSED_THROUGH if name in client_headers}


class Bridge:
    """One session: the client's parts to the socket, the socket's messages to the client,
    until either side ends it."""

    def __init__(self, socket: ClientConnection, send: Send, endpoint_name: str):
        self.socket = socket
        self.send = send
        self.endpoint_name = endpoint_name

    async def run(self, parts: ClientParts) -> None:
        upstream = asyncio.create_task(self.upstream(parts))
        try:
            ending = await self.downstream()
        finally:
            upstream.cancel()
            await asyncio.gather(upstream, return_exceptions=True)
            await self.socket.close()
        try:
            if ending is not None:
                await self.send({"type": "http.response.body", "body": ending, "more_body": True})
            await self.send({"type": "http.response.body", "body": b""})
        except (OSError, ClientDisconnect):
            pass

    async def upstream(self, parts: ClientParts) -> None:
        """The client's parts to the container; the end of its input closes the socket,
        which ends `downstream`."""
        try:
            async for data, binary in parts:
                await self.socket.send(data if binary else data.decode("utf-8", "replace"))
        except ParserError as error:
            log.info("%s: unreadable client event stream: %s", self.endpoint_name, error)
        except websockets.ConnectionClosed:
            return
        await self.socket.close()

    async def downstream(self) -> bytes | None:
        """The container's messages to the client, until the socket closes; the last event,
        if the close was not a normal one."""
        try:
            async for message in self.socket:
                binary = isinstance(message, bytes)
                data = message if binary else message.encode()
                event = payload_part(data, binary)
                await self.send({"type": "http.response.body", "body": event, "more_body": True})
        except websockets.ConnectionClosed:
            pass
        except (OSError, ClientDisconnect):  # the client went away
            return None
        code, reason = self.socket.close_code, self.socket.close_reason
        if code is None or code in NORMAL_CLOSES:
            return None
        reason = f": {reason}" if reason else ""
        log.info("%s: the container closed: %d%s", self.endpoint_name, code, reason)
        return event_stream.stream_exception(
            "ModelStreamError",
            f"Container {CONTAINER_NAME} closed the stream with WebSocket code {code}{reason}.",
            error_code=str(code),
        )
