"""`python -m local_runtime transform IN.jsonl OUT.jsonl`: a Batch Transform job, run here.

It drives the container the way the service drives it for a job with `SplitType=Line` and
`AssembleWith=Line`: it asks `GET /execution-parameters` (the job's own values, given as
options, win), splits the input at line ends, packs consecutive records into mini-batches
under `MaxPayloadInMB` (`MultiRecord`) or sends one each (`SingleRecord`), keeps
`MaxConcurrentTransforms` of them in flight, retries a failed call as the service does
(`InvocationsMaxRetries`), and writes the answers line by line in input order. With
`--join-source input` each output line is the input record with the answer under
`SageMakerOutput`, as `DataProcessing.JoinSource=Input` writes it.

A container that answers a mini-batch with a line count other than its record count fails the
job, as it does on SageMaker: the output could not be matched to its input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

MiB = 1024 * 1024
# The service's defaults when neither the job nor the container says.
SERVICE_DEFAULTS = {
    "MaxConcurrentTransforms": 1,
    "BatchStrategy": "MultiRecord",
    "MaxPayloadInMB": 6,
}
DEFAULT_INVOCATIONS_TIMEOUT = 600.0  # ModelClientConfig.InvocationsTimeoutInSeconds
DEFAULT_MAX_RETRIES = 3  # ModelClientConfig.InvocationsMaxRetries


class TransformFailed(Exception):
    """The job fails: the reason, as the service's FailureReason would say it."""


@dataclass(frozen=True)
class Parameters:
    max_concurrent_transforms: int
    batch_strategy: str
    max_payload_mb: int


@dataclass
class Figures:
    records: int = 0
    failed: int = 0
    mini_batches: int = 0
    retries: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        rate = self.records / self.seconds if self.seconds else 0.0
        tokens = self.completion_tokens / self.seconds if self.seconds else 0.0
        return (
            f"{self.records} records in {self.mini_batches} mini-batches, {self.seconds:.1f} s: "
            f"{rate:.2f} records/s, {tokens:.1f} output tok/s; {self.failed} records answered "
            f"with an error line; {self.retries} calls retried"
        )


def execution_parameters(
    client: httpx.Client, container_url: str, job: dict[str, Any]
) -> Parameters:
    """The container's execution parameters, the job's own values over them."""
    asked: dict[str, Any] = dict(SERVICE_DEFAULTS)
    try:
        answer = client.get(f"{container_url}/execution-parameters", timeout=10)
        if answer.status_code == 200:
            asked.update(answer.json())
    except (httpx.HTTPError, ValueError):
        pass  # the service too goes on with its defaults
    asked.update({key: value for key, value in job.items() if value is not None})
    strategy = asked["BatchStrategy"]
    if strategy not in ("MultiRecord", "SingleRecord"):
        raise TransformFailed(f"BatchStrategy {strategy!r} is not MultiRecord or SingleRecord")
    return Parameters(int(asked["MaxConcurrentTransforms"]), strategy, int(asked["MaxPayloadInMB"]))


def mini_batches(records: Sequence[bytes], parameters: Parameters) -> Iterator[list[bytes]]:
    """Consecutive records, each mini-batch's body within MaxPayloadInMB."""
    limit = parameters.max_payload_mb * MiB
    batch: list[bytes] = []
    size = 0
    for number, record in enumerate(records, 1):
        if len(record) + 1 > limit:
            raise TransformFailed(
                f"record {number} is {len(record)} bytes, over MaxPayloadInMB "
                f"({parameters.max_payload_mb}); raise MaxPayloadInMB or split the record."
            )
        if batch and (
            parameters.batch_strategy == "SingleRecord" or size + len(record) + 1 > limit
        ):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += len(record) + 1
    if batch:
        yield batch


def completion_tokens(answer: Any) -> int:
    if isinstance(answer, dict):
        usage = answer.get("usage") or {}
        return int(usage.get("completion_tokens") or 0)
    if isinstance(answer, list):  # TGI: one entry per input
        return sum(
            int((entry.get("details") or {}).get("generated_tokens") or 0)
            for entry in answer
            if isinstance(entry, dict)
        )
    return 0


def joined(record: bytes, answer_line: bytes) -> bytes:
    """JoinSource=Input: the input record with the answer under SageMakerOutput."""
    source = json.loads(record)
    answer = json.loads(answer_line)
    if not isinstance(source, dict):
        source = {"SageMakerInput": source}
    return json.dumps({**source, "SageMakerOutput": answer}, ensure_ascii=False).encode()


