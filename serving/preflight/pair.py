"""The container's own preflight on a target and a head in local folders, outside a container.

The container checks the head against the target and K before vLLM loads. deploy runs the same
checks on the laptop's copies, which finds a mismatch before the upload and the endpoint's
half hour of start-up. The trainer runs them on the head it has just written. Only the
speculation checks run: the host checks (shared memory, the CPU build's preload) describe this
machine, not the endpoint's. serving.settings needs pydantic, so it is imported only when
there is a pair to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def speculation_problems(
    target_dir: Path, head_dir: Path, speculative_config: dict, environment: Mapping[str, str]
) -> list[str]:
    """serving.preflight.check_speculation on local directories; the errors only."""
    from serving.engine_args.environment import vllm_flags_from_env
    from serving.preflight import check_speculation
    from serving.settings import Settings

    errors: list[str] = []
    warnings: list[str] = []  # advice for the container's log; not a reason to stop here
    config = {**speculative_config, "model": str(head_dir)}
    # Problems with the values themselves are deploy.inputs' to report.
    engine_flags = tuple(vllm_flags_from_env(environment, []))
    settings = Settings(
        opt_ml_root=target_dir.parent,
        model=str(target_dir),
        served_model_name=str(target_dir),
        drafter_dir=head_dir,
        speculative_config=config,
        engine_flags=engine_flags,
    )
    check_speculation(settings, config, errors, warnings)
    return errors
