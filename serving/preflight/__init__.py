"""Preflight: check the speculative config and the drafter against the target, before vLLM.

Runs before vLLM starts and reads only the Settings, config.json files and safetensors
headers: no vLLM or torch import, no tensor data. Every problem found is collected, so a
user fixes a broken set-up in one pass. Each check applies only where vLLM needs it: the
method decides whether there is a drafter, and only "eagle3" heads get the EAGLE-3 and
P-EAGLE checks.

Data flows one way through the modules: vllm_facts -> speculative_config -> target ->
drafter (finding and reading the head) -> heads (with aux_layers and p_eagle) ->
batch_schedule (K per batch size, against the head's depth). vllm_release holds the engine
this container starts to the release it maintains P-EAGLE on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from serving.engine_args.flags import shortcut_flags
from serving.preflight.batch_schedule import check_batch_schedule
from serving.preflight.cpu_build import check_cpu_preload
from serving.preflight.cuda_driver import check_cuda_driver
from serving.preflight.drafter import load_head, local_drafter_dir, read_head_config
from serving.preflight.gpu_presence import check_gpu_present
from serving.preflight.head_checks import check_head, check_not_an_eagle3_head
from serving.preflight.shared_memory import check_shared_memory
from serving.preflight.speculative_config import Speculation, check_speculative_config
from serving.preflight.target_config import check_target_architecture, load_target
from serving.preflight.vllm_facts import MODEL_FREE_METHODS, SPECULATIVE_METHODS
from serving.preflight.vllm_release import installed, start_problems
from serving.variables import SPECULATIVE_CONFIG_VAR

if TYPE_CHECKING:  # only for annotations: the checks need no pydantic
    from serving.settings import Settings

__all__ = ["Report", "check", "check_speculation"]


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # One line stating the effective speculation, logged on every start.
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors


def check_speculation(
    settings: Settings, config: dict, errors: list[str], warnings: list[str]
) -> Speculation:
    """The speculative config, the target and the drafter against each other: the part of
    the checks that describes the model pair, not the machine (the deploy command runs it on
    a laptop's copies before upload)."""
    speculation = check_speculative_config(config, errors)
    target = load_target(settings, errors, warnings)
    if target is not None:
        check_target_architecture(target, speculation.method, settings.engine_flags, errors)
    head_dir = local_drafter_dir(speculation, settings, errors, warnings)
    trained_positions = None
    if head_dir is not None and speculation.method == "eagle3":
        head, tensors = load_head(head_dir, errors)
        if head is not None:
            check_head(head, tensors, target, speculation, errors, warnings)
            trained_positions = head.trained_positions
    elif head_dir is not None and speculation.method in SPECULATIVE_METHODS:
        # Other methods' drafters are vLLM's to check, so problems reading one as an EAGLE
        # head are dropped; only an EAGLE-3 head is surely wrong for them.
        head = read_head_config(head_dir, errors=[])
        check_not_an_eagle3_head(head, speculation.method, errors)
    speculation.batch_schedule = check_batch_schedule(
        config, settings.engine_flags, trained_positions, errors
    )
    return speculation


def check(
    settings: Settings, environ: Mapping[str, str] | None = None, serving: bool = True
) -> Report:
    """Every problem with the machine and the speculation set-up, before any weights load.
    `serving` False (the `check` command) makes a missing GPU a warning, not an error."""
    env = os.environ if environ is None else environ
    report = Report()
    check_cuda_driver(env, report.errors)
    check_gpu_present(env, serving, report.errors, report.warnings)
    check_shared_memory(settings, env, report.errors)
    config = settings.speculative_config
    shortcuts = shortcut_flags(settings.engine_flags)
    if config is None:
        if shortcuts:
            report.summary = (
                "speculation: set by "
                + ", ".join(variable for variable, _ in shortcuts)
                + f" (not checked; use {SPECULATIVE_CONFIG_VAR} to have it checked)"
            )
        else:
            report.summary = f"speculation: off ({SPECULATIVE_CONFIG_VAR} is not set)"
        return report
    errors, warnings = report.errors, report.warnings
    for variable, value in shortcuts:
        errors.append(
            f"{variable}={value} is set together with {SPECULATIVE_CONFIG_VAR}; vLLM rejects "
            f"its flag next to --speculative-config. Remove {variable} and put the setting "
            f"in {SPECULATIVE_CONFIG_VAR}."
        )
    speculation = check_speculation(settings, config, errors, warnings)
    # The engine this container starts, not a laptop's: deploy's check_speculation skips it.
    start_problems(installed(), speculation.parallel_drafting, errors, warnings)
    if speculation.method not in MODEL_FREE_METHODS:
        check_cpu_preload(env, warnings)
    report.summary = speculation.summary()
    return report
