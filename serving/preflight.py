"""Preflight: check the speculative config and the drafter head against the target.

Runs before vLLM starts and reads only the environment-derived Settings, config.json
files and safetensors headers. (Placeholder: the full checker is issue 3.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serving.settings import Settings


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # One line stating the effective speculation, logged on every start.
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors


def check(settings: Settings) -> Report:
    spec = settings.speculative_config
    if spec is None:
        return Report(summary="speculation: off (SM_VLLM_SPECULATIVE_CONFIG is not set)")
    return Report(
        summary=(
            f"speculation: method={spec.get('method')} "
            f"p-eagle={'on' if spec.get('parallel_drafting') else 'off'} "
            f"K={spec.get('num_speculative_tokens')} drafter={spec.get('model')}"
        )
    )
