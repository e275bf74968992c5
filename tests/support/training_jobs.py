"""A SageMaker Training tree (/opt/ml) for the head trainer's tests, on the host or mounted
into the training image: the quick demo target as the `target` channel, conversations of the
kind it was trained on as the `train` channel, and hyperparameters.json; and the figures
SageMaker graphs from a job's log."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from deploy.training_job import METRIC_DEFINITIONS
from harness.locations import QUICK_DEMO_ROOT
from model_data_sources.corpus import build_corpus
from serving import paths


def job_tree(
    root: Path, conversations: list[dict], hyperparameters: dict, copy_target: bool = False
) -> Path:
    """The tree at `root`; the target linked (host) or copied (a container cannot follow a
    link out of its mount)."""
    data = root / "input" / "data"
    (data / "train").mkdir(parents=True)
    target = paths.model_dir(QUICK_DEMO_ROOT).resolve()
    if copy_target:
        shutil.copytree(target, data / "target")
    else:
        (data / "target").symlink_to(target)
    lines = "".join(json.dumps(conversation) + "\n" for conversation in conversations)
    (data / "train" / "train.openai.jsonl").write_text(lines)
    (root / "input" / "config").mkdir(parents=True)
    write_hyperparameters(root, hyperparameters)
    return root


def write_hyperparameters(root: Path, hyperparameters: dict) -> None:
    (root / "input" / "config" / "hyperparameters.json").write_text(json.dumps(hyperparameters))


def code_chats(count: int) -> list[dict]:
    """Conversations of the kind the quick target was trained on (held out of its training)."""
    samples = build_corpus(seed=11, num_prompt_samples=count).prompt_samples
    return [
        {
            "messages": [
                {"role": "user", "content": sample.prompt},
                {"role": "assistant", "content": sample.answer},
            ]
        }
        for sample in samples
    ]


def graphed_metrics(log: str) -> dict[str, float]:
    """What SageMaker graphs for a job whose log is `log`: each of deploy's MetricDefinitions
    that matches, at its last match (the job's final figure)."""
    graphed = {}
    for definition in METRIC_DEFINITIONS:
        matches = re.findall(definition["Regex"], log)
        if matches:
            graphed[definition["Name"]] = float(matches[-1])
    return graphed
