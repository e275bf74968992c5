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

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx

from bench import report
from bench.compare import compare_async
from bench.configuration import LocalContainer
from bench.engine_activity import (
    after_stop,
    generated,
    wait_idle,
)
from bench.options import add_local_args, add_out_dir, add_rounds, drafter_of, settings_of
from bench.websocket_client import (
    ENDINGS,
    integrity,
    open_session,
    socket_request,
    until,
)
from harness.configurations import parse_configuration
from workloads.prompts import CODE_INSTRUCTION, humaneval_prompts

LONG = {"prompt": "def parse(text):", "max_tokens": 1500, "ignore_eos": True, "temperature": 0}


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
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        session = await open_session(url)

        async def one_by_one(path: str, level: int, round_number: int) -> float:
            began = time.perf_counter()
            tokens = 0
            for number, payload in enumerate(payloads):
                if path == "socket":
                    tokens += await socket_request(session, number, payload)
                else:
                    tokens += await http_request(http, payload)
            return tokens / (time.perf_counter() - began)

        try:
            measured = await compare_async(one_by_one, ["socket", "http"], [1], rounds, "abba")
        finally:
            await session.close()
    speeds = {path: by_level[1] for path, by_level in measured.items()}
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


HELP = (
    "bidirectional streaming (/invocations-bidirectional-stream) against /invocations: "
    "throughput, a second turn's first token, cancel to idle, memory of idle sessions"
)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("bidi", help=HELP, description=HELP)
    parser.set_defaults(handler=command)
    add_out_dir(parser)
    add_local_args(parser.add_argument_group("local containers"))
    parser.add_argument(
        "--configs",
        default="none,peagle:7",
        help="configurations measured in turn, comma-separated (default none,peagle:7)",
    )
    parser.add_argument("--num-prompts", type=int, default=16, help="HumanEval prompts (16)")
    parser.add_argument("--max-tokens", type=int, default=64, help="per request (64)")
    add_rounds(parser, 3, "socket/HTTP rounds")
    parser.add_argument("--repeats", type=int, default=5, help="for the timings (5)")
    parser.add_argument("--sessions", type=int, default=256, help="idle sessions (256)")
    parser.add_argument(
        "--busy-sessions",
        type=int,
        default=16,
        help="sessions at once for the integrity check, each with requests in flight and one "
        "cancelled (16)",
    )


def payloads(args: argparse.Namespace) -> list[dict[str, Any]]:
    return [
        {
            "messages": [{"role": "user", "content": CODE_INSTRUCTION + prompt}],
            "max_tokens": args.max_tokens,
            "temperature": 0,
            "ignore_eos": True,
        }
        for prompt in humaneval_prompts()[: args.num_prompts]
    ]


def measure(url: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    requests = payloads(args)

    async def run() -> dict[str, Any]:
        return {
            "throughput": await throughput(url, requests, args.rounds),
            "second_turn": await second_turn(url, requests[0], args.repeats),
            "cancel": await cancel_to_idle(url, args.repeats),
            "memory": await idle_sessions_memory(url, pid, args.sessions),
            "integrity": await integrity(url, requests, args.busy_sessions, 3),
        }

    return asyncio.run(run())


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| configuration | socket tok/s | /invocations tok/s | socket / HTTP | second turn "
        "TTFT: session / new call (ms) | cancel frame to the last token (ms, median / max) | "
        "to running 0 | dropped stream to the last token (ms) | front RSS with idle sessions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        speed, turn = result["throughput"], result["second_turn"]
        cancel, memory = result["cancel"], result["memory"]
        lines.append(
            f"| {name} | {speed['socket_tokens_per_s']} | {speed['http_tokens_per_s']} | "
            f"{speed['socket_over_http']:.2f}x | {turn['session_ttft_ms']} / "
            f"{turn['new_call_ttft_ms']} | {cancel['cancel_to_last_token_ms']} / "
            f"{cancel['cancel_to_last_token_max_ms']} | "
            f"{cancel['cancel_to_running_gauge_0_ms']} | "
            f"{cancel['dropped_stream_to_last_token_ms']} | "
            f"{memory['front_rss_mb']} -> {memory['front_rss_with_sessions_mb']} MB with "
            f"{memory['sessions']} ({memory['kb_per_session']} KB each) |"
        )
    for name, result in results.items():
        check = result["integrity"]
        lines.append(
            f"\n- {name}, {check['sessions']} sessions at once with {check['requests']} "
            f"requests, one cancelled in each: {check['done']} done, {check['cancelled']} "
            f"cancelled, {check['frames']} frames; ids with a frame lost, reordered or "
            f"doubled: {check['faulty_ids']}"
        )
    if "none" in results and len(results) > 1:
        alone = results["none"]["throughput"]
        for name, result in results.items():
            if name == "none":
                continue
            speed = result["throughput"]
            lines.append(
                f"\n- {name} / no speculation: over the socket "
                f"{speed['socket_tokens_per_s'] / alone['socket_tokens_per_s']:.2f}x, through "
                f"/invocations {speed['http_tokens_per_s'] / alone['http_tokens_per_s']:.2f}x"
            )
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    out_dir = args.out_dir / "bidi"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.configs.split(","):
        configuration = parse_configuration(name.strip(), drafter_of(args))
        container = LocalContainer(
            configuration,
            opt_ml_root=args.opt_ml_root.absolute(),
            log_path=out_dir / "logs" / f"{configuration.name}.log",
            enforce_eager=args.enforce_eager,
            port=args.port,
        )
        with container.start():
            container.wait_ready()
            results[configuration.name] = measure(container.url, container.process.pid, args)
        print(f"{configuration.name}: {results[configuration.name]}", flush=True)
    report.write_json(out_dir / "bidi.json", {"settings": settings_of(args), "results": results})
    text = table(results)
    (out_dir / "bidi.md").write_text(f"# Bidirectional streaming\n\n{text}\n")
    print(text)
    return 0
