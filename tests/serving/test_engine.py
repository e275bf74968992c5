"""The engine child: its command line, where it listens, and what its log shows."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import stat
from pathlib import Path

import httpx
import psutil

from serving.engine import Engine, engine_environment
from serving.engine_args.argv import build_argv
from serving.engine_args.cpu_block_size import cpu_block_size_flags
from serving.settings import load_settings

SOCKET = Path("/run/engine.sock")


def settings_for(tmp_path: Path, **env: str):
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "config.json").write_text("{}")
    return load_settings({"OPT_ML_ROOT": str(tmp_path), **env})


def test_engine_is_reachable_only_through_its_private_socket(peagle):
    socket_path = peagle.engine_socket()
    directory = socket_path.parent.stat()
    assert stat.S_IMODE(directory.st_mode) == 0o700
    assert directory.st_uid == os.getuid()
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path))) as http:
        assert http.get("http://engine/health").status_code == 200
    # No TCP port of vLLM's process tree serves its HTTP API, and none faces the network.
    engine = peagle.engine_process()
    engine_tree = {engine.pid} | {child.pid for child in engine.children(recursive=True)}
    listening = [
        c
        for c in psutil.net_connections("inet")
        if c.status == psutil.CONN_LISTEN and c.pid in engine_tree
    ]
    for sock in listening:
        assert ipaddress.ip_address(sock.laddr.ip).is_loopback, sock
    # Probed all at once: the engine's other ports (ZeroMQ, torch's store) take a request and
    # never answer it, so each costs the whole timeout.
    statuses = asyncio.run(health_statuses(sorted({sock.laddr.port for sock in listening})))
    for port, status in statuses.items():
        assert status != 200, f"vLLM's API answers on TCP port {port}"


async def health_statuses(ports: list[int]) -> dict[int, int | None]:
    """Each port's answer to GET /health, or None when it gives no HTTP answer in 2 s."""

    async def status(http: httpx.AsyncClient, port: int) -> int | None:
        try:
            return (await http.get(f"http://127.0.0.1:{port}/health")).status_code
        except httpx.HTTPError:
            return None

    async with httpx.AsyncClient(timeout=2) as http:
        answers = await asyncio.gather(*(status(http, port) for port in ports))
    return dict(zip(ports, answers, strict=True))


def test_the_engine_session_yields_the_cpu_to_the_front(peagle):
    # The engine runs in a session of its own. With the kernel's autogroup on, a session is
    # scheduled as one group, so the processes' nice value alone would not weigh against the
    # front's session: the group is niced too (a thread of another session waited 5.8 s to
    # run while vLLM generated on two cores, 5 ms with it).
    engine = peagle.engine_process()
    session = [engine, *engine.children(recursive=True)]
    assert len(session) > 1, "vLLM's engine core and worker are its children"
    assert {process.nice() for process in session} == {10}
    if Path("/proc/self/autogroup").exists():
        groups = {Path(f"/proc/{process.pid}/autogroup").read_text() for process in session}
        assert len(groups) == 1 and groups.pop().split()[-1] == "10", groups


def test_engine_gets_the_socket_and_no_tcp_address(tmp_path: Path):
    argv = build_argv(settings_for(tmp_path), SOCKET)
    assert argv[argv.index("--uds") + 1] == str(SOCKET)
    assert "--host" not in argv and "--port" not in argv


def test_trust_remote_code_only_when_asked(tmp_path: Path):
    assert "--trust-remote-code" not in build_argv(settings_for(tmp_path), SOCKET)
    asked = build_argv(settings_for(tmp_path, SM_VLLM_TRUST_REMOTE_CODE="true"), SOCKET)
    assert "--trust-remote-code" in asked


def test_user_flags_come_last_so_they_win(tmp_path: Path):
    argv = build_argv(settings_for(tmp_path, SM_VLLM_MAX_MODEL_LEN="1024", SM_NUM_GPUS="2"), SOCKET)
    assert argv[-2:] == ["--max-model-len", "1024"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"


def test_the_logged_command_line_hides_secrets(tmp_path: Path, caplog):
    settings = settings_for(
        tmp_path, SM_VLLM_API_KEY="sk-live-123", SM_VLLM_HF_TOKEN="hf_secret_456"
    )
    argv = build_argv(settings, SOCKET, python="/bin/true")
    assert "sk-live-123" in argv

    async def start() -> None:
        engine = Engine(argv)
        await engine.start()
        await engine.wait_exit()

    with caplog.at_level(logging.INFO, logger="serving.engine"):
        asyncio.run(start())
    assert "starting engine" in caplog.text
    assert "sk-live-123" not in caplog.text and "hf_secret_456" not in caplog.text
    assert "--api-key ***" in caplog.text


def test_local_models_run_offline_and_without_telemetry(tmp_path: Path):
    drafter = tmp_path / "additional-model-data-sources" / "eagle"
    drafter.mkdir(parents=True)
    config = '{"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": true}'
    settings = settings_for(tmp_path, SM_VLLM_SPECULATIVE_CONFIG=config)
    env = engine_environment(settings, {"PATH": "/usr/bin"})
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["VLLM_NO_USAGE_STATS"] == "1"
    assert env["VLLM_SKIP_MODEL_NAME_VALIDATION"] == "1"  # any `model` (test_openai_path.py)
    assert env["PATH"] == "/usr/bin"


def test_a_hub_model_may_reach_the_hub_and_the_users_choice_wins(tmp_path: Path):
    settings = load_settings({"OPT_ML_ROOT": str(tmp_path / "empty"), "HF_MODEL_ID": "org/m"})
    env = engine_environment(
        settings, {"VLLM_NO_USAGE_STATS": "0", "VLLM_SKIP_MODEL_NAME_VALIDATION": "0"}
    )
    assert "HF_HUB_OFFLINE" not in env
    assert env["VLLM_NO_USAGE_STATS"] == "0"
    assert env["VLLM_SKIP_MODEL_NAME_VALIDATION"] == "0"


def test_the_cpu_build_gets_small_kv_blocks_unless_the_user_chose(tmp_path: Path):
    # This machine runs the CPU build: EAGLE drops a block from each prefix hit, so 128-token
    # blocks would lose a short prompt's whole cache (serving/engine_args/cpu_block_size.py).
    argv = build_argv(settings_for(tmp_path), SOCKET)
    assert argv[argv.index("--block-size") + 1] == "32"
    chosen = build_argv(settings_for(tmp_path, SM_VLLM_BLOCK_SIZE="64"), SOCKET)
    assert chosen.count("--block-size") == 1
    assert chosen[chosen.index("--block-size") + 1] == "64"
    assert cpu_block_size_flags((), cpu_build=False) == []
