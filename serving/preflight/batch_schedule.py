"""The batch-size schedule for K (`num_speculative_tokens_per_batch_size`), before vLLM reads it.

vLLM takes inclusive `[start, end, K]` ranges and forgives what it should not: it sorts them,
fills a gap with the K before it, carries the last K past the last range up to max_num_seqs,
caps a K above num_speculative_tokens without a word, and drops the whole schedule under data
parallelism. Each of those is a schedule that does something other than what it says, so
each is an error here, naming the entry and the fix.

Where else the schedule lives, each doing one thing with it:
- serving/variables.py: its key, BATCH_SCHEDULE_KEY, inside SM_VLLM_SPECULATIVE_CONFIG;
- bench/envelope.py: `python -m bench crossover` measures each K at each load and writes the
  schedule that follows the fastest (the config to deploy);
- harness/configurations.py: the schedules crossover chose for the shipped pairs, by name
  (`trained`, `real`), which `make serve` and the suite serve;
- deploy/decide.py and deploy/requests.py: a config file's schedule, read, preflighted and
  sent to the endpoint; serving/metrics.py reports the K of each range as a gauge;
- vllm_patches/parallel_drafting_dynamic_k.py: the fix that lets vLLM's V1 runner draft the
  step's K with parallel drafting at all (without it a smaller K fails its layout).
"""

from __future__ import annotations

import json
from typing import Any

from serving.engine_args.flags import flag_value
from serving.variables import (
    BATCH_SCHEDULE_KEY,
    DATA_PARALLEL_SIZE_VAR,
    MAX_NUM_SEQS_VAR,
    SPECULATIVE_CONFIG_VAR,
)

KEY = BATCH_SCHEDULE_KEY

# vLLM's largest default max_num_seqs (GPUs with 70 GB or more): a schedule that must hold
# whatever the hardware chooses has to reach it.
LARGEST_DEFAULT_MAX_NUM_SEQS = 1024


def whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_entries(schedule: list, errors: list[str]) -> list[tuple[int, int, int]] | None:
    """The entries as (start, end, K), or None after an error naming the bad one."""
    entries = []
    for index, entry in enumerate(schedule):
        shown = json.dumps(entry)
        if not (isinstance(entry, list) and len(entry) == 3 and all(map(whole, entry))):
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" entry {index} is {shown}; each entry is '
                "[first batch size, last batch size, K], three whole numbers, e.g. [1, 8, 7]."
            )
            return None
        start, end, tokens = entry
        if start < 1 or end < start or tokens < 0:
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" entry {index} is {shown}; the batch sizes '
                "must be 1 or more with the first no larger than the last, and K 0 or more."
            )
            return None
        entries.append((start, end, tokens))
    return entries


def max_num_seqs(engine_flags: tuple[str, ...]) -> int | None:
    value = flag_value(engine_flags, "--max-num-seqs")
    return int(value) if value is not None and value.isdigit() else None


def data_parallel_size(engine_flags: tuple[str, ...]) -> int:
    value = flag_value(engine_flags, "--data-parallel-size", "-dp")
    return int(value) if value is not None and value.isdigit() else 1


def check_batch_schedule(
    config: dict[str, Any],
    engine_flags: tuple[str, ...],
    trained_positions: int | None,
    errors: list[str],
) -> str | None:
    """Ranges in order from batch size 1 with no gap up to max_num_seqs, each K within
    num_speculative_tokens and the head's trained depth, and no data parallelism. Returns the
    schedule as the start-up summary states it ("1-4:7,5-64:0"), or None."""
    schedule = config.get(KEY)
    if schedule is None:
        return None
    if not isinstance(schedule, list) or not schedule:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" is {json.dumps(schedule)}; it must be a '
            "non-empty list of [first batch size, last batch size, K] ranges, e.g. "
            "[[1, 8, 7], [9, 32, 3], [33, 256, 0]]."
        )
        return None
    if data_parallel_size(engine_flags) > 1:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" is set with data parallelism '
            f"({DATA_PARALLEL_SIZE_VAR} above 1); vLLM drops the schedule then and drafts a "
            f'fixed K. Remove "{KEY}" or run one engine per instance.'
        )
    entries = parse_entries(schedule, errors)
    if entries is None:
        return None
    expected_start = 1
    for index, (start, end, _) in enumerate(entries):
        if start != expected_start:
            where = "start at batch size 1" if index == 0 else f"start at {expected_start}"
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" entry {index} {json.dumps(schedule[index])} '
                f"starts at batch size {start}; it must {where}, right after the range before "
                "it, so every batch size has the K written for it. List the ranges in order "
                "with no gap or overlap."
            )
            return None
        expected_start = end + 1
    last_end = entries[-1][1]
    limit = max_num_seqs(engine_flags)
    if limit is not None and last_end < limit:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" ends at batch size {last_end}, below '
            f"max_num_seqs {limit} ({MAX_NUM_SEQS_VAR}); end the last range at {limit} so "
            "the largest batches have a K of their own."
        )
    elif limit is None and last_end < LARGEST_DEFAULT_MAX_NUM_SEQS:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" ends at batch size {last_end}, and vLLM '
            f"chooses max_num_seqs by hardware (up to {LARGEST_DEFAULT_MAX_NUM_SEQS}); set "
            f"{MAX_NUM_SEQS_VAR} and end the last range there, or end it at "
            f"{LARGEST_DEFAULT_MAX_NUM_SEQS}."
        )
    tokens = config.get("num_speculative_tokens")
    bounds = []
    if whole(tokens):
        bounds.append((tokens, f'"num_speculative_tokens" ({tokens})'))
    if whole(trained_positions):
        bounds.append((trained_positions, f"the head's trained depth ({trained_positions})"))
    for index, (_, _, k) in enumerate(entries):
        for bound, name in bounds:
            if k > bound:
                errors.append(
                    f'{SPECULATIVE_CONFIG_VAR}: "{KEY}" entry {index} '
                    f"{json.dumps(schedule[index])} drafts K={k}, above {name}; vLLM would "
                    f"silently draft fewer. Lower it to {bound} or less."
                )
                break
    return ",".join(f"{start}-{end}:{k}" for start, end, k in entries)
