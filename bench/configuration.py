"""The benchmark's configurations: a speculation setting (none, EAGLE-3 or P-EAGLE, K or a
batch-size schedule of K, the drafter), and `LocalContainer`, the host container that serves one
on a demo tree."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.demo_engine import DEMO_ENGINE
from harness.host import HostContainer, host_environment, served_dtype
from harness.paths import default_opt_ml_root
from serving.variables import BATCH_SCHEDULE_KEY

# The batch-size schedule `bench crossover` calibrated for the trained pair on a 2-core machine
# (docs/speed-at-every-load.md): K=7 up to 8 requests in a batch, K=3 above. `make serve`
# serves the same one (the Makefile's SCHEDULED_SPECULATION).
DEMO_SCHEDULE = "peagle:7@1-8/3@9-1024"
# For heads trained for fewer positions than the schedule drafts (the quick pair's: 4).
FIXED_DEFAULT = "peagle:3"


@dataclass(frozen=True)
class Configuration:
    """One speculation setting: method none, eagle3 (sequential) or peagle, K and the drafter;
    with a schedule, K is its largest and each (start, end, K) range of batch sizes drafts its
    own K."""

    method: str
    k: int | None = None
    drafter: Path | None = None
    schedule: tuple[tuple[int, int, int], ...] = ()

    @property
    def name(self) -> str:
        if self.method == "none":
            return "none"
        if self.schedule:
            return self.method + "-" + ",".join(f"k{k}@{a}-{b}" for a, b, k in self.schedule)
        return f"{self.method}-k{self.k}"

    def speculative_config(self) -> dict[str, Any] | None:
        if self.method == "none":
            return None
        config: dict[str, Any] = {"method": "eagle3", "num_speculative_tokens": self.k}
        if self.drafter is not None:
            config["model"] = str(self.drafter)
        if self.method == "peagle":
            config["parallel_drafting"] = True
        if self.schedule:
            config[BATCH_SCHEDULE_KEY] = [list(entry) for entry in self.schedule]
        return config

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "k": self.k,
            "drafter": str(self.drafter) if self.drafter else None,
            "speculative_config": self.speculative_config(),
        }


def parse_configuration(text: str, drafter: Path | None) -> Configuration:
    """`none`, `eagle3:3`, `peagle:7` (method:K), or a schedule of K by batch size,
    `peagle:7@1-8/3@9-1024` (K@START-END, ranges joined by /)."""
    method, _, k = text.strip().partition(":")
    if method == "none" and not k:
        return Configuration("none")
    if method in ("eagle3", "peagle") and "@" in k:
        schedule = parse_schedule(text, k)
        return Configuration(method, max(entry[2] for entry in schedule), drafter, schedule)
    if method not in ("eagle3", "peagle") or not k.isdigit() or int(k) < 1:
        raise SystemExit(
            f"configuration {text!r} is not understood; use none, eagle3:K, peagle:K (K >= 1) "
            f"or a schedule of K by batch size such as {DEMO_SCHEDULE}."
        )
    return Configuration(method, int(k), drafter)


def parse_schedule(text: str, ranges: str) -> tuple[tuple[int, int, int], ...]:
    """`7@1-8/3@9-1024` as ((1, 8, 7), (9, 1024, 3)). Order and coverage are the container's
    preflight to check, with its own messages."""
    schedule = []
    for item in ranges.split("/"):
        k, _, batch = item.partition("@")
        start, _, end = batch.partition("-")
        if not all(part.isdigit() for part in (k, start, end)) or int(start) > int(end):
            raise SystemExit(
                f"configuration {text!r}: {item!r} is not K@START-END (batch sizes START to END "
                f"draft K); e.g. {DEMO_SCHEDULE}."
            )
        schedule.append((int(start), int(end), int(k)))
    if max(entry[2] for entry in schedule) < 1:
        raise SystemExit(f"configuration {text!r} never drafts; give one range a K of 1 or more.")
    return tuple(schedule)


def trained_depth(head_dir: Path) -> int | None:
    """How many positions the head in HEAD_DIR was trained to draft, when its config says."""
    from serving.preflight.drafter import read_head_config

    head = read_head_config(head_dir, errors=[])
    depth = None if head is None else head.trained_positions
    return depth if isinstance(depth, int) and not isinstance(depth, bool) else None


def default_configuration(drafter: Path) -> str:
    """The calibrated schedule when the head was trained for its largest K, else a fixed K=3."""
    depth = trained_depth(drafter)
    largest = parse_configuration(DEMO_SCHEDULE, drafter).k or 0
    return DEMO_SCHEDULE if depth is not None and depth >= largest else FIXED_DEFAULT


def local_engine_settings(opt_ml_root: Path | None = None) -> dict[str, str]:
    """The KV cache size, max model length and dtype of the benchmark's local engines: this
    shell's VLLM_CPU_KVCACHE_SPACE, SM_VLLM_MAX_MODEL_LEN and SM_VLLM_DTYPE when set, else
    the demo's (demo.env; the dtype the tree's target is served in on this CPU)."""
    root = opt_ml_root or default_opt_ml_root()
    return {
        **{key: os.environ.get(key) or value for key, value in DEMO_ENGINE.items()},
        "SM_VLLM_DTYPE": os.environ.get("SM_VLLM_DTYPE") or served_dtype(root),
    }


class LocalContainer(HostContainer):
    """The benchmark's container: one speculation configuration on a demo tree. The KV cache
    size, max model length and dtype follow this shell's VLLM_CPU_KVCACHE_SPACE,
    SM_VLLM_MAX_MODEL_LEN and SM_VLLM_DTYPE when they are set."""

    def __init__(
        self,
        configuration: Configuration,
        opt_ml_root: Path | None = None,
        log_path: Path | None = None,
        enforce_eager: bool = True,
        extra_env: Mapping[str, str] | None = None,
        port: int | None = None,
    ):
        self.configuration = configuration
        self.opt_ml_root = opt_ml_root or default_opt_ml_root()
        settings = {
            "OPT_ML_ROOT": str(self.opt_ml_root),
            **local_engine_settings(self.opt_ml_root),
        }
        speculative = configuration.speculative_config()
        if speculative is not None:
            settings["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(speculative)
        env = host_environment(enforce_eager, **{**settings, **(extra_env or {})})
        super().__init__(configuration.name, env, port, log_path)
