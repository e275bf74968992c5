"""Held-out acceptance of a freshly trained head: vLLM itself drafting with it (P-EAGLE at
the trained K) on the held-out conversations' prompts, greedy, and its own counters read back.
This is what an endpoint will see, measured before the head leaves the job.

    python -m training.acceptance TARGET HEAD K PROMPTS.jsonl  -> one JSON line on stdout
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from serving.metrics import ACCEPTED, ACCEPTED_PER_POSITION, DRAFTS
from training import cpu_shims

MAX_TOKENS = 64


def measure(target: Path, head: Path, k: int, prompts: list[list[dict]]) -> dict:
    from vllm import LLM, SamplingParams

    llm = LLM(
        model=str(target),
        speculative_config={
            "model": str(head),
            "method": "eagle3",
            "num_speculative_tokens": k,
            "parallel_drafting": True,
        },
        disable_log_stats=False,  # the counters read back below
        **(cpu_shims.vllm_settings() if cpu_shims.needed() else {}),
    )
    llm.chat(prompts, SamplingParams(temperature=0, max_tokens=MAX_TOKENS), use_tqdm=False)
    totals: dict[str, float] = {}
    by_position: list[float] = []
    for metric in llm.get_metrics():
        if metric.name in (DRAFTS, ACCEPTED):
            totals[metric.name] = totals.get(metric.name, 0) + metric.value
        elif metric.name == ACCEPTED_PER_POSITION:
            by_position = [float(value) for value in metric.values]
    drafts = totals.get(DRAFTS, 0.0)
    return {
        "prompts": len(prompts),
        "drafts": drafts,
        "mean_acceptance_length": 1 + totals.get(ACCEPTED, 0.0) / drafts if drafts else None,
        "acceptance_by_position": [value / drafts for value in by_position] if drafts else [],
    }


if __name__ == "__main__":
    target, head, k, prompts_file = sys.argv[1:5]
    prompts = [json.loads(line) for line in Path(prompts_file).read_text().splitlines() if line]
    print("ACCEPTANCE " + json.dumps(measure(Path(target), Path(head), int(k), prompts)))
