"""The benchmark's configurations: a speculation setting (none, EAGLE-3 or P-EAGLE, K, the
drafter), and `LocalContainer`, the host container that serves one on a demo tree."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.host import DEMO_DTYPE, HostContainer, host_environment
from harness.paths import default_opt_ml_root


@dataclass(frozen=True)
class Configuration:
    """One speculation setting: method none, eagle3 (sequential) or peagle, K and the drafter."""

    method: str
    k: int | None = None
    drafter: Path | None = None

    @property
    def name(self) -> str:
        return "none" if self.method == "none" else f"{self.method}-k{self.k}"

    def speculative_config(self) -> dict[str, Any] | None:
        if self.method == "none":
            return None
        config: dict[str, Any] = {"method": "eagle3", "num_speculative_tokens": self.k}
        if self.drafter is not None:
            config["model"] = str(self.drafter)
        if self.method == "peagle":
            config["parallel_drafting"] = True
        return config

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "k": self.k,
            "drafter": str(self.drafter) if self.drafter else None,
            "speculative_config": self.speculative_config(),
        }


def parse_configuration(text: str, drafter: Path | None) -> Configuration:
    """`none`, `eagle3:3` or `peagle:7` (method:K)."""
    method, _, k = text.strip().partition(":")
    if method == "none" and not k:
        return Configuration("none")
    if method not in ("eagle3", "peagle") or not k.isdigit() or int(k) < 1:
        raise SystemExit(
            f"configuration {text!r} is not understood; use none, eagle3:K or peagle:K (K >= 1)."
        )
    return Configuration(method, int(k), drafter)


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
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            "SM_VLLM_MAX_MODEL_LEN": os.environ.get("SM_VLLM_MAX_MODEL_LEN", "2048"),
            "SM_VLLM_DTYPE": os.environ.get("SM_VLLM_DTYPE", DEMO_DTYPE),
        }
        speculative = configuration.speculative_config()
        if speculative is not None:
            settings["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(speculative)
        env = host_environment(enforce_eager, **{**settings, **(extra_env or {})})
        super().__init__(configuration.name, env, port, log_path)
