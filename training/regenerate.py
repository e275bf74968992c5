"""On-policy answers (hyperparameter `regenerate_max_tokens` > 0): the target itself answers
each training conversation's user turns, through speculators' `regenerate-responses` against
a vLLM server the job starts on loopback for the purpose.

A head learns to predict what its target would say. Traffic captured from the endpoint already
is that; conversations written by people or another model are not, and a head trained on them
learns the wrong distribution (and a head continued on them forgets what it knew). The rows
come back as speculators writes them: the prompt's and the answer's token ids, the loss on
the answer.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from serving.engine_args.agents import agent_flags
from training import cpu_shims
from training.chat_render import Chat
from training.rows import Row
from training.steps import run_step

SERVER_START_SECONDS = 900  # a large target loads for minutes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_argv(
    target: Path,
    port: int,
    dtype: str | None = None,
    flags: tuple[str, ...] = (),
    chat_template: Path | None = None,
) -> list[str]:
    """vLLM's server for `target` with the serving container's flags for agents (tool-call
    parser, arguments held to their schemas, bounded JSON whitespace: `flags`) and its chat
    template, so that answers are written as the endpoint writes them."""
    argv = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(target), "--host", "127.0.0.1", "--port", str(port),
        *flags,
    ]  # fmt: skip
    if chat_template is not None:
        argv += ["--chat-template", str(chat_template)]
    if cpu_shims.needed():
        settings = cpu_shims.vllm_settings()
        if dtype:
            settings["dtype"] = dtype
        for name, value in settings.items():
            flag = "--" + name.replace("_", "-")
            argv += [flag] if value is True else [flag, str(value)]
    return argv


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def vllm_server(target: Path, log: Path, dtype: str | None = None) -> Iterator[str]:
    """vLLM's OpenAI server for `target` on a free loopback port; its chat URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    agents, template = agent_flags({}, target, []), None
    if agents.chat_template is not None:
        template = log.with_name("chat_template.jinja")
        template.write_text(agents.chat_template)
    with log.open("w") as output:
        server = subprocess.Popen(
            server_argv(target, port, dtype, agents.flags, template), stdout=output, stderr=output
        )
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not healthy(url):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-3000:]
                raise RuntimeError(
                    "vLLM could not serve the target to regenerate the answers; "
                    f"its log ends:\n{tail}"
                )
            time.sleep(1)
        yield url + "/v1/chat/completions"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def answers(
    target: Path,
    conversations: list[Chat],
    work: Path,
    max_tokens: int,
    max_length: int,
    resume: bool = False,
    dtype: str | None = None,
) -> list[tuple[int, Row]]:
    """The conversations' user turns answered again by the target, greedy: a row for each
    answer, with the index of its conversation. With `resume`, answers already in `work` are
    kept and only the others are asked for (the conversations must be the same)."""
    work.mkdir(parents=True, exist_ok=True)
    given = work / "conversations.jsonl"
    lines = [json.dumps(chat) + "\n" for chat in conversations]
    answered = work / "regenerated.jsonl"
    if not (resume and given.is_file() and given.read_text() == "".join(lines)):
        answered.unlink(missing_ok=True)
    given.write_text("".join(lines))
    if not (resume and len(indices(answered)) == len(conversations)):
        with vllm_server(target, work / "vllm.log", dtype) as endpoint:
            ask(endpoint, target, given, answered, max_tokens)
    rows = []
    for line in answered.read_text().splitlines() if answered.is_file() else []:
        record = json.loads(line)
        ids, mask = record["input_ids"][:max_length], record["loss_mask"][:max_length]
        if any(mask):
            rows.append((int(record["metadata"]["idx"]), Row(ids, mask)))
    return rows


def indices(answered: Path) -> set[int]:
    """The conversations the file already answers."""
    if not answered.is_file():
        return set()
    lines = answered.read_text().splitlines()
    return {int(json.loads(line)["metadata"]["idx"]) for line in lines if line.strip()}


def ask(endpoint: str, target: Path, given: Path, answered: Path, max_tokens: int) -> None:
    """speculators' regenerate-responses; it skips the conversations `answered` holds."""
    run_step(
        [
            sys.executable, "-m", "speculators", "regenerate-responses",
            "--endpoint", endpoint, "--model", str(target),
            "--dataset", str(given), "--outfile", str(answered),
            "--max-tokens", str(max_tokens),
            "--sampling-params", json.dumps({"temperature": 0}),
            "--concurrency", "8",
        ],
        "regenerate-responses",
    )  # fmt: skip
