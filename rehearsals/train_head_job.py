"""`make train-head-demo`: the training image run exactly as SageMaker Training runs it, on the
demo target and a prose workload captured through the serving container, and the head it
writes served next to the demo's own heads.

The same capture and export feed both trainers, and both start from the demo head: the
project's fine-tune (rehearsals retrain, which replays the head's own code prompts) and the
training image's job (speculators, the demo head in its eagle channel, the same code prompts
captured and exported into its replay channel). The three heads (the demo's, the fine-tune
and the job's) then serve the held-out prose and HumanEval side by side.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.options import add_local_command, configuration_of
from harness.configurations import FIXED_DEFAULT, Configuration
from image_build.build import CPU_TRAINING_IMAGE
from rehearsals.heads_side_by_side import (
    Workload,
    compare,
    send_prompt,
    table_with_rows,
    workloads_for,
)
from rehearsals.retrain import capture_and_export, capture_and_finetune
from serving import paths


def replay_set(configuration: Configuration, opt_ml: Path, out: Path) -> tuple[Path, int]:
    """The demo head's own kind of traffic, captured and exported the same way: the code
    prompts the fine-tune replays (its first 96 training prompts). A train channel that holds
    only the new workload teaches the head to forget the old one."""
    from model_data_sources.corpus import build_corpus
    from model_data_sources.finetune import FinetuneRecipe
    from model_data_sources.trained import SEED, Recipe

    samples = build_corpus(SEED, Recipe().prompts).prompt_samples
    prompts = [sample.prompt for sample in samples[: FinetuneRecipe().replay_prompts]]
    replay = Workload("replay", prompts, (), send_prompt)
    return capture_and_export(configuration, opt_ml, out / "replay", replay)


def job_tree(
    root: Path,
    target: Path,
    channels: dict[str, Path],
    head: Path,
    hyperparameters: dict[str, str],
) -> Path:
    """/opt/ml as SageMaker Training lays it out: the channels copied in (a container cannot
    follow a link out of its mount), each training set as `<channel>/train.openai.jsonl`."""
    shutil.rmtree(root, ignore_errors=True)
    data = root / "input" / "data"
    shutil.copytree(target, data / "target")
    for name, path in channels.items():
        data.joinpath(name).mkdir(parents=True)
        shutil.copy2(path, data / name / "train.openai.jsonl")
    shutil.copytree(head, data / "eagle")
    (root / "input" / "config").mkdir(parents=True)
    (root / "input" / "config" / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    return root


def run_job(docker: str, image: str, root: Path, log: Path) -> float:
    """`docker run IMAGE train`, no network, the tree at /opt/ml; the wall time."""
    argv = [
        docker, "run", "--rm", "--network", "none", "--shm-size", "1g",
        "--volume", f"{root}:/opt/ml", image, "train",
    ]  # fmt: skip
    started = time.monotonic()
    with log.open("w") as output:
        finished = subprocess.run(argv, stdout=output, stderr=subprocess.STDOUT)
    if finished.returncode != 0:
        failure = root / "output" / "failure"
        reason = failure.read_text() if failure.is_file() else "no failure file"
        raise RuntimeError(f"the training job failed ({reason}); its log is {log}")
    return time.monotonic() - started


def serving_tree(root: Path, target: Path, head: Path) -> Path:
    """An /opt/ml tree for the serving container: the demo target, the job's head."""
    shutil.rmtree(root, ignore_errors=True)
    paths.model_dir(root).parent.mkdir(parents=True, exist_ok=True)
    paths.model_dir(root).symlink_to(target.resolve(), target_is_directory=True)
    paths.channel_dir(root).parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(head, paths.channel_dir(root))
    return root


def run_demo(
    configuration: Configuration,
    opt_ml: Path,
    out: Path,
    docker: str,
    image: str,
    hyperparameters: dict[str, str],
    code_prompts: int,
) -> dict[str, Any]:
    started = time.monotonic()
    loop = capture_and_finetune(configuration, opt_ml, out)
    replay, replayed = replay_set(configuration, opt_ml, out)
    hyperparameters = {"num_speculative_tokens": str(configuration.k), **hyperparameters}
    job = job_tree(
        out / "job",
        paths.model_dir(opt_ml),
        {"train": loop.training_set, "replay": replay},
        paths.channel_dir(opt_ml),
        hyperparameters,
    )
    print(f"training job under docker ({image}) ...", flush=True)
    job_seconds = run_job(docker, image, job, out / "job.log")
    report = json.loads((job / "model" / "training-report.json").read_text())
    trained = serving_tree(out / "opt_ml_speculators", paths.model_dir(opt_ml), job / "model")
    figures = compare(
        configuration,
        {"demo head": opt_ml, "project fine-tune": loop.tuned, "training job": trained},
        workloads_for(loop.load, code_prompts),
        out,
    )
    return {
        "configuration": configuration.describe(),
        "captured_requests": len(loop.load.captured),
        "training_set": loop.written,
        "replay_set": replayed,
        "fine_tune": loop.tuning,
        "hyperparameters": hyperparameters,
        "job_seconds": round(job_seconds, 1),
        "job_report": report,
        "side_by_side": figures,
        "seconds": round(time.monotonic() - started, 1),
    }


