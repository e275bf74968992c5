"""The vLLM OpenAI server as a child process on a private Unix socket: start, health, stop.

Its command line is serving/engine_args/'s (build_argv); this module runs it.

A Unix socket in a directory only this user can enter: no port to race for at start, and
nothing else on the host or in a multi-container pipeline can reach the unauthenticated
engine, which only the front should talk to.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from serving.engine_client import ENGINE_KEEP_ALIVE_SECONDS, ENGINE_KEEP_ALIVE_VAR, EngineClient
from serving.secrets import redact_argv
from serving.settings import Settings

log = logging.getLogger("serving.engine")

HEALTH_POLL_SECONDS = 0.5
GROUP_GONE_SECONDS = 10.0
SOCKET_NAME = "engine.sock"
AUTOGROUP_ATTEMPTS = 50
AUTOGROUP_RETRY_SECONDS = 0.1
# With every model on local disk, nothing needs a hub, and SageMaker endpoints often run
# without a network: these keep huggingface_hub and transformers from trying, and vLLM from
# sending usage statistics. A value the user set wins.
OFFLINE_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
NO_TELEMETRY_ENVIRONMENT = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
# SageMaker's OpenAI path forwards `model` as the client wrote it (absent, "", the endpoint's
# name, a framework's made-up name): vLLM answers any of them with the one served model, and
# a loaded adapter's name still selects it (serving/served_models.py). Set to 0 for vLLM's
# 404 on any other name.
ANY_MODEL_NAME_ENVIRONMENT = {"VLLM_SKIP_MODEL_NAME_VALIDATION": "1"}


class EngineExited(RuntimeError):
    """The vLLM process ended."""


def private_socket_path() -> Path:
    """A fresh socket path in a new directory only this user may enter (mode 0700)."""
    return Path(tempfile.mkdtemp(prefix="serving-engine-")) / SOCKET_NAME


def models_are_local(settings: Settings) -> bool:
    """The target, and the drafter when there is one, are directories on this disk."""
    drafter = (settings.speculative_config or {}).get("model")
    paths = [settings.model] + ([drafter] if isinstance(drafter, str) else [])
    return all(Path(path).is_dir() for path in paths)


def engine_environment(settings: Settings, environ: Mapping[str, str]) -> dict[str, str]:
    """The engine's environment: ours, with no hub or telemetry traffic where none is needed."""
    defaults = {
        **NO_TELEMETRY_ENVIRONMENT,
        **ANY_MODEL_NAME_ENVIRONMENT,
        ENGINE_KEEP_ALIVE_VAR: str(ENGINE_KEEP_ALIVE_SECONDS),
    }
    if models_are_local(settings):
        defaults.update(OFFLINE_ENVIRONMENT)
    return {**defaults, **environ}


async def lower_priority(pid: int, niceness: int) -> None:
    """Run the engine session at `niceness`, so a busy engine cannot starve the front, whose
    /ping must answer SageMaker within 2 s.

    Before vLLM forks its workers (they inherit both). The process's own nice value only
    weighs against its session: with the kernel's autogroup on (most distributions' default),
    each session is scheduled as one group of equal weight, so the engine's session takes a
    CPU from the front's whatever its nice value. Measured on a 2-core host: a thread of
    another session waited 5.8 s to run while vLLM generated, 5 ms with the group niced too.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, pid, niceness)
    except ProcessLookupError:
        return  # it already exited: the supervisor's wait reports how
    # Without CAP_SYS_ADMIN (as in a container), the kernel takes one autogroup change per
    # 100 ms across the whole machine and refuses the rest with EAGAIN: engines started
    # together (several containers on one host) must wait their turn.
    for _ in range(AUTOGROUP_ATTEMPTS):
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(niceness))
            return
        except BlockingIOError:
            await asyncio.sleep(AUTOGROUP_RETRY_SECONDS)
        except OSError:
            return  # no autogroup in this kernel (or it is off): the nice value alone counts
    log.warning("the kernel kept refusing to lower the engine session's autogroup priority")


class Engine:
    """One vLLM server process. Its stdout and stderr are the container's."""

    def __init__(
        self,
        argv: list[str],
        niceness: int = 0,
        env: Mapping[str, str] | None = None,
        socket_path: Path | None = None,
    ):
        self.argv = argv
        self.niceness = niceness
        # vLLM binds its socket without removing an old one: a restart must, first.
        self.socket_path = socket_path
        self.env = dict(env) if env is not None else None
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process else None

    async def start(self) -> None:
        """Spawn vLLM; raises OSError when it cannot be spawned at all."""
        log.info("starting engine: %s", " ".join(redact_argv(self.argv)))
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
        # Its own session, so stop() can end vLLM's worker processes with it.
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, env=self.env, start_new_session=True
        )
        if self.niceness:
            await lower_priority(self.process.pid, self.niceness)

    async def wait_ready(self, client: EngineClient) -> None:
        """Return once /health answers 200; raise EngineExited if the process ends first."""
        assert self.process is not None
        while True:
            if self.process.returncode is not None:
                raise EngineExited(f"engine exited with code {self.process.returncode}")
            answer = await client.get("/health", timeout=2.0)
            if answer is not None and answer[0] == 200:
                return
            await asyncio.sleep(HEALTH_POLL_SECONDS)

    async def wait_exit(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def wait_group_gone(self, timeout: float = GROUP_GONE_SECONDS) -> None:
        """Until no process of the engine's group is left (its workers hold the GPU's memory)."""
        if self.process is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            await asyncio.sleep(0.1)
        log.warning("engine processes still present %.0f s after SIGKILL", timeout)

    def kill_group(self, sig: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM the engine and its workers; SIGKILL whatever is left after `timeout`."""
        if self.process is None:
            return
        self.kill_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            log.warning("engine did not stop within %.0f s; killing it", timeout)
        # Workers may outlive the server process; the group goes in any case.
        self.kill_group(signal.SIGKILL)
        await self.process.wait()
