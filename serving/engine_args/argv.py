"""The engine's command line, whole: our fixed flags, the speculative config, the user's flags."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from serving.engine_args.cpu_block_size import cpu_block_size_flags

if TYPE_CHECKING:  # the settings are built from this package's translation, not the reverse
    from serving.settings import Settings

VLLM_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# The chat template the container writes for agents (engine_args/agents.py), beside the
# engine's private socket.
CHAT_TEMPLATE_FILE = "chat_template.jinja"


def chat_template_path(socket_path: Path) -> Path:
    return socket_path.parent / CHAT_TEMPLATE_FILE


def write_engine_files(settings: Settings, socket_path: Path) -> None:
    """What the command line names and the container writes: the agents' chat template."""
    if settings.agent_chat_template is not None:
        chat_template_path(socket_path).write_text(settings.agent_chat_template)


def build_argv(settings: Settings, socket_path: Path, python: str = sys.executable) -> list[str]:
    """The engine's command line: our fixed flags first, the user's SM_VLLM_* flags last so
    they win where argparse takes the last value."""
    argv = [
        python,
        "-m",
        VLLM_SERVER_MODULE,
        "--model",
        settings.model,
        "--uds",
        str(socket_path),
        # The front writes one access line per request; vLLM's would double them.
        "--disable-uvicorn-access-log",
        # The request id (SageMaker's inference id) comes back as a response header.
        "--enable-request-id-headers",
    ]
    if settings.speculative_config is not None:
        argv += ["--speculative-config", json.dumps(settings.speculative_config)]
        # Each answer carries its own acceptance (metrics.speculative_decoding; a stream in
        # its final usage chunk, when the client asks for one): the front turns it into
        # headers and log fields.
        argv += ["--per-request-spec-decode-metrics", "summary"]
    # Tool-call parsing and structured outputs for agents (engine_args/agents.py).
    argv += settings.agent_flags
    if settings.agent_chat_template is not None:
        argv += ["--chat-template", str(chat_template_path(socket_path))]
    # The CPU build's KV cache blocks, sized so EAGLE heads keep the prefix cache.
    argv += cpu_block_size_flags(settings.engine_flags)
    if settings.tensor_parallel_size is not None:
        argv += ["--tensor-parallel-size", str(settings.tensor_parallel_size)]
    return argv + list(settings.engine_flags)
