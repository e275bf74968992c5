"""The benchmark's configurations on this machine: the default for a head, the demo engine's
settings, `LocalContainer`, the host container that serves one configuration (the
vocabulary is harness.configurations') on a demo tree, and `up_together`, several of them
started at once."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness.configurations import (
    DEMO_SCHEDULE,
    FIXED_DEFAULT,
    Configuration,
    parse_configuration,
)
from harness.cores import next_core
from harness.demo_engine import DEMO_ENGINE
from harness.host import HostContainer, host_environment, served_dtype
from harness.locations import default_opt_ml_root


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


@contextlib.contextmanager
def up_together(containers: Mapping[str, LocalContainer]) -> Iterator[Mapping[str, LocalContainer]]:
    """Every container started at once, each engine on a core of its own where the machine has
    enough (harness.cores; vLLM's own `auto` binds them all to one, where on 2 cores one
    engine's request waited over a minute for the CPU), and ready; all stopped on the way out,
    each even when stopping another fails."""
    with contextlib.ExitStack() as stopping:
        for container in containers.values():
            container.env = next_core(container.env)
            stopping.callback(container.stop)
            container.start()
        for name, container in containers.items():
            print(f"[{name}] ready after {container.wait_ready():.0f} s", flush=True)
        yield containers
