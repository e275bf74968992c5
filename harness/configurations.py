"""The configurations' vocabulary, declared once: `none`, `eagle3:K`, `peagle:K`, and K by
batch size, `peagle:7@1-8/3@9-1024` (K@START-END ranges joined by /), each the vLLM
speculative config it stands for; and the ones the demo serves by name. The benchmark, the
rehearsals and the tests parse with it; `make serve` asks it for the config it serves:

    python -m harness.configurations trained     # the JSON for SM_VLLM_SPECULATIVE_CONFIG
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.variables import BATCH_SCHEDULE_KEY

# The batch-size schedule `bench crossover` calibrated for the trained pair on a 2-core machine
# (`--k 3,7 --concurrency 1,4,16,64 --verify`, docs/speed-at-every-load.md): K=7 up to 8
# requests in a batch, K=3 above; 0.98-1.14x the best fixed K and 1.12-2.04x no speculation
# at 1 to 64 clients.
DEMO_SCHEDULE = "peagle:7@1-8/3@9-1024"
# The real pair's P-EAGLE head, calibrated on a 2-core machine (docs/real-model.md): K=3 for
# a request alone (1.29x no speculation side by side), no drafts above (at 4 requests K=3 ran
# 0.67x: its heads accept too little to pay there).
REAL_SCHEDULE = "peagle:3@1-1/0@2-1024"
# For heads trained for fewer positions than the schedule drafts (the quick pair's: 4).
FIXED_DEFAULT = "peagle:3"
# What `make serve` serves by name: the trained pair and the real pair.
SERVED = {"trained": DEMO_SCHEDULE, "real": REAL_SCHEDULE}


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


def speculative_config(text: str) -> dict[str, Any] | None:
    """A configuration's (or a name in SERVED's) vLLM speculative config, its drafter the
    container's default (the eagle channel)."""
    return parse_configuration(SERVED.get(text, text), None).speculative_config()


def main(argv: list[str]) -> int:
    """A configuration (or a name in SERVED) as its speculative config's JSON; `none` prints
    nothing."""
    if len(argv) != 1:
        print(f"usage: python -m harness.configurations CONFIG|{'|'.join(SERVED)}", file=sys.stderr)
        return 2
    config = speculative_config(argv[0])
    if config is not None:
        print(json.dumps(config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