def table(result: dict[str, Any]) -> str:
    lines, by_key, cells = table_with_rows(result["side_by_side"], "training job")
    for workload, concurrency in cells:
        job = by_key[workload, concurrency, "training job"]["mean_acceptance_length"]
        for other in ("project fine-tune", "demo head"):
            base = by_key[workload, concurrency, other]["mean_acceptance_length"]
            lines.append(
                f"- {workload}, c={concurrency}: training job / {other} acceptance length "
                f"{job / base:.3f}x"
            )
    lines.append(f"- the training job under docker: {result['job_seconds']} s")
    lines.append(job_check(result["job_report"]))
    return "\n".join(lines)


def job_check(report: dict[str, Any]) -> str:
    """The job's own held-out check, as its report has it."""

    def length(figures: dict[str, Any] | None) -> str:
        value = (figures or {}).get("mean_acceptance_length")
        return "-" if value is None else f"{value:.2f}"

    start = report.get("start_head") or {}
    text = (
        f"- the job's own check: epoch {report['checkpoint']} written of "
        f"{', '.join(report['tried'])}; held-out train {length(report.get('held_out'))} "
        f"(start head {length(start.get('train'))}), replay {length(report.get('replay'))} "
        f"(start head {length(start.get('replay'))})"
    )
    guard = report.get("replay_guard")
    if guard:
        text += f"; replay floor {guard['floor']:.2f} {'kept' if guard['met'] else 'NOT kept'}"
    return text


# The job continues the demo head (the eagle channel) on the captured prose and a replay of
# the head's own code traffic (the replay channel), on the target's own answers at full
# length (the capture stops answers at 64 tokens), with the loss greedy decoding accepts by,
# and keeps a share of the demo head in the head it writes (docs/results/train-head.md has the
# sweep these come from).
EPOCHS = 20
LEARNING_RATE = "0.0006"
LOSS = "ce"
KEEP_START_HEAD = "0.15"
REGENERATE_MAX_TOKENS = "192"
HELP = (
    "the training image run as SageMaker Training runs it on a captured prose workload, "
    "and its head side by side with the demo head and the project's fine-tune"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "train-head", command, HELP, config=FIXED_DEFAULT)
    parser.set_defaults(config="peagle:7", out_dir=Path("build/train-head"))
    parser.add_argument("--image", default=CPU_TRAINING_IMAGE, help="(%(default)s)")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="the job's epochs (%(default)s)")
    parser.add_argument(
        "--learning-rate", default=LEARNING_RATE, help="the job's learning rate (%(default)s)"
    )
    parser.add_argument("--loss", default=LOSS, help="the job's loss (%(default)s)")
    parser.add_argument(
        "--keep-start-head",
        default=KEEP_START_HEAD,
        help="the share of the demo head the job's head keeps (%(default)s)",
    )
    parser.add_argument(
        "--regenerate-max-tokens",
        default=REGENERATE_MAX_TOKENS,
        help="the target answers the training conversations again, up to this many tokens "
        "(%(default)s; 0: learn from the captured answers)",
    )
    parser.add_argument(
        "--code-prompts", type=int, default=32, help="HumanEval prompts in the comparison"
    )


def command(args: argparse.Namespace) -> int:

    from image_build.docker_daemon import ensure_engine

    configuration = configuration_of(args)
    if configuration.method != "peagle":
        raise SystemExit(
            f"--config {configuration.name}: the job trains a P-EAGLE head; use peagle:K."
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result = run_demo(
        configuration,
        args.opt_ml_root.absolute(),
        args.out_dir.absolute(),
        ensure_engine(),
        args.image,
        {
            "epochs": str(args.epochs),
            "learning_rate": args.learning_rate,
            "loss": args.loss,
            "keep_start_head": args.keep_start_head,
            "regenerate_max_tokens": args.regenerate_max_tokens,
            "held_out_prompts": "16",
        },
        args.code_prompts,
    )
    (args.out_dir / "train-head.json").write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    (args.out_dir / "train-head.md").write_text(text + "\n")
    print(text)
    print(f"whole demo {result['seconds']} s; figures in {args.out_dir / 'train-head.json'}")
    return 0
