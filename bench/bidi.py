"""Bidirectional streaming measured against `/invocations`, on one container, side by side:

- throughput: the same greedy requests one after another over an open session and as
  streamed `/invocations` calls, interleaved rounds: output tokens/s each;
- a second turn: while a long first turn streams, the next turn sent on the open session
  against a new `/invocations` call made beside a long stream: time to the first token;
- cancel to idle: a long generation stopped by a cancel frame against a dropped HTTP
  stream: time from the cancel (or the close) until vLLM generates no more tokens (and, for
  the cancel, until its running gauge reads 0);
- memory: the front's resident memory with N idle sessions open against none;
- integrity: many sessions at once, each with requests in flight and one of them cancelled
  mid-stream: every id's frames against the same request's greedy answer through
  `/invocations` (a lost or reordered chunk changes the text; a cancelled request's text must
  be a beginning of it), and exactly one last frame per id.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from serving.bidi_frames import ROUTE
from serving.metrics import metric_total

RUNNING = "vllm:num_requests_running"
GENERATED = "vllm:generation_tokens_total"
# How long vLLM's generated-token count must stay still to call the generation stopped.
QUIET_SECONDS = 0.4
LONG = {"prompt": "def parse(text):", "max_tokens": 1500, "ignore_eos": True, "temperature": 0}
ENDINGS = ("done", "error", "cancelled")
IDLE_POLL_SECONDS = 0.005


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


async def http_request(http: httpx.AsyncClient, payload: dict) -> int:
    """One streamed /invocations call to its end; its completion tokens."""
    body = {**payload, "stream": True, "stream_options": {"include_usage": True}}
    tokens = 0
    async with http.stream("POST", "/invocations", json=body) as answer:
        answer.raise_for_status()
        async for line in answer.aiter_lines():
            if line.startswith("data: {") and '"usage"' in line:
                usage = json.loads(line[6:]).get("usage")
                tokens = usage["completion_tokens"] if usage else tokens
    return tokens


async def throughput(url: str, payloads: list[dict], rounds: int) -> dict[str, Any]:
    """Output tokens/s of the same requests, one at a time, socket and HTTP in turn."""
    speeds: dict[str, list[float]] = {"socket": [], "http": []}
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        session = await open_session(url)
        try:
            for _ in range(rounds):
                for path in ("socket", "http"):
                    began = time.perf_counter()
                    tokens = 0
                    for number, payload in enumerate(payloads):
                        if path == "socket":
                            tokens += await socket_request(session, number, payload)
                        else:
                            tokens += await http_request(http, payload)
                    speeds[path].append(tokens / (time.perf_counter() - began))
        finally:
            await session.close()
    return {
        "socket_tokens_per_s": round(statistics.median(speeds["socket"]), 1),
        "http_tokens_per_s": round(statistics.median(speeds["http"]), 1),
        "socket_over_http": round(
            statistics.median(s / h for s, h in zip(speeds["socket"], speeds["http"], strict=True)),
            3,
        ),
        "rounds": rounds,
    }


async def second_turn(url: str, turn: dict, repeats: int) -> dict[str, Any]:
    """Time to the first token of a turn sent beside a long stream: on the session that
    carries the stream, and as a new /invocations call."""
    on_session: list[float] = []
    new_call: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        for _ in range(repeats):
            session = await open_session(url)
            try:
                await session.send(json.dumps({"id": "first", **LONG, "stream": True}))
                await until(session, "first", ("chunk",))
                began = time.perf_counter()
                await session.send(json.dumps({"id": "second", **turn}))
                await until(session, "second", ("chunk",))
                on_session.append(time.perf_counter() - began)
                await session.send(json.dumps({"type": "cancel", "id": "first"}))
                await until(session, "second", ENDINGS)
            finally:
                await session.close()
            await wait_idle(http)
            async with http.stream("POST", "/invocations", json={**LONG, "stream": True}) as first:
                lines = first.aiter_lines()
                async for line in lines:
                    if line.startswith("data: "):
                        break
                began = time.perf_counter()
                async with httpx.AsyncClient(base_url=url, timeout=600) as fresh:
                    body = {**turn, "stream": True}
                    async with fresh.stream("POST", "/invocations", json=body) as second:
                        async for line in second.aiter_lines():
                            if line.startswith("data: "):
                                new_call.append(time.perf_counter() - began)
                                break
            await wait_idle(http)
    return {
        "session_ttft_ms": round(statistics.median(on_session) * 1000, 1),
        "new_call_ttft_ms": round(statistics.median(new_call) * 1000, 1),
        "repeats": repeats,
    }


async def running(http: httpx.AsyncClient) -> float:
    return metric_total((await http.get("/metrics")).text, RUNNING)


async def wait_idle(http: httpx.AsyncClient, limit: float = 120) -> float:
    """Seconds until vLLM runs nothing."""
    began = time.perf_counter()
    while await running(http) > 0:
        if time.perf_counter() - began > limit:
            raise RuntimeError(f"vLLM still runs a request after {limit} s")
        await asyncio.sleep(IDLE_POLL_SECONDS)
    return time.perf_counter() - began


async def generated(http: httpx.AsyncClient) -> float:
    return metric_total((await http.get("/metrics")).text, GENERATED)


async def after_stop(http: httpx.AsyncClient, count: float, began: float) -> tuple[float, float]:
    """Seconds from `began` to the last change of vLLM's generated-token count (`count`
    just before; polled until it has stood still for QUIET_SECONDS), and to its running
    gauge reading 0. The first is when generation stopped, to within one scrape (tokens of
    the scrape before `began` count after it: an upper bound). The gauge is no such clock:
    an abort that leaves the engine idle publishes no step, so it reads 0 later."""
    last_change, zero_at = began, None
    while True:
        metrics = (await http.get("/metrics")).text
        now = time.perf_counter()
        value = metric_total(metrics, GENERATED)
        if value != count:
            count, last_change = value, now
        if zero_at is None and metric_total(metrics, RUNNING) == 0:
            zero_at = now
        if zero_at is not None and now - last_change > QUIET_SECONDS:
            return last_change - began, zero_at - began


async def cancel_to_idle(url: str, repeats: int) -> dict[str, Any]:
    """From a cancel frame, and from a dropped HTTP stream, until vLLM generates no more
    tokens, and until its running gauge reads 0."""
    cancel: list[float] = []
    cancel_gauge: list[float] = []
    dropped: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        for _ in range(repeats):
            await wait_idle(http)
            session = await open_session(url)
            try:
                await session.send(json.dumps({"id": "long", **LONG}))
                for _ in range(3):
                    await until(session, "long", ("chunk",))
                count = await generated(http)
                began = time.perf_counter()
                await session.send(json.dumps({"type": "cancel", "id": "long"}))
                last_token, gauge = await after_stop(http, count, began)
                cancel.append(last_token)
                cancel_gauge.append(gauge)
            finally:
                await session.close()
            await wait_idle(http)
            async with httpx.AsyncClient(base_url=url, timeout=600) as leaving:
                stream = leaving.stream("POST", "/invocations", json={**LONG, "stream": True})
                answer = await stream.__aenter__()
                events = 0
                lines = answer.aiter_lines()
                async for line in lines:
                    events += line.startswith("data: ")
                    if events == 3:
                        break
                count = await generated(http)
                began = time.perf_counter()
                # Closing the lines' generator is what drops the stream (its finalizer
                # would, at once, had the loop above been left with it unclosed).
                await lines.aclose()
                await stream.__aexit__(None, None, None)
            dropped.append((await after_stop(http, count, began))[0])
            await wait_idle(http)
    return {
        "cancel_to_last_token_ms": round(statistics.median(cancel) * 1000, 1),
        "cancel_to_last_token_max_ms": round(max(cancel) * 1000, 1),
        "cancel_to_running_gauge_0_ms": round(statistics.median(cancel_gauge) * 1000, 1),
        "dropped_stream_to_last_token_ms": round(statistics.median(dropped) * 1000, 1),
        "repeats": repeats,
    }


async def idle_sessions_memory(url: str, pid: int, count: int) -> dict[str, Any]:
    """The front's resident memory with `count` idle sessions open, against none."""
    import psutil

    front = psutil.Process(pid)
    before = front.memory_info().rss
    sessions = [await open_session(url) for _ in range(count)]
    try:
        await asyncio.sleep(1)
        with_sessions = front.memory_info().rss
    finally:
        await asyncio.gather(*(session.close() for session in sessions))
    return {
        "sessions": count,
        "front_rss_mb": round(before / 2**20, 1),
        "front_rss_with_sessions_mb": round(with_sessions / 2**20, 1),
        "kb_per_session": round((with_sessions - before) / count / 1024, 1),
    }


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
