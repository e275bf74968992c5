"""A Batch Transform job on the demo, side by side with real-time calls to the same container.

The records are HumanEval chat prompts, round-robin up to the count asked, with one bad
record in the middle; the job is local_runtime/transform_job.py's, as the service would run it.
Real time is measured first on the same prompts (each once, at each level) so the ratio is of
one container, one run. The front's peak memory is its own process's (the engine's is apart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.options import (
    add_local_command,
    add_prompt_args,
    configuration_of,
    int_list,
    local_container,
    sampled_payloads,
)
from bench.report import markdown
from bench.run import run_level, warm_up
from bench.targets import UrlTarget
from local_runtime import transform_job

BAD_RECORD = b'{"question": "neither chat, completion nor TGI"}'


def records_of(payloads: Sequence[dict[str, Any]], count: int) -> list[bytes]:
    """`count` records from the payloads (non-streamed), a bad one in the middle."""
    whole = [
        {key: value for key, value in payload.items() if key not in ("stream", "stream_options")}
        for payload in payloads
    ]
    records = [json.dumps(whole[index % len(whole)]).encode() for index in range(max(count - 1, 0))]
    records.insert(len(records) // 2, BAD_RECORD)
    return records


def answer_key(line: bytes) -> tuple[Any, ...]:
    answer = json.loads(line)
    if "error" in answer:
        return ("error", answer["error"].get("code"))
    choice = answer["choices"][0]
    text = choice["message"]["content"] if "message" in choice else choice["text"]
    return (text, answer["usage"]["prompt_tokens"])


def records_in_place(records: Sequence[bytes], lines: Sequence[bytes]) -> int:
    """Records whose answer agrees with every other answer to the same record (greedy: the
    same text and prompt length), so no answer line sits in another record's place."""
    by_record: dict[bytes, set[tuple[Any, ...]]] = {}
    for record, line in zip(records, lines, strict=True):
        by_record.setdefault(record, set()).add(answer_key(line))
    return sum(1 for record in records if len(by_record[record]) == 1)


