"""The front's one route table: which paths it answers, with which methods, and which of
them reach the engine. The gate matches a request here once; the app answers 404 and 405
from the same match.

The engine's HTTP API also has root routes the front must never expose (`/tokenize`,
`/load`, `/version`, its own `/invocations`, and in vLLM's dev mode `/sleep`,
`/collective_rpc`...). So relayed routes are an allow-list matched against the raw,
undecoded path: a dot segment or an encoded separator matches nothing, and what is
matched is forwarded byte for byte, never decoded and rebuilt.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from serving.errors import error_response

NO_ROUTE = (
    "no such route; the container serves GET /ping, POST /invocations, GET /metrics, "
    "GET /execution-parameters, a WebSocket at /invocations-bidirectional-stream and the "
    "OpenAI API under /v1 (e.g. POST /v1/chat/completions)."
)
# Where the gate puts the request's record (serving/record.py) in the ASGI scope.
SCOPE_KEY = "serving.record"
Handler = Callable[[Request], Awaitable[Response]]

# One path parameter: unreserved characters only, so nothing encoded and no separator.
PARAMETER = r"[A-Za-z0-9_~:-][A-Za-z0-9_.~:-]*"
# The front's own routes: label -> methods.
FRONT_ROUTES = {
    "/ping": ("GET", "POST"),
    "/invocations": ("POST",),
    "/metrics": ("GET",),
    # Batch Transform asks it before the first mini-batch (serving/transform.py).
    "/execution-parameters": ("GET",),
    # A WebSocket (serving/bidi_session.py); a plain GET is answered 426.
    "/invocations-bidirectional-stream": ("GET",),
}
# vLLM's OpenAI-compatible routes, and SageMaker's adapter routes that vLLM serves when
# VLLM_ALLOW_RUNTIME_LORA_UPDATING is on: template -> methods.
ENGINE_ROUTES: dict[str, tuple[str, ...]] = {
    "/v1/models": ("GET",),
    "/v1/chat/completions": ("POST",),
    "/v1/completions": ("POST",),
    "/v1/embeddings": ("POST",),
    "/v1/responses": ("POST",),
    "/v1/responses/{response_id}": ("GET",),
    "/v1/responses/{response_id}/cancel": ("POST",),
    "/v1/messages": ("POST",),
    "/v1/messages/count_tokens": ("POST",),
    "/v1/score": ("POST",),
    "/v1/rerank": ("POST",),
    "/v1/audio/transcriptions": ("POST",),
    "/v1/audio/translations": ("POST",),
    "/adapters": ("POST",),
    "/adapters/{adapter_name}": ("DELETE",),
}
# The label of every path that matches no route: one metrics series, however many paths.
UNMATCHED = "unmatched"


@dataclass(frozen=True)
class Route:
    label: str
    methods: tuple[str, ...]
    relayed: bool

    @property
    def gated(self) -> bool:
        """Counted in flight and refused while not serving: work that reaches the engine."""
        return self.relayed or self.label == "/invocations"


def compile_template(template: str) -> re.Pattern[bytes]:
    parts = re.split(r"(\{[a-z_]+\})", template)
    pattern = "".join(PARAMETER if part.startswith("{") else re.escape(part) for part in parts)
    return re.compile(pattern.encode() + rb"\Z")


ROUTES: list[tuple[re.Pattern[bytes], Route]] = [
    (compile_template(label), Route(label, methods, relayed=False))
    for label, methods in FRONT_ROUTES.items()
] + [
    (compile_template(template), Route(template, methods, relayed=True))
    for template, methods in ENGINE_ROUTES.items()
]


def match(raw_path: bytes) -> Route | None:
    """The route a raw (undecoded, query-free) request path names, if any."""
    for pattern, route in ROUTES:
        if pattern.match(raw_path):
            return route
    return None


def raw_path(scope: dict) -> bytes:
    """The request's path as the client sent it (undecoded, without the query)."""
    return scope.get("raw_path") or scope["path"].encode("utf-8", errors="surrogateescape")


class Router:
    """ASGI: the dispatch by the gate's match (404, 405, or the route's handler), and the
    lifespan (start and stop the front's parts)."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        relayed: Handler,
        startup: Callable[[], None],
        shutdown: Callable[[], Awaitable[None]],
        sockets: dict[str, ASGIApp] | None = None,
    ):
        self.handlers = handlers
        self.sockets = sockets or {}
        self.relayed = relayed
        self.startup = startup
        self.shutdown = shutdown

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http":
            response = await self.dispatch(Request(scope, receive))
            await response(scope, receive, send)
        elif scope["type"] == "websocket":
            route = match(raw_path(scope))
            if route is not None and route.label in self.sockets:
                await self.sockets[route.label](scope, receive, send)
            else:
                # Refused before it is accepted: the client's handshake gets a 403.
                await send({"type": "websocket.close", "code": 1008})

    async def dispatch(self, request: Request) -> Response:
        route = request.scope[SCOPE_KEY].route
        if route is None:
            return error_response(404, NO_ROUTE)
        if request.method not in route.methods:
            allowed = ", ".join(route.methods)
            return error_response(
                405, f"{route.label} takes {allowed}.", headers={"Allow": allowed}
            )
        handler = self.relayed if route.relayed else self.handlers[route.label]
        return await handler(request)

    async def lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        try:
            self.startup()
        except Exception as error:
            await send({"type": "lifespan.startup.failed", "message": repr(error)})
            raise
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        try:
            await self.shutdown()
        finally:
            await send({"type": "lifespan.shutdown.complete"})
