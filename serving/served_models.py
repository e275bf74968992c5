"""Which models the engine serves by name, and the one refusal that follows from it.

The engine takes any `model` (VLLM_SKIP_MODEL_NAME_VALIDATION, serving/engine.py): SageMaker's
OpenAI path forwards bodies as clients wrote them, with `model` absent, `""`, the endpoint's
name or whatever a framework's user typed, and the one served model answers them all, naming
itself in the answer's `model`. A loaded LoRA adapter's name still selects that adapter.

What that leaves to the front is an adapter a client names on purpose, in SageMaker's adapter
header (`X-Amzn-SageMaker-Adapter-Identifier`, which vLLM turns into the body's `model`): one
that is not loaded must get vLLM's 404, not the base model answering in its place. The names
come from the engine's /v1/models, kept a few seconds and forgotten whenever an adapter is
loaded or unloaded through the front (the only way to the engine).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

from serving.engine_client import EngineClient
from serving.errors import error_body
from serving.headers import RawHeaders

ADAPTER_HEADER = b"x-amzn-sagemaker-adapter-identifier"
# SageMaker's adapter routes (serving/routes.py): a call there changes what is loaded.
ADAPTER_ROUTES = b"/adapters"
FRESH_SECONDS = 5.0


class NotServed:
    """The engine's answer for a model it does not serve, written by the front: the same
    status and body vLLM gives, read like any engine answer (serving/engine_client.py)."""

    def __init__(self, name: str):
        message = f"The model `{name}` does not exist."
        self.body = json.dumps(error_body(404, message, "NotFoundError")).encode()
        self.status = 404
        self.raw_headers: RawHeaders = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(self.body)),
        ]

    def header(self, name: str) -> str:
        wanted = name.lower().encode()
        return next((value.decode() for key, value in self.raw_headers if key == wanted), "")

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self.body

    async def read(self) -> bytes:
        return self.body

    def close(self) -> None:
        pass


class ServedModels:
    """The names the engine answers to now: its served names and its loaded adapters."""

    def __init__(self, client: EngineClient, fresh_seconds: float = FRESH_SECONDS):
        self.client = client
        self.fresh_seconds = fresh_seconds
        self._names: frozenset[str] | None = None
        self._read_at = 0.0

    async def names(self) -> frozenset[str] | None:
        """The engine's model ids, or None while it does not say (loading, restarting)."""
        if self._names is not None and time.monotonic() - self._read_at < self.fresh_seconds:
            return self._names
        text = await self.client.get_text("/v1/models")
        try:
            listed = json.loads(text)["data"] if text is not None else None
            names = frozenset(str(model["id"]) for model in listed) if listed else None
        except (ValueError, KeyError, TypeError):
            names = None
        self._names, self._read_at = names, time.monotonic()
        return names

    def forget(self) -> None:
        self._names = None

    async def missing_adapter(self, headers: RawHeaders) -> str | None:
        """The adapter the request's header names, when the engine has no such model; None
        when it names none, the engine has it, or the engine cannot say."""
        named = next((value for key, value in headers if key.lower() == ADAPTER_HEADER), None)
        if named is None:
            return None
        name = named.decode("utf-8", errors="replace").strip()
        if not name:
            return None
        names = await self.names()
        return name if names is not None and name not in names else None