async def invoke(
    client: httpx.AsyncClient,
    container_url: str,
    batch: list[bytes],
    content_type: str,
    timeout: float,
    max_retries: int,
    figures: Figures,
) -> list[bytes]:
    """One mini-batch's answer lines, retried on a failed call as the service does."""
    body = b"\n".join(batch) + b"\n"
    problem = ""
    for attempt in range(max_retries + 1):
        if attempt:
            figures.retries += 1
        try:
            answer = await client.post(
                f"{container_url}/invocations",
                content=body,
                headers={"Content-Type": content_type},
                timeout=timeout,
            )
        except httpx.HTTPError as error:
            problem = f"the call failed: {error!r}"
            continue
        if answer.status_code != 200:
            problem = f"the container answered {answer.status_code}: {answer.text[:300]}"
            continue
        lines = answer.content.splitlines()
        if len(lines) != len(batch):
            raise TransformFailed(
                f"a mini-batch of {len(batch)} records got {len(lines)} answer lines; "
                "the output cannot be matched to the input."
            )
        return lines
    raise TransformFailed(f"a mini-batch failed after {max_retries} retries: {problem}")


async def run(
    records: Sequence[bytes],
    container_url: str,
    parameters: Parameters,
    content_type: str = "application/json",
    timeout: float = DEFAULT_INVOCATIONS_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    join_input: bool = False,
) -> tuple[list[bytes], Figures]:
    """Every record's output line, in input order, and the job's figures."""
    figures = Figures(records=len(records))
    batches = list(mini_batches(records, parameters))
    figures.mini_batches = len(batches)
    slots = asyncio.Semaphore(parameters.max_concurrent_transforms)
    started = time.perf_counter()
    limits = httpx.Limits(max_connections=parameters.max_concurrent_transforms)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one(batch: list[bytes]) -> list[bytes]:
            async with slots:
                return await invoke(
                    client, container_url, batch, content_type, timeout, max_retries, figures
                )

        answers = await asyncio.gather(*(one(batch) for batch in batches))
    figures.seconds = time.perf_counter() - started
    output: list[bytes] = []
    for batch, lines in zip(batches, answers, strict=True):
        for record, line in zip(batch, lines, strict=True):
            parsed = json.loads(line)
            if isinstance(parsed, dict) and "error" in parsed:
                figures.failed += 1
            figures.completion_tokens += completion_tokens(parsed)
            output.append(joined(record, line) if join_input else line)
    return output, figures


def read_records(path: Path) -> list[bytes]:
    """SplitType=Line: one record per non-blank line."""
    return [line.strip() for line in path.read_bytes().split(b"\n") if line.strip()]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local_runtime transform", description=__doc__.split("\n")[0]
    )
    parser.add_argument("input", type=Path, help="JSON Lines, one record per line")
    parser.add_argument("output", type=Path, help="where the answer lines go")
    parser.add_argument("--container-url", default="http://127.0.0.1:8080")
    parser.add_argument("--content-type", default="application/json", help="the job's ContentType")
    parser.add_argument("--max-payload-mb", type=int, help="the job's MaxPayloadInMB")
    parser.add_argument("--max-concurrent-transforms", type=int, help="the job's value")
    parser.add_argument("--batch-strategy", choices=["MultiRecord", "SingleRecord"])
    parser.add_argument(
        "--invocations-timeout", type=float, default=DEFAULT_INVOCATIONS_TIMEOUT, help="seconds"
    )
    parser.add_argument("--max-retries", type=int, default=DEFAULT_MAX_RETRIES)
    parser.add_argument(
        "--join-source", choices=["none", "input"], default="none", help="DataProcessing.JoinSource"
    )
    return parser.parse_args(argv)


def main(argv: list[str], out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    records = read_records(args.input)
    job = {
        "MaxConcurrentTransforms": args.max_concurrent_transforms,
        "BatchStrategy": args.batch_strategy,
        "MaxPayloadInMB": args.max_payload_mb,
    }
    try:
        with httpx.Client() as client:
            parameters = execution_parameters(client, args.container_url, job)
        print(
            f"transform: {len(records)} records, {parameters.batch_strategy}, "
            f"MaxPayloadInMB={parameters.max_payload_mb}, "
            f"MaxConcurrentTransforms={parameters.max_concurrent_transforms}",
            file=out,
        )
        lines, figures = asyncio.run(
            run(
                records,
                args.container_url,
                parameters,
                args.content_type,
                args.invocations_timeout,
                args.max_retries,
                args.join_source == "input",
            )
        )
    except TransformFailed as failure:
        print(f"transform failed: {failure}", file=out)
        return 1
    args.output.write_bytes(b"".join(line + b"\n" for line in lines))
    print(f"transform: {figures.summary()}; output in {args.output}", file=out)
    return 0
