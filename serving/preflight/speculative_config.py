"""SM_VLLM_SPECULATIVE_CONFIG against vLLM's SpeculativeConfig schema: keys, types, method, K.

Reads only the parsed JSON: whether the drafter and the target fit is for the modules that
follow (target.py, drafter.py, heads.py).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from serving.preflight.vllm_facts import (
    MODEL_FREE_METHODS,
    PARALLEL_DRAFTING_METHODS,
    SPECULATIVE_CONFIG_CHOICES,
    SPECULATIVE_CONFIG_FIELDS,
    SPECULATIVE_METHODS,
    TARGET_CHECKPOINT_METHODS,
)
from serving.variables import SPECULATIVE_CONFIG_VAR


@dataclass
class Speculation:
    """The speculative config as the checks understand it."""

    method: str | None
    num_speculative_tokens: int | None
    parallel_drafting: bool
    model: str | None
    # False when parallel_drafting was given but invalid: no advice on top of that error.
    parallel_drafting_unset: bool = True
    model_given: bool = False
    aux_layers: str = "?"
    draft_vocab_size: int | None = None
    # The batch-size schedule for K, as "1-4:7,5-64:0" (batch_schedule.py), when one is set.
    batch_schedule: str | None = None

    @property
    def drafter(self) -> str:
        """What drafts, as the summary states it: a path, the target itself, or nothing."""
        if self.method in MODEL_FREE_METHODS:
            return "-"
        if self.model is None and self.method in TARGET_CHECKPOINT_METHODS:
            return "target"
        return self.model or "-"

    def summary(self) -> str:
        return (
            f"speculation: method={self.method or '?'} "
            f"p-eagle={'on' if self.parallel_drafting else 'off'} "
            f"K={self.num_speculative_tokens if self.num_speculative_tokens else '?'} "
            + (f"K_by_batch_size={self.batch_schedule} " if self.batch_schedule else "")
            + f"drafter={self.drafter} aux_layers={self.aux_layers} "
            f"draft_vocab={self.draft_vocab_size or '?'}"
        )


def describe(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else f'the string "{value}"'


def type_problem(key: str, value: Any, kind: str) -> str | None:
    """A sentence when `value` is not of `kind`, else None. JSON null means "unset"."""
    if value is None:
        return None
    is_int = isinstance(value, int) and not isinstance(value, bool)
    ok = {
        "bool": isinstance(value, bool),
        "int": is_int,
        "positive int": is_int and value >= 1,
        "number": is_int or isinstance(value, float),
        "str": isinstance(value, str),
        "list": isinstance(value, list),
        "object": isinstance(value, dict),
    }[kind]
    if ok:
        choices = SPECULATIVE_CONFIG_CHOICES.get(key)
        if choices and value not in choices:
            return (
                f'{SPECULATIVE_CONFIG_VAR}: "{key}" is "{value}", not one of '
                f"{', '.join(choices)}; pick one."
            )
        return None
    wanted = {
        "bool": "JSON true or false (no quotes)",
        "int": "a whole number (no quotes)",
        "positive int": "a whole number of 1 or more (no quotes)",
        "number": "a number (no quotes)",
        "str": "a string",
        "list": "a JSON list",
        "object": "a JSON object",
    }[kind]
    return f'{SPECULATIVE_CONFIG_VAR}: "{key}" is {describe(value)}; it must be {wanted}.'


def check_speculative_config(config: dict[str, Any], errors: list[str]) -> Speculation:
    for key, value in config.items():
        kind = SPECULATIVE_CONFIG_FIELDS.get(key)
        if kind is None:
            nearest = difflib.get_close_matches(key, SPECULATIVE_CONFIG_FIELDS, n=1, cutoff=0.6)
            hint = (
                f'did you mean "{nearest[0]}"? Rename it'
                if nearest
                else "remove it (vLLM's SpeculativeConfig has no such field)"
            )
            errors.append(f'{SPECULATIVE_CONFIG_VAR} has unknown key "{key}"; {hint}.')
        elif kind == "internal":
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: "{key}" is filled in by vLLM itself; remove it.'
            )
        elif key == "tensor_parallel_size":
            errors.append(
                f'{SPECULATIVE_CONFIG_VAR}: vLLM rejects "tensor_parallel_size" here; rename it '
                'to "draft_tensor_parallel_size".'
            )
        elif problem := type_problem(key, value, kind):
            errors.append(problem)

    method = config.get("method")
    model = config.get("model") if isinstance(config.get("model"), str) else None
    if method is None:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR} has no "method"; without it vLLM guesses from the head\'s '
            'path, mostly as a whole draft model. Add "method": "eagle3" (with '
            '"parallel_drafting": true for P-EAGLE).'
        )
    elif isinstance(method, str) and method not in SPECULATIVE_METHODS:
        if method.lower().replace("-", "").replace("_", "") in ("peagle", "parallel_eagle"):
            hint = 'P-EAGLE is "method": "eagle3" with "parallel_drafting": true'
        else:
            nearest = difflib.get_close_matches(method, SPECULATIVE_METHODS, n=1, cutoff=0.5)
            hint = f'did you mean "{nearest[0]}"' if nearest else 'use "eagle3" for P-EAGLE heads'
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "method" is "{method}", which vLLM does not accept; {hint}.'
        )
    method = method if isinstance(method, str) else None

    tokens = config.get("num_speculative_tokens")
    valid_tokens = (
        tokens if type_problem("num_speculative_tokens", tokens, "positive int") is None else None
    )
    if tokens is None and method != "suffix":
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR} has no "num_speculative_tokens" (K, the draft length); '
            "add it, e.g. 3 for EAGLE-3 or 7..11 for P-EAGLE."
        )
    parallel = config.get("parallel_drafting") is True
    if parallel and method in SPECULATIVE_METHODS and method not in PARALLEL_DRAFTING_METHODS:
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR}: "parallel_drafting" works only with the methods '
            f'{", ".join(sorted(PARALLEL_DRAFTING_METHODS))}, not "{method}"; remove it, or use '
            '"method": "eagle3" for a P-EAGLE head.'
        )
    return Speculation(
        method,
        valid_tokens,
        parallel,
        model,
        parallel_drafting_unset=config.get("parallel_drafting") in (None, False),
        model_given=config.get("model") is not None,
    )
