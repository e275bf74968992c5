"""`bidi`: bidirectional streaming against `/invocations` (bench/bidi.py), on containers of
each configuration in turn."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bench import report
from bench.commands.common import add_local_args, add_out_dir, drafter_of, settings_of
from bench.configuration import LocalContainer, parse_configuration
from bench.prompts import CODE_INSTRUCTION, humaneval_prompts

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
    parser.add_argument("--rounds", type=int, default=3, help="socket/HTTP rounds (3)")
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
    from bench import bidi

    requests = payloads(args)

    async def run() -> dict[str, Any]:
        return {
            "throughput": await bidi.throughput(url, requests, args.rounds),
            "second_turn": await bidi.second_turn(url, requests[0], args.repeats),
            "cancel": await bidi.cancel_to_idle(url, args.repeats),
            "memory": await bidi.idle_sessions_memory(url, pid, args.sessions),
            "integrity": await bidi.integrity(url, requests, args.busy_sessions, 3),
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