def big_body(megabytes: int, good: Sequence[bytes]) -> tuple[bytes, int]:
    """A body of about `megabytes` MiB: the good records, then records of 100 KiB prompts
    asking to stream (each answered with its own error line by the front, so the engine's
    time does not dominate); and its record count."""
    filler = json.dumps({"prompt": "x" * (100 * 1024), "stream": True}).encode()
    count = max(megabytes * 1024 * 1024 // (len(filler) + 1), 1)
    records = [*good, *([filler] * count)]
    return b"\n".join(records) + b"\n", len(records)


def post_big_body(url: str, body: bytes) -> tuple[int, int]:
    """Post one big transform body; the status and the number of answer lines."""
    answer = httpx.post(
        f"{url}/invocations",
        content=body,
        headers={"Content-Type": "application/jsonlines"},
        timeout=600,
    )
    return answer.status_code, len(answer.content.splitlines())


def peak_memory_mib(pid: int) -> float | None:
    """The process's peak resident memory (VmHWM), MiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


async def real_time(url: str, payloads: Sequence[dict[str, Any]], levels: Sequence[int]):
    target = UrlTarget(url, max_connections=max(levels) + 8)
    try:
        await warm_up(target, payloads)
        return [await run_level(target, payloads, level, "real time ") for level in levels]
    finally:
        await target.aclose()


def run_transform_bench(
    url: str,
    front_pid: int | None,
    payloads: Sequence[dict[str, Any]],
    count: int,
    levels: Sequence[int],
    out_dir: Path,
    big_body_mb: int = 0,
) -> str:
    levels_seen = asyncio.run(real_time(url, payloads, levels))
    best = max(levels_seen, key=lambda level: level["output_tokens_per_s"])
    records = records_of(payloads, count)
    with httpx.Client() as client:
        parameters = transform_job.execution_parameters(client, url, {})
    lines, figures = asyncio.run(transform_job.run(records, url, parameters))
    lost = len(records) - len(lines)
    in_place = records_in_place(records, lines)
    tok_s = figures.completion_tokens / figures.seconds
    peak_before = peak_memory_mib(front_pid) if front_pid else None
    big = None
    if big_body_mb:
        body, big_records = big_body(big_body_mb, records[:8])
        status, answered = post_big_body(url, body)
        big = {
            "body_mib": len(body) / 2**20,
            "records": big_records,
            "status": status,
            "answer_lines": answered,
            "front_peak_mib_after": peak_memory_mib(front_pid) if front_pid else None,
        }
    result = {
        "records": len(records),
        "lost": lost,
        "error_lines": figures.failed,
        "records_in_place": in_place,
        "mini_batches": figures.mini_batches,
        "parameters": vars(parameters),
        "seconds": figures.seconds,
        "records_per_s": len(records) / figures.seconds,
        "output_tok_s": tok_s,
        "real_time": {level["concurrency"]: level["output_tokens_per_s"] for level in levels_seen},
        "best_real_time_level": best["concurrency"],
        "ratio_to_best_real_time": tok_s / best["output_tokens_per_s"],
        "front_peak_mib": peak_before,
        "big_body": big,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "transform.json").write_text(json.dumps(result, indent=2))
    rows = [[f"real time c={c}", "", "", f"{v:.1f}", ""] for c, v in result["real_time"].items()]
    rows.append(
        [
            f"transform ({parameters.batch_strategy}, {figures.mini_batches} mini-batches, "
            f"{parameters.max_concurrent_transforms} in flight)",
            f"{result['records_per_s']:.2f}",
            f"{lost} lost, {figures.failed} error lines",
            f"{tok_s:.1f}",
            f"{result['ratio_to_best_real_time']:.2f}x c={best['concurrency']}",
        ]
    )
    table = markdown(["path", "records/s", "records", "output tok/s", "vs best real time"], rows)
    text = (
        f"# Batch Transform: {len(records)} records\n\n{table}\n\n"
        f"Front peak memory: {result['front_peak_mib'] or 0:.0f} MiB. "
        f"Answer lines in their record's place: {in_place} of {len(records)}.\n"
    )
    if big is not None:
        added = (big["front_peak_mib_after"] or 0) - (peak_before or 0)
        text += (
            f"\nOne {big['body_mib']:.0f} MiB body of {big['records']} records: status "
            f"{big['status']}, {big['answer_lines']} answer lines; the front's peak memory "
            f"rose {added:.0f} MiB to {big['front_peak_mib_after'] or 0:.0f} MiB "
            f"({added / big['body_mib']:.2f}x the body).\n"
        )
    (out_dir / "transform.md").write_text(text)
    return text


HELP = (
    "a Batch Transform job (local_runtime transform) of --records HumanEval records with one "
    "bad record, beside real-time calls at --concurrency on the same container: records/s, "
    "output tok/s, the ratio to the best real-time level, lost and error lines, front memory"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "transform", command, HELP)
    add_prompt_args(parser, 64)
    parser.add_argument("--records", type=int, default=1000, help="default 1000")
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=[16, 64, 256],
        help="real-time levels, default 16,64,256",
    )
    parser.add_argument(
        "--big-body-mb",
        type=int,
        default=100,
        help="then one body of this many MiB (the limit raised to it), for the front's "
        "memory; 0: none (default 100)",
    )


def command(args: argparse.Namespace) -> int:
    configuration = configuration_of(args)
    # Whole answers both ways: a transform's records cannot stream.
    payloads = sampled_payloads(args, stream=False)
    container = local_container(
        args,
        configuration,
        "transform",
        extra_env={
            "SAGEMAKER_BATCH": "true",
            "SAGEMAKER_MAX_PAYLOAD_IN_MB": str(max(args.big_body_mb + 1, 6)),
        },
        port=args.port,
    )
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr, flush=True)
        container.wait_ready()
        text = run_transform_bench(
            container.url,
            container.process.pid,
            payloads,
            args.records,
            args.concurrency,
            args.out_dir,
            args.big_body_mb,
        )
    print(text)
    print(f"wrote {args.out_dir}/transform.json and transform.md")
    return 0
