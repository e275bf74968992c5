"""A client of /invocations-bidirectional-stream as SageMaker's router holds one: one session,
JSON text frames each way, requests told apart by id (serving/bidi_frames.py); and what the
frames of one answer must be (in order, none lost or doubled)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.engine_activity import wait_idle
from serving.bidi_frames import ROUTE

ENDINGS = ("done", "error", "cancelled")


def socket_url(url: str) -> str:
    return "ws" + url.removeprefix("http") + ROUTE


async def open_session(url: str) -> ClientConnection:
    return await connect(
        socket_url(url), max_size=None, max_queue=None, open_timeout=60, proxy=None
    )


async def next_frame(session: ClientConnection) -> dict:
    return json.loads(await session.recv())


async def until(session: ClientConnection, request_id: Any, kinds: tuple[str, ...]) -> dict:
    """Frames until one of `kinds` for `request_id`; that frame."""
    while True:
        frame = await next_frame(session)
        if frame["id"] == request_id and frame["type"] in kinds:
            return frame


async def socket_request(session: ClientConnection, request_id: Any, payload: dict) -> int:
    """One request on the session to its end; its completion tokens."""
    await session.send(json.dumps({"id": request_id, **payload}))
    done = await until(session, request_id, ENDINGS)
    if done["type"] != "done":
        raise RuntimeError(f"request {request_id} ended with {done}")
    return int(done["usage"]["completion_tokens"])


def chat_text(frames: list[dict]) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for frame in frames
        if frame["type"] == "chunk"
        for choice in frame["data"].get("choices", [])
    )


async def session_with_a_cancel(url: str, payloads: list[dict]) -> dict[Any, list[dict]]:
    """All of `payloads` sent at once on one session, the second cancelled after its first
    chunk; every frame by id until each has ended (and the cancel of one that had already
    ended has been refused)."""
    frames: dict[Any, list[dict]] = {number: [] for number in range(len(payloads))}
    session = await open_session(url)
    try:
        for number, payload in enumerate(payloads):
            await session.send(json.dumps({"id": number, **payload, "stream": True}))
        cancelled = False
        open_ids = set(frames)
        while open_ids or (cancelled and not refused_or_cancelled(frames[1])):
            frame = await next_frame(session)
            frames[frame["id"]].append(frame)
            if frame["type"] in ENDINGS and frame["id"] in open_ids:
                open_ids.discard(frame["id"])
            if not cancelled and frame["id"] == 1:
                await session.send(json.dumps({"type": "cancel", "id": 1}))
                cancelled = True
    finally:
        await session.close()
    return frames


def refused_or_cancelled(frames: list[dict]) -> bool:
    """The cancel was answered: `cancelled`, or a 404 after the request had ended."""
    return any(
        frame["type"] == "cancelled" or (frame["type"] == "error" and frame["error"]["code"] == 404)
        for frame in frames
    )


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


async def integrity(url: str, payloads: list[dict], sessions: int, per_session: int) -> dict:
    """`sessions` sessions at once, `per_session` requests each, one cancelled in each."""
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        references = []
        for payload in payloads:
            answer = await http.post("/invocations", json=payload)
            answer.raise_for_status()
            references.append(answer.json()["choices"][0]["message"]["content"])
        await wait_idle(http)
    chosen = [
        [(session * per_session + slot) % len(payloads) for slot in range(per_session)]
        for session in range(sessions)
    ]
    outcomes = await asyncio.gather(
        *(session_with_a_cancel(url, [payloads[i] for i in picks]) for picks in chosen)
    )
    found: list[str] = []
    counts = {"done": 0, "cancelled": 0, "frames": 0}
    for picks, frames in zip(chosen, outcomes, strict=True):
        for number, pick in enumerate(picks):
            found += faults(frames[number], references[pick])
            counts["frames"] += len(frames[number])
            ending = next((f["type"] for f in frames[number] if f["type"] in ENDINGS), None)
            if ending in counts:
                counts[ending] += 1
    return {
        "sessions": sessions,
        "requests": sessions * per_session,
        **counts,
        "faulty_ids": len(found),
        "faults": found[:10],
    }
