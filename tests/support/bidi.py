"""A bidirectional-stream session as SageMaker's router holds one: a WebSocket to the
container's /invocations-bidirectional-stream, JSON text frames each way
(serving/bidi_frames.py)."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

from websockets.sync.client import ClientConnection, connect

from serving.bidi_frames import ROUTE
from tests.support.stalls import WATCH

ENDINGS = ("done", "error", "cancelled")


def socket_url(http_url: str, path: str = ROUTE) -> str:
    return "ws" + http_url.removeprefix("http") + path


def open_session(http_url: str, **options: Any) -> ClientConnection:
    """A session whose frames are all kept as they come (no read-side back-pressure), so a
    test can read them whenever it likes; open until closed (or a `with` block ends), never
    through a proxy."""
    return connect(
        socket_url(http_url),
        max_size=None,
        max_queue=None,
        open_timeout=30,
        proxy=None,
        legacy=True,
        **options,
    )


def send(session: ClientConnection, frame: dict) -> None:
    session.send(json.dumps(frame))


def receive(session: ClientConnection, seconds: float = 120) -> dict:
    """The next frame, within `seconds` of the machine running."""
    began = time.monotonic()
    while True:
        try:
            return json.loads(session.recv(timeout=1))
        except TimeoutError:
            assert WATCH.since(began) < seconds, f"no frame in {seconds} s"


def until_ended(session: ClientConnection, ids: set, seconds: float = 180) -> dict[Any, list]:
    """Every frame until each of `ids` has its last (done, error or cancelled); frames of
    other ids too."""
    frames: dict[Any, list[dict]] = defaultdict(list)
    open_ids = set(ids)
    while open_ids:
        frame = receive(session, seconds)
        frames[frame["id"]].append(frame)
        if frame["type"] in ENDINGS:
            open_ids.discard(frame["id"])
    return frames


def until_type(session: ClientConnection, request_id: Any, kind: str) -> list[dict]:
    """Frames up to and with the first of `kind` for `request_id`."""
    seen = []
    while True:
        frame = receive(session)
        seen.append(frame)
        if frame["id"] == request_id and frame["type"] == kind:
            return seen
        if frame["id"] == request_id and frame["type"] in ENDINGS:
            raise AssertionError(f"{request_id!r} ended before a {kind} frame: {frame}")


def completion_text(frames: list[dict]) -> str:
    return "".join(choice.get("text") or "" for choice in chunk_choices(frames))


def chat_text(frames: list[dict]) -> str:
    return "".join(choice["delta"].get("content") or "" for choice in chunk_choices(frames))


def chunk_choices(frames: list[dict]) -> list[dict]:
    """The choices of a request's chunk frames, in order."""
    return [
        choice
        for frame in frames
        if frame["type"] == "chunk"
        for choice in frame["data"].get("choices", [])
    ]


def faults(frames: list[dict], reference: str) -> list[str]:
    """What is wrong with one id's frames: anything but chunks before exactly one ending
    (after it, only the 404 of a cancel that came too late); a done whose text is not the
    reference, a cancelled one whose text is not a beginning of it; an error."""
    types = [frame["type"] for frame in frames]
    first = next((i for i, kind in enumerate(types) if kind in ENDINGS), None)
    if first is None or set(types[:first]) - {"chunk"}:
        return [f"frames {types}"]
    late = frames[first + 1 :]
    if any(frame["type"] != "error" or frame["error"]["code"] != 404 for frame in late):
        return [f"frames after the end: {types}"]
    end, text = frames[first], chat_text(frames)
    if end["type"] == "done" and text != reference:
        return [f"done with {text!r}, not {reference!r}"]
    if end["type"] == "cancelled" and not reference.startswith(text):
        return [f"cancelled with {text!r}, not a beginning of {reference!r}"]
    if end["type"] == "error":
        return [f"error {end['error']}"]
    return []
