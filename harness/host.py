"""The host backend: `entrypoint.sh serve` run on this machine as SageMaker would run it in
the image, a process group of its own (the front, and vLLM under it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Self

from harness.demo_engine import DEMO_ENGINE
from harness.locations import ENTRYPOINT, REPO_ROOT, SITE_DIR
from harness.serving_container import STOP_TIMEOUT_SECONDS, Container

if TYPE_CHECKING:
    import psutil

# Container settings of the calling shell must not leak into a configuration under test.
# The test switches harness/site applies in every process of a container that sets one.
SWITCHES = ("HARNESS_CPU_ISA", "SERVING_TEST_CPU_ASYNC_SCHEDULING")
CONTAINER_PREFIXES = ("SM_", "SAGEMAKER_", "SERVING_", "OPT_ML_ROOT", "HF_MODEL_ID")
# The toy pairs are float32; the CPU build would cast them to bfloat16, which CPUs without
# bf16 instructions emulate slowly. The Makefile's DEMO_ENV and the compose file say the same.
DEMO_DTYPE = "float32"


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX); not under the
    suite's AVX2 limit (HARNESS_CPU_ISA, harness/site/limited_isa.py), which takes those away."""
    if os.environ.get("HARNESS_CPU_ISA", "").lower().startswith("avx2"):
        return False
    flags = ""
    with contextlib.suppress(OSError):
        flags = Path("/proc/cpuinfo").read_text()
    return bool({"avx512_bf16", "amx_bf16"} & set(flags.split()))


def served_dtype(opt_ml_root: Path) -> str:
    """The dtype a tree's target is served in here: the one it is stored in (the toys'
    float32, the real pair's bfloat16), but float32 for bfloat16 on a CPU that would emulate
    it. The Makefile's SERVED_DTYPE says the same."""
    try:
        config = json.loads((opt_ml_root / "model" / "config.json").read_text())
    except (OSError, ValueError):
        return DEMO_DTYPE
    stored = config.get("dtype") or config.get("torch_dtype") or DEMO_DTYPE
    return "bfloat16" if stored == "bfloat16" and native_bf16() else DEMO_DTYPE


def host_environment(enforce_eager: bool = True, **settings: str) -> dict[str, str]:
    """This shell's environment without its container settings, the demo's defaults, then
    `settings` (e.g. OPT_ML_ROOT, SM_VLLM_SPECULATIVE_CONFIG); with a test switch on, the
    folder that applies it (harness/site) on PYTHONPATH."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(CONTAINER_PREFIXES)
    }
    root = settings.get("OPT_ML_ROOT")
    env.update(
        PYTHON=sys.executable,
        **DEMO_ENGINE,
        SM_VLLM_DTYPE=served_dtype(Path(root)) if root else DEMO_DTYPE,
    )
    if enforce_eager:
        # Skips torch.compile: a cold start takes ~40 s instead of ~100 s on two cores.
        env["SM_VLLM_ENFORCE_EAGER"] = "true"
    env.update(settings)
    if any(env.get(variable) for variable in SWITCHES) and str(SITE_DIR) not in (
        env.get("PYTHONPATH", "").split(os.pathsep)
    ):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE_DIR), env.get("PYTHONPATH")]))
    return env


class HostContainer(Container):
    """`entrypoint.sh serve` on this machine, as SageMaker would run it in the image: a process
    group of its own (the front, and vLLM under it), output to `log_path`."""

    process: subprocess.Popen | None = None  # set by start()

    def command(self) -> list[str]:
        return [str(ENTRYPOINT), "serve"]

    def environment(self) -> dict[str, str]:
        """What the process gets: `env`, and the port SageMaker would bind it to."""
        return {**self.env, "SAGEMAKER_BIND_TO_PORT": str(self.port)}

    def start(self) -> Self:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started_at = time.monotonic()
        with self.log_path.open("wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                self.command(),
                env=self.environment(),
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def exit_code(self) -> int | None:
        if self.process is None:
            raise RuntimeError(f"container {self.name} was not started; call start() first.")
        return self.process.poll()

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is not None:
            # A front that died without its engine (SIGKILL) leaves it in the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def find_engine_process(self) -> psutil.Process | None:
        """The vLLM server: the front's child running vLLM (its other children parse bodies),
        or None before the front has started it."""
        import psutil

        for child in psutil.Process(self.process.pid).children():
            with contextlib.suppress(psutil.Error):
                if "vllm" in " ".join(child.cmdline()):
                    return child
        return None

    def engine_process(self) -> psutil.Process:
        engine = self.find_engine_process()
        if engine is None:
            raise RuntimeError(f"{self.name}: the front has no vLLM child")
        return engine

    def kill_engine(self, sig: int = signal.SIGKILL, workers: bool = False) -> None:
        self.engine_killer(sig, workers)()

    def engine_killer(self, sig: int, workers: bool = False) -> Callable[[], None]:
        # psutil's walk of /proc took 1.8-5.8 s on a loaded machine (2026-12-07): done now.
        engine = self.engine_process()
        pids = [p.pid for p in (engine.children(recursive=True) if workers else [engine])]

        def kill() -> None:
            for pid in pids:
                os.kill(pid, sig)

        return kill
