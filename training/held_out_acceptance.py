"""Held-out acceptance of a head: vLLM itself drafting with it (P-EAGLE at the trained K) on
held-out conversations' prompts, greedy, and its own counters read back. This is what an
endpoint will see, measured before the head leaves the job. Each named set of prompts (the
train channel's, the replay channel's) is measured on its own, in one vLLM process.

    python -m training.held_out_acceptance TARGET HEAD K [--max-tokens=N] NAME=PROMPTS.jsonl ...
        -> one line on stdout: ACCEPTANCE {"NAME": {...}, ...}
"""

from __future__ import annotations

import json
import sys
from itertools import zip_longest
from pathlib import Path
from typing import Any

from serving.metrics import ACCEPTED, ACCEPTED_PER_POSITION, DRAFTS
from serving.preflight.vllm_facts import MASK_TOKEN_KEYS
from training import cpu_shims
from training.chat_render import Chat, messages_of, served_chat_template, tools_of

MAX_TOKENS = 64


def speculative_config(head: Path, k: int) -> dict[str, Any]:
    """How vLLM serves the head at K: P-EAGLE (a speculators `peagle` head, or one whose
    config names a mask token) with parallel drafting, any other as EAGLE-3."""
    config = json.loads((head / "config.json").read_text())
    parallel = config.get("speculators_model_type") == "peagle" or any(
        config.get(key) is not None for key in MASK_TOKEN_KEYS
    )
    return {
        "model": str(head),
        "method": "eagle3",
        "num_speculative_tokens": k,
        "parallel_drafting": parallel,
    }


def counters(llm: Any) -> tuple[float, float, list[float]]:
    """vLLM's running totals: drafts, accepted tokens, accepted tokens by position."""
    totals: dict[str, float] = {}
    by_position: list[float] = []
    for metric in llm.get_metrics():
        if metric.name in (DRAFTS, ACCEPTED):
            totals[metric.name] = totals.get(metric.name, 0) + metric.value
        elif metric.name == ACCEPTED_PER_POSITION:
            by_position = [float(value) for value in metric.values]
    return totals.get(DRAFTS, 0.0), totals.get(ACCEPTED, 0.0), by_position


def figures(prompts: int, drafts: float, accepted: float, by_position: list[float]) -> dict:
    return {
        "prompts": prompts,
        "drafts": drafts,
        "mean_acceptance_length": 1 + accepted / drafts if drafts else None,
        "acceptance_by_position": [value / drafts for value in by_position] if drafts else [],
    }


def measure(
    target: Path,
    head: Path,
    k: int,
    prompt_sets: dict[str, list[Chat]],
    max_tokens: int = MAX_TOKENS,
    settings: dict[str, Any] | None = None,
) -> dict[str, dict]:
    if cpu_shims.needed():
        cpu_shims.offline_vllm_in_one_process()
    from vllm import LLM, SamplingParams

    llm = LLM(
        model=str(target),
        speculative_config=speculative_config(head, k),
        disable_log_stats=False,  # the counters read back below
        **{**(cpu_shims.vllm_settings() if cpu_shims.needed() else {}), **(settings or {})},
    )
    sampling = SamplingParams(temperature=0, max_tokens=max_tokens)
    template = served_chat_template(target)  # tools shown as the endpoint shows them
    measured = {}
    before = counters(llm)
    for name, prompts in prompt_sets.items():
        # One call per tool set: LLM.chat renders every prompt of a call with the same tools.
        by_tools: dict[str, list[list[dict]]] = {}
        for prompt in prompts:
            by_tools.setdefault(json.dumps(tools_of(prompt)), []).append(messages_of(prompt))
        for tools, group in by_tools.items():
            llm.chat(
                group, sampling, use_tqdm=False, tools=json.loads(tools), chat_template=template
            )
        after = counters(llm)
        positions = [now - then for now, then in zip_longest(after[2], before[2], fillvalue=0)]
        measured[name] = figures(
            len(prompts), after[0] - before[0], after[1] - before[1], positions
        )
        before = after
    return measured


def main(argv: list[str]) -> None:
    target, head, k, *sets = argv
    max_tokens, settings = MAX_TOKENS, {}
    while sets and sets[0].startswith("--"):
        name, _, value = sets.pop(0).removeprefix("--").partition("=")
        if name == "max-tokens":
            max_tokens = int(value)
        else:  # an engine setting: --dtype=bfloat16
            settings[name.replace("-", "_")] = value
    prompt_sets = {}
    for named in sets:
        name, _, path = named.partition("=")
        lines = Path(path).read_text().splitlines()
        prompt_sets[name] = [json.loads(line) for line in lines if line]
    measured = measure(Path(target), Path(head), int(k), prompt_sets, max_tokens, settings)
    print("ACCEPTANCE " + json.dumps(measured))


if __name__ == "__main__":
    main(sys.argv[1:])
